"""jetson_env.target_python: the one rule for the Python jetson-env checks and provisions on
this machine, and the one PEP 668 decision, with real interpreters and real shims."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jetson_env import target_python


def shim(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_python3_on_path_is_resolved_to_the_executable_it_runs_as(tmp_path, monkeypatch):
    """pyenv's way: a shim first on PATH runs the selected interpreter; the rule names that
    interpreter (the doctor's sys.executable), not the shim."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    shims = tmp_path / "shims"
    shims.mkdir()
    shim(shims, "python3", f'exec {venv}/bin/python3 "$@"\n')
    shim(shims, "python3.13", "echo 'pyenv: python3.13: command not found' >&2\nexit 127\n")
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")

    assert target_python.local() == f"{venv}/bin/python3"
    assert target_python.local(str(venv / "bin" / "python")) == f"{venv}/bin/python"


def test_a_python_that_does_not_run_is_refused_with_the_way_out(tmp_path, monkeypatch):
    shims = tmp_path / "shims"
    shims.mkdir()
    broken = shim(shims, "python3", "echo 'pyenv: python3: command not found' >&2\nexit 127\n")
    monkeypatch.setenv("PATH", str(shims))

    with pytest.raises(target_python.NoPython) as refused:
        target_python.local()
    why = "pyenv: python3: command not found"
    assert str(refused.value) == f"the Python {broken} does not run: {why}"
    assert "--python" in refused.value.hint
    with pytest.raises(target_python.NoPython, match="no python3 on PATH"):
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        target_python.local()


@pytest.mark.parametrize(
    ("python", "overrides"),
    [
        ({"externally_managed": True, "in_venv": False}, True),  # Debian 12's /usr/bin/python3
        ({"externally_managed": True, "in_venv": True}, False),  # a venv of that Python
        ({"externally_managed": False, "in_venv": False}, False),  # JetPack 6's, pyenv's
        ({}, False),
    ],
)
def test_pep668_is_overridden_only_for_an_externally_managed_system_python(python, overrides):
    assert target_python.overrides_pep668(python) is overrides


def test_provision_refuses_a_python_that_does_not_run_before_ansible_starts(tmp_path):
    """`jetson-env provision --python` (and python3 on PATH) goes through the rule: one that
    does not run is a usage error naming it, with nothing run; with -i, --python is the hosts'
    Python, which must be an absolute path."""
    missing = tmp_path / "no-such-python"
    proc = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "provision", "--check", "--python", str(missing)],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"the Python {missing} does not run" in proc.stderr
    assert "nothing was changed" in proc.stderr and "running:" not in proc.stderr
    (tmp_path / "fleet.yml").write_text("all:\n  hosts:\n    h1:\n")
    proc = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "provision", "-i", "fleet.yml", "--python", "x"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "'x' is not an absolute path" in proc.stderr and "running:" not in proc.stderr
