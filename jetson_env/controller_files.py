"""Where jetson-env keeps its files on the controller, one rule for the bundle and the roles:
downloads under the user's cache as pip keeps its own ($XDG_CACHE_HOME, else ~/.cache), in
jetson-env/; the lock file of sha256 recorded on first download beside the inventory file (a
fleet repository keeps it under version control), else in that cache."""

from __future__ import annotations

import os
from pathlib import Path

LOCK_FILE = "jetson-env.lock.yml"


def cache_root() -> Path:
    """The controller's cache of jetson-env: bundle/, torch/, torchvision/, apt-keys/ ..."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jetson-env"


def lock_file(inventory_file: str | None) -> Path:
    """The lock file for a play whose host came from `inventory_file` (Ansible's magic
    variable: a file, or the folder of one; "" or a host list given to -i: none)."""
    inventory = Path(inventory_file) if inventory_file else None
    if inventory is not None and inventory.exists():
        folder = inventory if inventory.is_dir() else inventory.parent
        return Path(os.path.abspath(folder)) / LOCK_FILE
    return cache_root() / LOCK_FILE
