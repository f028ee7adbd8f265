"""pyenv's CPython builds on this machine (3.6 for JetPack 4's Python, 2.7 as too old)."""

import os
import subprocess
from pathlib import Path

PYENV_ROOT = Path(
    os.environ.get("PYENV_ROOT")
    or subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False).stdout.strip()
    or Path.home() / ".pyenv"
)


def pyenv_version(version: str) -> Path:
    """The folder of pyenv's build of `version` (it may not exist)."""
    return PYENV_ROOT / "versions" / version
