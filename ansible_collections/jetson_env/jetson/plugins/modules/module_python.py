#!/usr/bin/python
"""Documentation of the action plugin jetson_env.jetson.module_python
(plugins/action/module_python.py), which does its work on the controller's side: there
is no module code to run."""

DOCUMENTATION = r"""
module: module_python
short_description: The Python that runs a host's modules, and its version, found without a module
description:
  - Finds the interpreter Ansible would run a module with on the host
    (C(ansible_python_interpreter), C(interpreter_python), discovery) and runs it once
    through the connection, like C(raw), to read its version. Nothing is changed.
  - The jetson_facts role's preflight uses it, so a JetPack 4 host whose modules would run
    in Python 3.6 is refused with the way out before the first module fails.
options: {}
author: jetson-env
"""

EXAMPLES = r"""
- name: Read the module interpreter's version
  jetson_env.jetson.module_python:
  register: module_python
"""

RETURN = r"""
python:
  description: The interpreter modules run with.
  returned: always
  type: str
version:
  description: Its major.minor version, empty when it did not run.
  returned: always
  type: str
"""
