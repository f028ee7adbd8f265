"""`jetson-env --version`: what runs, as a bug report needs it: jetson-env and where it is
installed, the Ansible collection it carries, the ansible-core of its environment (which
`provision` and `doctor --fix` run), the day the version matrix was last checked, and the
Python that runs it all. `--json`: the same as one document (docs/version.schema.json).
"""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from jetson_env import collection, installed
from jetson_env.matrix import MatrixError, load

SCHEMA = 1


def _distribution(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _collection_version() -> str | None:
    """galaxy.yml's version of the collection this jetson-env carries."""
    from jetson_env import yaml_files

    try:
        return str(yaml_files.safe_load((collection.PATH / "galaxy.yml").read_text())["version"])
    except (OSError, KeyError, TypeError):
        return None


def facts() -> dict[str, Any]:
    """What runs; a part that is missing is null. ansible-core: this environment's (what
    provision runs), else the ansible-playbook on PATH it would run, else how to get it."""
    try:
        checked, matrix_error = load().raw["checked"], None
    except MatrixError as exc:
        checked, matrix_error = None, str(exc)
    core = _distribution("ansible-core")
    playbook = installed.program("ansible-playbook")
    return {
        "schema": SCHEMA,
        "jetson_env": _distribution(installed.DISTRIBUTION),
        "installed_at": str(installed.PACKAGE),
        "collection": {"name": collection.FQCN, "version": _collection_version()},
        "ansible_core": core,
        "ansible_playbook": playbook,
        "ansible_core_hint": None if core or playbook else collection.install_hint(),
        "matrix_checked": checked,
        "matrix_error": matrix_error,
        "python": {"version": platform.python_version(), "executable": sys.executable},
    }


def lines(data: dict[str, Any]) -> list[str]:
    """The text of --version: the first line as `prog --version` always says it."""
    unknown = "(version unknown)"
    playbook = data["ansible_playbook"]
    core = (
        f"{data['ansible_core']} ({playbook})" if data["ansible_core"]
        else f"of another environment: {playbook} (`{playbook} --version` says which)" if playbook
        else f"not installed ({data['ansible_core_hint']})"
    )  # fmt: skip
    matrix = (f"checked {data['matrix_checked']}" if data["matrix_checked"]
              else f"unreadable: {data['matrix_error']}")  # fmt: skip
    return [
        f"jetson-env {data['jetson_env'] or unknown} ({data['installed_at']})",
        f"collection {data['collection']['name']} {data['collection']['version'] or unknown}",
        f"ansible-core {core}",
        f"version matrix {matrix}",
        f"Python {data['python']['version']} ({data['python']['executable']})",
    ]


def show(as_json: bool) -> None:
    data = facts()
    text = json.dumps(data, indent=2) if as_json else "\n".join(lines(data))
    sys.stdout.write(text + "\n")
