"""A deprecation fails a test's playbook run: it breaks on the next ansible-core. With the json
callback the tests use, Ansible keeps a task's deprecation in the task's result and prints
nothing on stderr, so a check of stderr alone cannot fail (how the torchvision preflight's
`'' | bool` passed a full x86 run on ansible-core 2.19)."""

import json
from pathlib import Path

import pytest
from support.local_play import play_on_localhost, run_on_localhost, task_deprecations

DEPRECATED = {"name": "An empty string through the bool filter",
              "ansible.builtin.debug": {"msg": "{{ '' | bool }}"}}  # fmt: skip


def test_the_json_callback_keeps_a_deprecation_in_the_task_result(tmp_path: Path) -> None:
    proc = play_on_localhost(tmp_path, {"tasks": [DEPRECATED]}, {})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "deprecat" not in proc.stderr.lower()
    ((task, host, deprecations),) = task_deprecations(json.loads(proc.stdout))
    assert (task, host) == (DEPRECATED["name"], "localhost")
    assert "bool" in deprecations[0]["msg"]


def test_a_local_play_that_deprecates_fails(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="ansible-core deprecated"):
        run_on_localhost(tmp_path, {"tasks": [DEPRECATED]}, {})
    assert (
        run_on_localhost(
            tmp_path, {"tasks": [{"ansible.builtin.debug": {"msg": "{{ 'no' | bool }}"}}]}, {}
        )[0]["msg"]
        is False
    )
