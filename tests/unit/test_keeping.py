"""Whether the torch role keeps an installed torch: the doctor's torch probe output in,
the decision out (jetson_env.keeping, behind the filter jetson_env.jetson.torch_keeping)."""

import json
import subprocess
import sys

import pytest

from jetson_env import keeping
from jetson_env.matrix import load
from jetson_env.probes._prelude import RECORD

MATRIX = load()
WANTED = MATRIX.x86.torch.version
H100 = [{"name": "NVIDIA H100", "compute_capability": "9.0"}]
CUDA = {"root": "/usr/local/cuda", "version": "13.0"}


def platform(gpus: list) -> dict:
    return {
        "is_jetson": False, "machine": "x86_64", "l4t": None, "l4t_source": None, "board": None,
        "model": None, "soc": None, "gpus": gpus, "uid": 0, "unknown": {},
        "os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04"},
        "python": {"version": "3.12.3", "executable": "/opt/torch/.venv/bin/python3"},
    }  # fmt: skip


def probed(**torch) -> str:
    """What the probe prints: a banner an import may print, then its records."""
    data = {"torch": {"installed": True, "importable": True, **torch}, "torchvision": {}}
    records = f"{RECORD} begin torch\n{RECORD} result torch {json.dumps(data)}\n"
    return "some banner\n" + records


CUDA_BUILD = {"version": "2.11.0+cu130", "cuda_build": "13.0", "cuda_available": True,
              "devices": [{"name": "NVIDIA H100", "compute_capability": "9.0"}],
              "arch_list": ["sm_80", "sm_90", "sm_100"]}  # fmt: skip


@pytest.mark.parametrize(
    "output, gpus, replace, keep, reason",
    [
        (probed(**CUDA_BUILD), H100, False, True, "kept (torch_replace_working=true"),
        (probed(**CUDA_BUILD), H100, True, False, "replaced as asked"),
        (probed(**{**CUDA_BUILD, "arch_list": ["sm_80"]}), H100, False, False, "no kernel for"),
        (probed(**{**CUDA_BUILD, "cuda_available": False}), H100, False, False, "is_available"),
        (probed(version="2.11.0+cpu", cuda_build=None), H100, False, False, "CPU-only"),
        # A CPU build where there is no GPU works as well as anything can: kept.
        (probed(version="2.11.0+cpu", cuda_build=None), [], False, True, "kept"),
        (probed(version="9.9.0", cuda_build=None), [], False, False, "no torchvision"),
        (probed(version=WANTED, cuda_build=None), [], True, True, "the one asked for"),
        (probed(importable=False, version="2.11.0", error="libcudnn.so.9: cannot open"), H100,
         False, False, "does not work"),
        ("", H100, False, False, "no torch"),
    ],
    ids=["cuda-works", "asked-to-replace", "no-kernels", "no-cuda", "cpu-on-gpu-host",
         "cpu-no-gpu", "unpaired", "matrix-version", "broken", "none"],
)  # fmt: skip
def test_a_working_torch_is_kept_unless_asked(output, gpus, replace, keep, reason):
    decided = keeping.decide(MATRIX, output, platform(gpus), CUDA, WANTED, replace)
    assert decided["keep"] is keep, decided
    assert reason in decided["reason"]


def test_the_probe_script_runs_as_the_role_runs_it():
    """`python -c SCRIPT`, as the torch role's keep.yml does: the records parse."""
    done = subprocess.run([sys.executable, "-c", keeping.probe_script()], capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    data = keeping.probe_data(done.stdout)
    assert data is not None and "installed" in data["torch"]


@pytest.mark.parametrize(
    "installed, needed",
    [("", False), (None, False), (WANTED, False), ("2.11.0+cu130", True), ("9.9.0", True)],
)
def test_the_probe_runs_only_where_the_facts_leave_the_answer_open(installed, needed):
    assert keeping.probe_needed(installed, WANTED) is needed


@pytest.mark.parametrize(
    "installed, keep, reason",
    [(WANTED, True, f"torch {WANTED} is the one asked for"), ("", False, "no torch is installed")],
)
def test_the_facts_version_decides_without_the_probe(installed, keep, reason):
    """The role skips the probe there (keep.yml): no output, the facts' version decides as the
    probe's would have."""
    decided = keeping.decide(MATRIX, "", platform(H100), CUDA, WANTED, installed_version=installed)
    assert (decided["keep"], decided["reason"]) == (keep, reason)
    assert decided == keeping.decide(
        MATRIX, probed(version=installed) if installed else "", platform(H100), CUDA, WANTED
    )
