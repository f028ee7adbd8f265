"""Ansible action: a read-only command run through the connection, without a module.

ansible.builtin.command is a module: every run starts Python on the host and unpacks
Ansible's module_utils there (0.5-0.9 s on the x86 test host), several times the command
it runs (dpkg-query, a version read). The roles' read-only looks run here instead, like
C(raw) but from an argv quoted with shlex, so text from the playbook or the target never
reaches a shell unquoted. become and the task's timeout apply as to any task; a one-line
stdin keeps SSH from giving the command a terminal (stdout and stderr then stay apart).
Nothing changes on the host, so it runs in --check as it does otherwise.
"""

import shlex

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("argv", "chdir"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        argv = self._task.args.get("argv")
        if not isinstance(argv, list) or not argv:
            raise AnsibleActionFail("jetson_env.jetson.read_command: argv must be a non-empty list")
        command = shlex.join(str(part) for part in argv)
        chdir = self._task.args.get("chdir")
        if chdir:
            command = f"cd {shlex.quote(str(chdir))} && {command}"
        done = self._low_level_execute_command(command, in_data=b"\n")
        out, err = done["stdout"], done["stderr"]
        result.update(changed=False, failed=False, rc=done["rc"], cmd=list(argv),
                      stdout=out.rstrip("\n"), stderr=err.rstrip("\n"),
                      stdout_lines=out.splitlines(), stderr_lines=err.splitlines())  # fmt: skip
        return result
