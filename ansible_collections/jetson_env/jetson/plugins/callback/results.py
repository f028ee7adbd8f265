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
    C(ignored)), C(failed) (per failed task C(host), C(task), C(role), C(msg)), C(roles) (per
    host and role the counts, C(said) with what the role said it changed, C(changed) with the
    changed tasks no such sentence covers, C(failed)) and C(never_reached) (per host that failed
    or was not reached, the roles the play stopped before, as the tags select them).
  - A role says what it changed in the user's terms with ansible.builtin.set_stats of
    C(jetson_env_changes), a list of sentences ("termcolor==3.3.0 installed"), which stand for
    the changed tasks of that role.
requirements:
  - enable in callbacks_enabled
"""

import json
import os

from ansible.playbook.block import Block
from ansible.playbook.task import Task
from ansible.plugins.callback import CallbackBase

VALIDATION = ("validate_argument_spec", "ansible.builtin.validate_argument_spec")
SET_STATS = ("set_stats", "ansible.builtin.set_stats")
CHANGES = "jetson_env_changes"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "jetson_env.jetson.results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.failed = []
        self.roles = {}
        self.events = {}  # host -> outer role -> [(own role, "said" or "changed", text)]
        self.plays = []
        self.play = -1
        self.reached = {}  # host -> {(play, outer role)}
        self.stopped = {}  # host -> the play of its last failure

    def v2_playbook_on_start(self, playbook):
        self.plays = list(playbook.get_plays())

    def v2_playbook_on_play_start(self, play):
        self.play += 1

    def v2_runner_on_ok(self, result):
        if result._task.action in VALIDATION:  # every role's, whatever --tags selects
            return
        tally = self._tally(result)
        tally["ok"] += 1
        said = result._result.get("ansible_stats", {}).get("data", {}).get(CHANGES)
        if result._task.action in SET_STATS and said:
            self._event(
                result, "said", [str(s) for s in (said if isinstance(said, list) else [said])]
            )
        elif result._result.get("changed"):
            self._event(result, "changed", [_task_name(result._task)])

    def v2_runner_on_skipped(self, result):
        self._tally(result)["skipped"] += 1

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            return
        self._tally(result)["failed"].append(_task_name(result._task))
        self._failure(result)

    def v2_runner_on_unreachable(self, result):
        self._tally(result)["failed"].append(_task_name(result._task))
        self._failure(result)

    def _tally(self, result):
        host, role = result._host.get_name(), _outer_role(result._task)
        self.reached.setdefault(host, set()).add((self.play, role))
        return self.roles.setdefault(host, {}).setdefault(
            role, {"ok": 0, "skipped": 0, "said": [], "changed": [], "failed": []}
        )

    def _event(self, result, kind, texts):
        role = getattr(result._task, "_role", None)
        own = role.get_name(include_role_fqcn=False) if role else ""
        events = self.events.setdefault(result._host.get_name(), {})
        events.setdefault(_outer_role(result._task), []).extend((own, kind, t) for t in texts)

    def _failure(self, result):
        self.stopped[result._host.get_name()] = self.play
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
        for host, roles in self.events.items():
            for role, events in roles.items():
                stated = {own for own, kind, _ in events if kind == "said"}
                tally = self.roles[host][role]
                tally["said"] = [text for _, kind, text in events if kind == "said"]
                tally["changed"] = [text for own, kind, text in events
                                    if kind == "changed" and own not in stated]  # fmt: skip
        never = {host: self._never_reached(host) for host, counts in hosts.items()
                 if counts.get("failures") or counts.get("unreachable")}  # fmt: skip
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"hosts": hosts, "failed": self.failed, "roles": self.roles,
                       "never_reached": never}, handle)  # fmt: skip

    def _never_reached(self, host):
        """The roles of the plays' `roles:` that the tags select, from the play where the host
        last failed on, that ran no task there: the play stopped before them."""
        reached = self.reached.get(host, set())
        names = []
        for index, play in enumerate(self.plays):
            if index < self.stopped.get(host, 0):
                continue
            for role in play.get_roles():
                name = role.get_name(include_role_fqcn=False)
                if (index, name) not in reached and name not in names and _selected(play, role):
                    names.append(name)
        return names


def _selected(play, role):
    """Whether the play's --tags and --skip-tags select the role entry: Ansible's own rule
    (Taggable.evaluate_tags, which the strategy asks of every task) on a task of the role with
    no tags of its own: its tags are the entry's and the play's, as the role's tasks inherit
    them."""
    task = Task(block=Block(play=play, role=role), role=role)
    return task.evaluate_tags(play.only_tags, play.skip_tags, {})


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
