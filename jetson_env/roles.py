"""The playbook's roles as the doctor sees them: their defaults, the one source of the
file names and settings a remedy shares with the role that applies it.

They are read from the collection the wheel carries (jetson_env.collection), so a role
that renames its file renames the doctor's text too.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jetson_env import collection, yaml_files


@cache
def defaults(role: str) -> dict[str, Any]:
    """The role's defaults/main.yml (Jinja expressions stay unrendered strings)."""
    return yaml_files.safe_load(collection.role_defaults_file(role).read_text())


def default(role: str, variable: str) -> Any:
    return defaults(role)[f"{role}_{variable}"]


@cache
def file_text(role: str, name: str) -> str:
    """A file of the role's files/ (a script the role runs), as the role reads it."""
    return (collection.PATH / "roles" / role / "files" / name).read_text()
