"""Ansible action: jetson-env's probe launcher in the host's Python, one command per host.

A module would cost every host an AnsiballZ start (Ansible's module_utils imported
there, a Python process of its own) before any probe runs: on a fleet that, not the
probes, was most of the wall time. This action instead runs the command the doctor
gives in its payload file (targets.launch_command: the launcher under `python -c
BOOTSTRAP`, as `doctor --host` runs it) through the host's connection, with the rest of
the payload on stdin: become, the connection's settings and the task's timeout apply as
to any task, and the interpreter is the one Ansible would give a module there
(ansible_python_interpreter, interpreter_python, discovery). Returns rc, stdout and
stderr; the doctor reads them (an interpreter that does not run is its finding too).
"""

import json
import shlex

from ansible.errors import AnsibleActionFail
from ansible.executor.interpreter_discovery import (
    InterpreterDiscoveryRequiredError,
    discover_interpreter,
)
from ansible.executor.module_common import _get_shebang
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("payload",))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        python, facts = self._interpreter(task_vars or {})
        try:
            with open(self._task.args["payload"], "rb") as handle:
                header = json.loads(handle.readline())
                stdin = handle.read()
        except (KeyError, OSError, ValueError) as exc:
            raise AnsibleActionFail(f"jetson_env_probe: no payload file to read ({exc})") from exc
        command = header["command"].replace(header["placeholder"], shlex.quote(python))
        done = self._low_level_execute_command(command, in_data=stdin)
        # The doctor judges the run (the launcher's records, EXIT_RECORD), not the shell's rc.
        result.update(changed=False, failed=False, python=python, shell_rc=done["rc"],
                      stdout=done["stdout"], stderr=done["stderr"])  # fmt: skip
        if facts:
            result["ansible_facts"] = facts
        return result

    def _interpreter(self, task_vars):
        """The Python Ansible would run a module with on this host, and the discovery fact."""
        remote_is_local = bool(getattr(self._connection, "_remote_is_local", False))
        try:
            _shebang, python = _get_shebang(
                "/usr/bin/python", task_vars, self._templar, remote_is_local=remote_is_local
            )
            return python, {}
        except InterpreterDiscoveryRequiredError as needed:
            python = discover_interpreter(
                action=self,
                interpreter_name=needed.interpreter_name,
                discovery_mode=needed.discovery_mode,
                task_vars=task_vars,
            )
            return python, {f"discovered_interpreter_{needed.interpreter_name}": python}
