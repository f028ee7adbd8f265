"""ansible-core alone is enough for the roles (docs/provisioning.md): every module or
action a task of the collection's roles and playbooks names is ansible.builtin's or this
collection's. Issue 33's case 4: torchvision's swap.yml named ansible.posix.mount, which the
`provision` extra (ansible-core alone) cannot resolve, and the test extra (the whole
`ansible` package) hid it."""

import re
from pathlib import Path

import yaml

# The checkout's collection (the one the wheel carries).
COLLECTION = Path(__file__).resolve().parents[2] / "ansible_collections" / "jetson_env" / "jetson"
FQCN = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+$")
ALLOWED = ("ansible.builtin.", "jetson_env.jetson.")


def named_modules(node, found: set[str]) -> None:
    """Every FQCN used as a task's key, anywhere in a loaded task or play file."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and FQCN.match(key):
                found.add(key)
            named_modules(value, found)
    elif isinstance(node, list):
        for item in node:
            named_modules(item, found)


def test_every_task_uses_ansible_builtin_or_this_collection():
    files = sorted(COLLECTION.glob("roles/*/tasks/*.yml"))
    files += sorted(COLLECTION.glob("roles/*/handlers/*.yml"))
    files += sorted(COLLECTION.glob("playbooks/*.yml"))
    assert len(files) > 30
    used: dict[str, set[Path]] = {}
    for path in files:
        found: set[str] = set()
        named_modules(yaml.safe_load(path.read_text()), found)
        for name in found:
            used.setdefault(name, set()).add(path.relative_to(COLLECTION))
    assert "ansible.builtin.command" in used and "jetson_env.jetson.facts" in used
    foreign = {name: sorted(map(str, paths)) for name, paths in used.items()
               if not name.startswith(ALLOWED)}  # fmt: skip
    assert foreign == {}
