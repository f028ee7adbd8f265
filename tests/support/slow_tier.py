"""Keys of the slow tier: a slow test that names its inputs, `@pytest.mark.slow(inputs=[...])`,
runs in the default tier too whenever those inputs (files and folders of the checkout, and
the Ansible end it runs at) have no green run recorded on this machine; a passed run leaves
a stamp in ~/.cache/jetson-env/slow-tier/ (tests/conftest.py decides, tests/README.md).
"""

import datetime
import functools
import json
import os
from pathlib import Path

from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import CACHE, REPO_ROOT, short_hash

STAMPS = CACHE / "slow-tier"


@functools.cache
def inputs_key(inputs: tuple[str, ...], end: str | None = None, checkout: Path = REPO_ROOT) -> str:
    """Hash of the inputs' files (path and content; bytecode caches left out) and of the
    Ansible end's venv (its Python and requirement: a new ansible-core is a new input)."""
    parts: list[str | bytes] = [ANSIBLE_ENDS[end].venv.name if end else ""]
    for name in sorted(inputs):
        root = checkout / name
        if not root.exists():
            raise FileNotFoundError(f"slow-tier input {name} does not exist in {checkout}")
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in files:
            relative = path.relative_to(checkout).as_posix()
            if path.is_symlink():
                parts += [relative, "->", os.readlink(path)]
            elif path.is_file() and "__pycache__" not in path.parts:
                parts += [relative, path.read_bytes()]
    return short_hash(*parts)


def _stamp(nodeid: str, key: str):
    return STAMPS / f"{short_hash(nodeid)}-{key}.json"


def last_green(nodeid: str, key: str) -> str | None:
    """When the test last passed on this machine with inputs of this key, else None."""
    try:
        return json.loads(_stamp(nodeid, key).read_text())["passed"]
    except (OSError, ValueError, KeyError):
        return None


def record_green(nodeid: str, key: str) -> None:
    STAMPS.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    _stamp(nodeid, key).write_text(json.dumps({"test": nodeid, "inputs": key, "passed": now}))
