"""Ansible action: jetson-env's probe launcher in the host's Python, one command per host.

A module would cost every host an AnsiballZ start (Ansible's module_utils imported
there, a Python process of its own) before any probe runs: on a fleet that, not the
probes, was most of the wall time. This action instead runs the command the doctor
gives in its payload file (targets.launch_command: the launcher under `python -c
BOOTSTRAP`, as `doctor --host` runs it) through the host's connection, with the rest of
the payload on stdin: become, the connection's settings and the task's timeout apply as
to any task, and the interpreter is the host's target Python: its jetson_facts_python, else the one
Ansible would give a module there (ansible_python_interpreter, interpreter_python,
discovery): jetson_env.target_python's rule, the playbook's too. Returns rc, stdout and
stderr; the doctor reads them (an interpreter that does not run is its finding too).
"""

import json
import shlex
import sys
from pathlib import Path

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

# <root>/ansible_collections/jetson_env/jetson/plugins/action/probe.py: the jetson_env
# package is at <root> (the wheel's site-packages, or the checkout).
PACKAGE_ROOT = Path(__file__).resolve().parents[5]
if (PACKAGE_ROOT / "jetson_env").is_dir() and str(PACKAGE_ROOT) not in sys.path:
    sys.path.append(str(PACKAGE_ROOT))


MODULE_VERSION = "import platform; print(platform.python_version())"


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
        result.update(self._modules_interpreter(python, task_vars or {}))
        if facts:
            result["ansible_facts"] = facts
        return result

    def _modules_interpreter(self, probed, task_vars):
        """This ansible-core's version and the Python it runs modules with on the host, so
        the doctor can say where it cannot provision or fix (jetson_env.ansible_core). The
        version is asked only of a module Python other than the probed one (the probes
        report that one's)."""
        from ansible.release import __version__

        from jetson_env import target_python

        python, _facts = target_python.modules_interpreter(self, task_vars)
        version = ""
        if python != probed:
            done = self._low_level_execute_command(shlex.join([python, "-c", MODULE_VERSION]))
            version = done["stdout"].strip() if done["rc"] == 0 else ""
        return {"ansible_core": __version__, "module_python": python,
                "module_python_version": version}  # fmt: skip

    def _interpreter(self, task_vars):
        """The host's target Python (jetson_env.target_python.for_host: its
        jetson_facts_python, else the one Ansible runs modules with) and the discovery fact."""
        from jetson_env import target_python

        try:
            return target_python.for_host(self, task_vars)
        except target_python.NoPython as exc:
            raise AnsibleActionFail(f"{exc} ({exc.hint})") from None
