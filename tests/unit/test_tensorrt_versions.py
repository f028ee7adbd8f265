"""The tensorrt role's read of the host's TensorRT ("Check that the bindings' version equals
libnvinfer's"), run by this venv's ansible-core on localhost in JetPack 4's Python 3.6, against
a STAND-IN libnvinfer (tests/fixtures/tensorrt): the library is found and decoded by the
doctor's own tensorrt probe, whatever its major."""

from pathlib import Path

import pytest
from support.local_play import run_on_localhost
from support.pythons import interpreter, required
from support.standins import BINDINGS_INIT, build_libnvinfer


def role_read(tmp_path: Path, python: str) -> dict:
    """tensorrt_installed as the role sets it, with no TensorRT set to install (and the facts
    jetson_facts would give, so that it is skipped)."""
    variables = {
        "ansible_facts": {"jetson_env_python": {"executable": python, "version": "3.6.15"},
                          "jetson_env_platform": {"is_jetson": False}},
        "jetson_facts_row": {}, "jetson_facts_matrix_file": "", "tensorrt_sets": [],
    }  # fmt: skip
    play = {"tasks": [{"ansible.builtin.include_role": {"name": "jetson_env.jetson.tensorrt"}},
                      {"ansible.builtin.debug": {"msg": "{{ tensorrt_installed }}"}}]}  # fmt: skip
    return run_on_localhost(tmp_path, play, variables)[-1]["msg"]


def target_python(tmp_path: Path, library: str, bindings: str | None = None) -> str:
    """JetPack 4's Python 3.6 (no site-packages) whose loader finds a STAND-IN libnvinfer
    `library`, and with `bindings`, STAND-IN bindings of that version on its path."""
    required("3.6.15")
    build_libnvinfer(library, tmp_path / "lib")
    path = tmp_path / "site"
    if bindings:
        (path / "tensorrt").mkdir(parents=True)
        init = BINDINGS_INIT.format(major=bindings.split(".")[0], version=bindings)
        (path / "tensorrt" / "__init__.py").write_text(init)
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\nLD_LIBRARY_PATH={tmp_path / "lib"} PYTHONPATH={path} exec '
                      f'{interpreter("3.6.15")} -S "$@"\n')  # fmt: skip
    python.chmod(0o755)
    return str(python)


@pytest.mark.parametrize("version", ["11.1.0", "10.3.0", "8.6.1"])
def test_the_role_reads_libnvinfer_of_any_major_without_the_bindings(tmp_path, version):
    """No bindings import (none installed): the role still says which libnvinfer the loader
    gives, TensorRT 11's libnvinfer.so.11 too (before, only .so.10, .so.8 and .so.7 were tried)."""
    read = role_read(tmp_path, target_python(tmp_path, version))

    major = version.split(".")[0]
    assert read["library"] == version, read
    assert read["library_file"] == f"libnvinfer.so.{major}"
    assert read["bindings"] is None
    assert read["error"] == "ModuleNotFoundError: No module named 'tensorrt'"


def test_the_role_reads_the_libnvinfer_of_the_bindings_major(tmp_path):
    """Bindings that import: their version and their libnvinfer's, for the role to compare."""
    read = role_read(tmp_path, target_python(tmp_path, "11.1.0", bindings="11.1.0.106"))

    assert read == {"bindings": "11.1.0.106", "library": "11.1.0",
                    "library_file": "libnvinfer.so.11", "error": None}  # fmt: skip
