"""Ansible action: jetson-env's probe runner in the host's Python, one command per host.

A module would cost every host an AnsiballZ start (Ansible's module_utils imported
there, a Python process of its own) before any probe runs: on a fleet that, not the
probes, was most of the wall time. This action instead runs `python -c BOOT` through the
host's connection with the payload (jetson_env/ansible/probe_runner.py, framed, then its
request) on stdin: become, the connection's settings and the task's timeout apply as to
any task, and the interpreter is the one Ansible would give a module there
(ansible_python_interpreter, interpreter_python, discovery). Returns rc, stdout and
stderr; fails with the interpreter's last words when it does not run the payload.
"""

import shlex

from ansible.errors import AnsibleActionFail
from ansible.executor.interpreter_discovery import (
    InterpreterDiscoveryRequiredError,
    discover_interpreter,
)
from ansible.executor.module_common import _get_shebang
from ansible.plugins.action import ActionBase

# Python 2 must be able to parse it, to say that it is too old.
BOOT = """\
import sys
if sys.version_info < (3, 6):
    sys.exit("jetson-env's probes need Python 3.6 or newer; %s is %s"
             % (sys.executable, sys.version.split()[0]))
size = int(sys.stdin.buffer.readline())
exec(compile(sys.stdin.buffer.read(size), "probe_runner.py", "exec"), {"__name__": "__main__"})
"""


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("payload",))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        python, facts = self._interpreter(task_vars or {})
        try:
            with open(self._task.args["payload"], "rb") as handle:
                payload = handle.read()
        except (KeyError, OSError) as exc:
            raise AnsibleActionFail(f"jetson_env_probe: no payload file to read ({exc})") from exc
        done = self._low_level_execute_command(shlex.join([python, "-c", BOOT]), in_data=payload)
        result.update(changed=False, python=python, rc=done["rc"], stdout=done["stdout"],
                      stderr=done["stderr"])  # fmt: skip
        if facts:
            result["ansible_facts"] = facts
        if done["rc"] != 0:
            said = [line for line in done["stderr"].splitlines() if line.strip()]
            result["failed"] = True
            result["msg"] = f"{python} exited {done['rc']}: " + (said[-1] if said else "no output")
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
