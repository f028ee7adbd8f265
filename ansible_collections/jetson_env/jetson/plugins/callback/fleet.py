# ruff: noqa: E402
"""Ansible stdout callback: one JSON document of every host's last task result.

`jetson-env doctor --inventory` reads it from ansible-playbook's stdout: per host, the
module's result (`ok`), a failure (`failed`: a task timeout, a broken interpreter) or
`unreachable` with Ansible's own message (host key failures included).
"""

DOCUMENTATION = r"""
name: fleet
type: stdout
short_description: Per-host results as one JSON document, for jetson-env doctor --inventory
description:
  - Prints one JSON object at the end of the run, C(hosts) keyed by inventory name.
"""

import json

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "jetson_env.jetson.fleet"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.hosts = {}

    def _keep(self, result, outcome):
        self.hosts[result._host.get_name()] = {"outcome": outcome, "result": result._result}

    def v2_runner_on_ok(self, result):
        self._keep(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._keep(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._keep(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        self._display.display(json.dumps({"hosts": self.hosts}, default=str))
