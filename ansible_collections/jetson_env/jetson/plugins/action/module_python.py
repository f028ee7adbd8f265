"""Ansible action: the Python Ansible runs modules with on a host and its version, found
without running a module (jetson_env.target_python.modules_interpreter, then one command
through the connection), so the preflight can refuse an interpreter this ansible-core
cannot drive before the first module fails on it."""

import shlex
import sys
from pathlib import Path

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

# <root>/ansible_collections/jetson_env/jetson/plugins/action/module_python.py: the
# jetson_env package is at <root> (the wheel's site-packages, or the checkout).
PACKAGE_ROOT = Path(__file__).resolve().parents[5]
if (PACKAGE_ROOT / "jetson_env").is_dir() and str(PACKAGE_ROOT) not in sys.path:
    sys.path.append(str(PACKAGE_ROOT))

VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset()

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        try:
            from jetson_env import target_python
        except ImportError as exc:
            raise AnsibleActionFail(
                f"the jetson_env.jetson collection needs the jetson-env Python package in the "
                f"controller's Python ({sys.executable}): {exc}"
            ) from None
        python, facts = target_python.modules_interpreter(self, task_vars or {})
        done = self._low_level_execute_command(shlex.join([python, "-c", VERSION]))
        version = done["stdout"].strip() if done["rc"] == 0 else ""
        # Not failed when it does not run: the first module then says why, as without this.
        result.update(changed=False, failed=False, python=python, version=version,
                      stderr=done["stderr"])  # fmt: skip
        if facts:
            result["ansible_facts"] = facts
        return result
