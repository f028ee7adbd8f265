"""Keys of the slow tier: a slow test that names its inputs, `@pytest.mark.slow(inputs=[...])`,
runs in the default tier too whenever those inputs (files of the checkout, and the Ansible end
it runs at) have no green run in the record (tests/conftest.py decides, tests/README.md).

The record is a file of the checkout, tests/slow-tier-green.json, committed with the change
that made the tests run: a fresh clone (CI's machine) knows what passed for which inputs, so
it runs a keyed test only when its inputs changed since. A key is made of what git sees (the
inputs' tracked and untracked, not ignored files: path and content) and the Ansible end's
versions, never of a path or a time of this machine, so every checkout computes the same.
"""

import datetime
import fcntl
import functools
import json
import os
import subprocess
from pathlib import Path

from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import REPO_ROOT, short_hash

RECORD = REPO_ROOT / "tests" / "slow-tier-green.json"


def _files(inputs: tuple[str, ...], checkout: Path) -> list[str]:
    for name in inputs:
        if not (checkout / name).exists():
            raise FileNotFoundError(f"slow-tier input {name} does not exist in {checkout}")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *inputs],
        cwd=checkout, capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return sorted({name for name in listed.decode().split("\0") if name})


@functools.cache
def inputs_key(inputs: tuple[str, ...], end: str | None = None, checkout: Path = REPO_ROOT) -> str:
    """Hash of the inputs' files (path and content; a symlink by its target) and of the
    Ansible end's versions (a new ansible-core or Python is a new input)."""
    parts: list[str | bytes] = [ANSIBLE_ENDS[end].ensure().versions if end else ""]
    for relative in _files(inputs, checkout):
        path = checkout / relative
        if path.is_symlink():
            parts += [relative, "->", os.readlink(path)]
        elif path.is_file():  # a file listed but deleted from the work tree is not an input
            parts += [relative, path.read_bytes()]
    return short_hash(*parts)


def _read(record: Path) -> dict:
    try:
        return json.loads(record.read_text())
    except FileNotFoundError:
        return {}


def last_green(nodeid: str, key: str, record: Path = RECORD) -> str | None:
    """When the test last passed with inputs of this key, else None."""
    entry = _read(record).get(nodeid, {})
    return entry.get("passed") if entry.get("inputs") == key else None


def record_green(nodeid: str, key: str, record: Path = RECORD) -> None:
    """Write the test's key and today's date in the record (one entry per test; workers of
    one session take turns on a lock beside it)."""
    with open(record.with_name(record.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = _read(record)
        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        entries[nodeid] = {"inputs": key, "passed": today}
        partial = record.with_name(record.name + ".partial")
        partial.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
        partial.replace(record)
