"""The suite where pyenv is absent (tests/support/pythons.py): a test that needs an old CPython
skips and says what to install, every other test runs; JETSON_ENV_REQUIRE_OLD_PYTHONS=1 (CI's
machines) makes the skip a failure."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# One test that needs pyenv's 2.7 and one that needs nothing of pyenv's.
SELECTED = [
    "tests/unit/test_probing.py::test_python_2_is_named_with_what_is_needed",
    "tests/unit/test_probing.py::test_a_crash_in_the_shared_process_is_that_probes_and_the_rest_still_run",
]


def pytest_without_pyenv(home: Path, **env: str) -> subprocess.CompletedProcess:
    """pytest as on a machine without pyenv: not on PATH, no PYENV_ROOT, no ~/.pyenv."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYENV", "JETSON_ENV_"))}
    clean |= {"PATH": "/usr/bin:/bin", "HOME": str(home), **env}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-rs", *SELECTED],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_without_pyenv_a_test_that_needs_an_old_python_skips_and_the_rest_run(tmp_path: Path):
    done = pytest_without_pyenv(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed, 1 skipped" in done.stdout, done.stdout[-3000:]
    assert (
        f"needs CPython 2.7.18, not at {tmp_path}/.pyenv/versions/2.7.18: install pyenv "
        "(https://github.com/pyenv/pyenv#installation), then `pyenv install 2.7.18`"
    ) in done.stdout


def test_where_old_pythons_are_required_their_absence_fails(tmp_path: Path):
    done = pytest_without_pyenv(tmp_path, JETSON_ENV_REQUIRE_OLD_PYTHONS="1")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert "JETSON_ENV_REQUIRE_OLD_PYTHONS=1: this machine must have it" in done.stdout
