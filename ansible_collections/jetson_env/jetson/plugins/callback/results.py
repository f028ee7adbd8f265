# ruff: noqa: E402
"""Ansible notification callback: per-host stats and failed tasks as one JSON file.

`jetson-env doctor --fix` enables it beside the user's own callbacks and reads the file,
so whatever stdout callback the user set, the counts it reports are Ansible's own.
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


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "jetson_env.jetson.results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.failed = []

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            return
        self._failure(result)

    def v2_runner_on_unreachable(self, result):
        self._failure(result)

    def _failure(self, result):
        role = getattr(result._task, "_role", None)
        self.failed.append({
            "host": result._host.get_name(),
            "task": result._task.get_name(),
            "role": role.get_name(include_role_fqcn=False) if role else None,
            "msg": str(result._result.get("msg", ""))[:2000],
        })  # fmt: skip

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("JETSON_ENV_RESULTS_FILE")
        if not path:
            return
        hosts = {host: stats.summarize(host) for host in sorted(stats.processed)}
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"hosts": hosts, "failed": self.failed}, handle)
