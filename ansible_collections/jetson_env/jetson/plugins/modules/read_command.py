#!/usr/bin/python
"""Documentation of the action plugin jetson_env.jetson.read_command
(plugins/action/read_command.py), which does its work on the controller's side: there
is no module code to run."""

DOCUMENTATION = r"""
module: read_command
short_description: A read-only command run through the connection, without a module
description:
  - Runs I(argv), each word quoted with shlex, through the host's connection, like
    C(raw), without starting a Python module on the host for it (most of what a short
    command costs as C(ansible.builtin.command)). For looks that change nothing, so it
    reports C(changed=false) and runs in --check too.
  - A nonzero exit code is reported in C(rc), never as a failure; the task decides.
options:
  argv:
    description: The command and its arguments.
    type: list
    elements: str
    required: true
  chdir:
    description: The folder to run it in.
    type: str
author: jetson-env
"""

EXAMPLES = r"""
- name: Find which apt packages are installed
  jetson_env.jetson.read_command:
    argv: [dpkg-query, --show, python3-pip]
  register: dpkg
"""

RETURN = r"""
rc:
  description: The command's exit code.
  returned: always
  type: int
stdout:
  description: Its standard output.
  returned: always
  type: str
stderr:
  description: Its standard error.
  returned: always
  type: str
stdout_lines:
  description: stdout split into lines.
  returned: always
  type: list
stderr_lines:
  description: stderr split into lines.
  returned: always
  type: list
"""
