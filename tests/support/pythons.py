"""pyenv's CPython builds on this machine: the targets' old Pythons (3.6 for JetPack 4, 3.8 for
JetPack 5) and 2.7 as too old. Where pyenv or a build is absent, a test that needs one skips and
says what to install; every other test runs. CI's machines have them, and there
JETSON_ENV_REQUIRE_OLD_PYTHONS=1 (.ci/run) makes a missing build a failure, not a skip."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Every pyenv build the tests use, for the slow tier's keys (tests/support/slow_tier.py).
OLD_PYTHONS = ("2.7.18", "3.6.15", "3.8.18")


def _pyenv_root() -> Path:
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    pyenv = shutil.which("pyenv")
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout if pyenv else ""
    return Path(root.strip() or Path.home() / ".pyenv")


PYENV_ROOT = _pyenv_root()


def pyenv_version(version: str) -> Path:
    """The folder of pyenv's build of `version` (it may not exist: see `required`)."""
    return PYENV_ROOT / "versions" / version


def interpreter(version: str) -> Path:
    """pyenv's build's interpreter, e.g. versions/3.6.15/bin/python3.6."""
    return pyenv_version(version) / "bin" / f"python{version.rsplit('.', 1)[0]}"


def required(version: str) -> Path:
    """The folder of pyenv's build of `version` for a test that needs it: absent, the test
    skips with what to install (fails where JETSON_ENV_REQUIRE_OLD_PYTHONS=1)."""
    if interpreter(version).exists():
        return pyenv_version(version)
    how = f"`pyenv install {version}`"
    if not shutil.which("pyenv") and not (PYENV_ROOT / "bin" / "pyenv").exists():
        how = f"pyenv (https://github.com/pyenv/pyenv#installation), then {how}"
    message = f"needs CPython {version}, not at {pyenv_version(version)}: install {how}"
    if os.environ.get("JETSON_ENV_REQUIRE_OLD_PYTHONS") == "1":
        pytest.fail(f"{message} (JETSON_ENV_REQUIRE_OLD_PYTHONS=1: this machine must have it)")
    pytest.skip(message)
