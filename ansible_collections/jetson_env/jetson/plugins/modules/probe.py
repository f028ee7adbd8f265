#!/usr/bin/python
"""Documentation of the action plugin jetson_env.jetson.probe (plugins/action/probe.py),
which does its work on the controller's side: there is no module code to run."""

DOCUMENTATION = r"""
module: probe
short_description: Run jetson-env's probe runner in the host's Python (jetson-env doctor -i)
description:
  - Runs C(python -c BOOT) through the host's connection with a payload on stdin, the
    jetson-env probe runner and its jobs, as C(jetson-env doctor --inventory) prepares it.
    Nothing is written on the host; become, the connection's settings and the task's
    timeout apply as to any task.
  - The interpreter is the one Ansible would give a module on that host
    (C(ansible_python_interpreter), C(interpreter_python), discovery).
options:
  payload:
    description: A file on the controller holding the framed runner and its request.
    type: path
    required: true
author: jetson-env
"""

EXAMPLES = r"""
- name: Run the probe scripts
  jetson_env.jetson.probe:
    payload: /tmp/jetson-env-fleet-x/payload-0
"""

RETURN = r"""
python:
  description: The interpreter the runner ran in.
  returned: always
  type: str
stdout:
  description: The runner's output, one JSON document per line.
  returned: always
  type: str
"""
