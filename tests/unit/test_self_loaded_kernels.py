"""Kernels a library keeps outside its .nv_fatbin and loads itself, as cuFFT does: the
kernels probe reads them and the kernels check judges them (issue 56).

libcufft.so.12 (nvidia-cufft 12.0.0.61): cuobjdump --list-elf (even -all) lists one sm_75
cubin, which holds no kernel (cuobjdump -elf: no .text section); its kernels are 23,983
fatbin containers in .ldata (sm_75..sm_120 SASS, compute_75..compute_90 PTX, LTO-IR) that it
loads through the driver (its strings: cuModuleLoadData, cuModuleGetFunction, libcuda.so.1).
The probe read only .nv_fatbin, and the kernels check failed cuFFT on an H200 where torch's
FFTs run. libselfload.so (tests/support/device_code.py) has that layout, built by nvcc.
"""

import sys
from pathlib import Path

import pytest
from support import device_code
from support.pythons import pyenv_version, required

from jetson_env import device_code as rules
from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.checks.kernels import unwalked
from jetson_env.findings import OK
from jetson_env.matrix import load
from jetson_env.probes import kernels
from jetson_env.probing import ProbeResult, run_probes
from jetson_env.targets import LocalTarget

PYTHON36 = pyenv_version("3.6.15") / "bin" / "python3.6"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    return device_code.build_self_loading(tmp_path_factory.mktemp("selfload"))


@pytest.fixture(scope="module", params=[sys.executable, str(PYTHON36)], ids=["this", "py3.6"])
def probed(request, built, tmp_path_factory) -> dict:
    """The kernels probe's entry for libselfload.so, installed as the distribution
    `selfload` in a venv of this Python or of 3.6."""
    if request.param == str(PYTHON36):
        required("3.6.15")
    where = tmp_path_factory.mktemp("venv") / "v"
    device_code.run(request.param, "-m", "venv", "--without-pip", where)
    python = where / "bin" / "python"
    site = Path(
        device_code.run(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        ).stdout.strip()
    )
    (site / "selfload").mkdir()
    copy = site / "selfload" / built["so"].name
    copy.write_bytes(built["so"].read_bytes())
    device_code.add_distribution(site, "selfload", "1.0", [copy])
    result = run_probes(LocalTarget(str(python)), ["kernels"], {"kernels": 120})["kernels"]
    assert result.ok, (result.error, result.stderr)
    (package,) = [p for p in result.data["packages"] if p["name"] == "selfload"]
    (entry,) = package["files"]
    return {"data": result.data, "entry": entry}


def test_the_probe_reads_the_fatbins_a_library_loads_itself(probed, built):
    """What the runtime registers equals cuobjdump's listing of the object (sm_75); what
    the library keeps in .ldata equals cuobjdump's listing of the fatbins put there, the
    200 KB of data between them crossed."""
    entry = probed["entry"]
    assert (entry["sass"], [p["arch"] for p in entry["ptx"]]) == device_code.oracle(built["so"])
    assert entry["sass"] == ["sm_75"]
    loaded = entry["loaded"]
    assert loaded["sections"] == [".ldata"]
    assert (loaded["containers"], loaded["unread"]) == (2, 0)
    assert loaded["sass"] == device_code.oracle(built["sm90_sm120"])[0] == ["sm_90", "sm_120"]
    assert [p["arch"] for p in loaded["ptx"]] == device_code.oracle(built["ptx75"])[1]
    assert loaded["ptx"] == [{"arch": "compute_75", "version": "9.0"}]  # nvcc 13.0's PTX ISA


def facts(probed: dict, capability: str) -> Facts:
    platform = {
        "is_jetson": False,
        "machine": "x86_64",
        "l4t": None,
        "l4t_source": None,
        "board": None,
        "model": None,
        "soc": None,
        "gpus": [{"name": "a GPU", "compute_capability": capability}],
        "os": {"id": "ubuntu"},
        "python": {"version": "3.12.3", "executable": "/v/bin/python"},
        "uid": 0,
        "unknown": {},
        "compute_capability": capability,
    }
    results = {
        "platform": ProbeResult("platform", platform, None, 0.1),
        "kernels": ProbeResult("kernels", {**probed["data"], "driver": "13.0"}, None, 0.1),
    }
    return Facts(results, load(), platform)


