"""A play run on localhost by this venv's ansible-playbook, with the checkout's collection:
how the unit tests render a role's variables, or run a role's read-only task, for real."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

CHECKOUT = Path(__file__).resolve().parents[2]  # holds ansible_collections/jetson_env/jetson
COLLECTION = CHECKOUT / "ansible_collections" / "jetson_env" / "jetson"


# The one json callback of the tests' runs (ansible-core redirects ansible.builtin.json to it).
JSON_CALLBACK = "ansible.posix.json"


def play_on_localhost(tmp_path: Path, play: dict, variables: dict) -> subprocess.CompletedProcess:
    """Run `play` (on localhost, no facts gathered) with `variables` as extra vars, under the
    json callback: the finished process, whatever its exit code."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, **play}]))
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
         str(playbook), "-e", json.dumps(variables)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(CHECKOUT),
             "ANSIBLE_STDOUT_CALLBACK": JSON_CALLBACK},
    )  # fmt: skip


def run_on_localhost(tmp_path: Path, play: dict, variables: dict) -> list[dict]:
    """play_on_localhost's task results there, in order. A failed play, or a deprecation,
    fails the test with Ansible's words."""
    proc = play_on_localhost(tmp_path, play, variables)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    report = json.loads(proc.stdout)
    assert task_deprecations(report) == [], "ansible-core deprecated"
    return [task["hosts"]["localhost"] for task in report["plays"][0]["tasks"]]


def task_deprecations(report: dict) -> list[tuple[str, str, list]]:
    """(task, host, deprecations) for each task result of a json callback's report that has
    some: the callback keeps a task's deprecations in its result, not on stderr."""
    return [
        (task["task"]["name"], host, result["deprecations"])
        for play in report.get("plays", [])
        for task in play["tasks"]
        for host, result in task["hosts"].items()
        if result.get("deprecations")
    ]
