# ruff: noqa: E402
"""Ansible notification callback: the collection's filters and the version matrix loaded once,
in ansible-playbook's main process.

Every task runs in a worker forked from that process, and a worker that templates one of the
collection's filters otherwise imports the filter plugin (jetson-env's modules) and reads the
matrix again: 0.1-0.2 s a task, most of a run that changes nothing. `jetson-env provision` and
`doctor --fix` enable it beside the results callback.
"""

DOCUMENTATION = r"""
name: preload
type: notification
short_description: Loads the collection's filters and the version matrix once, before any task
description:
  - Imports the filter plugin jetson_env.jetson (and with it jetson-env's modules) and loads
    the version matrix in ansible-playbook's main process, so that the forked task workers
    find them loaded.
requirements:
  - enable in callbacks_enabled
"""

import contextlib
import importlib

from ansible.errors import AnsibleError
from ansible.plugins.callback import CallbackBase

FILTERS = "ansible_collections.jetson_env.jetson.plugins.filter.jetson_env"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "jetson_env.jetson.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Where this fails, the first task that uses a filter says why; the run goes on.
        with contextlib.suppress(ImportError, AnsibleError):
            importlib.import_module(FILTERS).matrix_mapping("")
