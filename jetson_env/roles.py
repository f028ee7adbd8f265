"""The playbook's roles as the doctor sees them: their defaults, the one source of the
file names and settings a remedy shares with the role that applies it.

jetson_env/data/roles/<role>.yml are links to playbooks/roles/<role>/defaults/main.yml,
so the wheel ships the roles' own defaults (a role that renames its file renames the
doctor's text too).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

DEFAULTS_DIR = Path(__file__).resolve().parent / "data" / "roles"


@cache
def defaults(role: str) -> dict[str, Any]:
    """The role's defaults/main.yml (Jinja expressions stay unrendered strings)."""
    return yaml.safe_load((DEFAULTS_DIR / f"{role}.yml").read_text())


def default(role: str, variable: str) -> Any:
    return defaults(role)[f"{role}_{variable}"]