@pytest.mark.parametrize("capability, image", [("9.0", "sm_90"), ("12.0", "sm_120")])
def test_the_kernels_check_judges_the_kernels_it_loads(probed, capability, image):
    """An H200 (9.0) and an RTX 5090 (12.0) run its kernels: not the sm_75-only failure
    the registered fatbin alone gives, and the verdict says where the image is."""
    (finding,) = BY_NAME["kernels"].run(facts(probed, capability))
    assert (finding.status, list(finding.details)) == (OK, ["selfload 1.0"]), finding
    verdict = rules.judge_file(probed["entry"], capability, False, None, "13.0")
    assert (verdict.state, verdict.image) == (rules.RUNS, image)
    assert "loads itself from its .ldata" in verdict.why and "carries sm_75" in verdict.why
    assert "carries sm_75 (without a kernel)" in verdict.why
    # Its .nv_fatbin alone, a kernel-less sm_75 cubin: nothing to launch, nothing to judge.
    assert probed["entry"]["kernelless"] == ["sm_75"]
    assert not rules.carries_code({**probed["entry"], "loaded": None})


def test_what_the_walk_does_not_reach_is_counted(built, monkeypatch):
    """The search between containers is bounded (EMBEDDED_SCAN): with less than the 200 KB
    of data before the SASS, the walk stops there and says how much it left, and the check
    reports those bytes beside its verdict."""
    monkeypatch.setattr(kernels, "EMBEDDED_SCAN", 64 << 10)
    loaded = kernels.read_elf(str(built["so"]))["loaded"]
    assert (loaded["sass"], loaded["containers"]) == ([], 1)
    assert loaded["unread"] > 200_000
    package = {"files": [{"path": "libselfload.so", "loaded": loaded}]}
    assert unwalked(package) == [
        f"libselfload.so: {loaded['unread']} bytes of the fatbins it loads itself not read"
    ]
    entry = {"sass": ["sm_75"], "ptx": [], "loaded": loaded}
    verdict = rules.judge_file(entry, "9.0", False, None, "13.0")
    assert (verdict.state, verdict.image) == (rules.JIT, "compute_75 (PTX 9.0)")


# triton 3.8.0's (aarch64) triton/backends/nvidia/lib/cupti/libcheckpoint.so as `jetson-env
# bundle --l4t R39.2.0` read it: no image in its .nv_fatbin, three fatbins in its .rodata.
CHECKPOINT = {
    "sass": [],
    "kernelless": [],
    "ptx": [],
    "loaded": {
        "containers": 3,
        "sass": ["sm_50", "sm_60", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86",
                 "sm_87", "sm_89", "sm_90", "sm_100", "sm_101", "sm_120"],
        "ptx": [],
        "sections": [".rodata"],
    },
}  # fmt: skip


def test_no_kernel_in_either_names_what_the_library_loads_itself():
    """A Thor (11.0, CUDA 13.2) has no image in it: the verdict names the SASS of the fatbins
    it loads itself, not "carries none" (its .nv_fatbin's alone), which read as an empty
    library."""
    verdict = rules.judge_file(CHECKPOINT, "11.0", True, "13.2", "13.2")
    assert verdict.state == rules.NO_KERNEL
    assert verdict.why.startswith(
        "no kernel for compute capability 11.0 (carries sm_50, sm_60, sm_62, sm_70, sm_72, "
        "sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_101, sm_120): CUDA error 209"
    ), verdict.why
    assert "in the 3 fatbins the library loads itself from its .rodata" in verdict.why
    assert verdict.why.endswith("the .nv_fatbin the runtime registers at load carries none")
    # An Orin on the same release runs its sm_80..sm_87 (SBSA rule): still its own fatbins'.
    orin = rules.judge_file(CHECKPOINT, "8.7", True, "13.2", "13.2")
    assert (orin.state, orin.image) == (rules.RUNS, "sm_87")
