"""The pip_packages role's rule for not asking pip (jetson_env.pip_satisfied): the installed
distributions read by the target Python (here the oldest the probes support, 3.6, and this
one) from a site folder of dist-info and egg-info folders, compared with packaging's
specifiers as pip compares an installed distribution."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jetson_env.pip_satisfied import read_argv, satisfied

PYTHON36 = Path("/root/.pyenv/versions/3.6.15/bin/python3.6")


def site(folder: Path) -> Path:
    for name in ("numpy-1.26.1.dist-info", "termcolor-1.1.0.egg-info", "Cython-0.29.37.dist-info",
                 "cuda_python-13.4.4.dist-info", "pycuda-2025.1.3-py3.12.egg-info",
                 "torch-2.11.0+cu130.dist-info"):  # fmt: skip
        (folder / name).mkdir()
    return folder


def read(python: str, names: list[str], folder: Path, args: tuple[str, ...] = ()) -> str:
    argv = read_argv(python, names, list(args))
    assert argv, "the rule can decide these requirements"
    env = {**os.environ, "PYTHONPATH": str(folder)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("python", [str(PYTHON36), sys.executable], ids=["3.6", "this"])
def test_installed_versions_meet_the_set(tmp_path: Path, python: str):
    if not Path(python).exists():
        pytest.skip(f"{python} is not installed")
    folder = site(tmp_path)
    names = ["numpy==1.26.1", "termcolor", "Cython<3", "cuda-python==13.*", "pycuda==2025.1.3",
             "torch>=2.11"]  # fmt: skip
    assert satisfied(names, read(python, names, folder)) == [
        "numpy 1.26.1", "termcolor 1.1.0", "Cython 0.29.37", "cuda-python 13.4.4",
        "pycuda 2025.1.3", "torch 2.11.0+cu130",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "names",
    [["numpy==1.26.2"], ["termcolor>=2"], ["numpy", "onnx"], ["Cython>=3"], ["torch==2.10.*"]],
)
def test_one_unmet_requirement_asks_pip(tmp_path: Path, names: list[str]):
    assert satisfied(names, read(sys.executable, names, site(tmp_path))) == []


@pytest.mark.parametrize(
    ("names", "args"),
    [
        (["/tmp/torch-2.11.0-cp312-cp312-linux_x86_64.whl"], []),
        (["numpy[dev]"], []),
        (["numpy; python_version < '3.8'"], []),
        (["numpy"], ["--upgrade"]),
        (["numpy"], ["--force-reinstall"]),
        (["numpy"], ["--target=/opt/site"]),
    ],
)
def test_what_the_rule_cannot_decide_goes_to_pip(names: list[str], args: list[str]):
    assert read_argv("/usr/bin/python3", names, args) == []
