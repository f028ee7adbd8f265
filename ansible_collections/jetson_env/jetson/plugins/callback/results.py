# ruff: noqa: E402
"""Ansible notification callback: per-host stats, failed tasks and what each role changed
as one JSON file.

`jetson-env doctor --fix` and `jetson-env provision` enable it beside the user's own
callbacks and read the file, so whatever stdout callback the user set, the counts and the
summary they report are Ansible's own results.
"""

DOCUMENTATION = r"""
name: results
type: notification
short_description: Per-host stats and failures as JSON, for jetson-env doctor --fix
description:
  - At the end of the run writes one JSON object to the file named by the environment
    variable C(JETSON_ENV_RESULTS_FILE) (nothing without it), with C(hosts) (per host
    Ansible's stats, C(ok), C(changed), C(failures), C(unreachable), C(skipped), C(rescued),
    C(ignored)) and C(failed) (per failed task C(host), C(task), C(role), C(msg)).
requirements:
  - enable in callbacks_enabled
"""

import json
import os

from ansible.plugins.callback import CallbackBase

VALIDATION = ("validate_argument_spec", "ansible.builtin.validate_argument_spec")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "jetson_env.jetson.results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.failed = []
        self.roles = {}

    def v2_runner_on_ok(self, result):
        if result._task.action in VALIDATION:  # every role's, whatever --tags selects
            return
        tally = self._tally(result)
        tally["ok"] += 1
        if result._result.get("changed"):
            tally["changed"].append(_task_name(result._task))

    def v2_runner_on_skipped(self, result):
        self._tally(result)["skipped"] += 1

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            return
        self._tally(result)["failed"].append(_task_name(result._task))
        self._failure(result)

    def v2_runner_on_unreachable(self, result):
        self._failure(result)

    def _tally(self, result):
        roles = self.roles.setdefault(result._host.get_name(), {})
        return roles.setdefault(
            _outer_role(result._task), {"ok": 0, "skipped": 0, "changed": [], "failed": []}
        )

    def _failure(self, result):
        role = getattr(result._task, "_role", None)
        self.failed.append({
            "host": result._host.get_name(),
            "task": result._task.get_name(),
            "role": role.get_name(include_role_fqcn=False) if role else None,
            "msg": _message(result._result)[:2000],
        })  # fmt: skip

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("JETSON_ENV_RESULTS_FILE")
        if not path:
            return
        hosts = {host: stats.summarize(host) for host in sorted(stats.processed)}
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"hosts": hosts, "failed": self.failed, "roles": self.roles}, handle)


def _outer_role(task):
    """The outermost role of the task (the play's role, not one it includes), "" for none."""
    role = None
    while task is not None:
        role = getattr(task, "_role", None) or role
        task = getattr(task, "_parent", None)
    return role.get_name(include_role_fqcn=False) if role else ""


def _task_name(task):
    """The task's name as Ansible shows it, less the role's name where it is the role it is
    counted for ("pip_packages : Install ..." stays so under python_base)."""
    name = task.get_name(include_role_fqcn=False)
    role, _, rest = name.partition(" : ")
    return rest if rest and role == _outer_role(task) else name


def _message(result):
    """The task's message; a loop's items' messages in place of its "One or more items
    failed" (ansible-core 2.21 leaves `failed` out of a failed item of validate_argument_spec;
    its `exception` is there)."""
    items = [str(item["msg"]) for item in result.get("results") or ()
             if isinstance(item, dict) and item.get("msg")
             and (item.get("failed") or "exception" in item)]  # fmt: skip
    return " | ".join(items) or str(result.get("msg", ""))
