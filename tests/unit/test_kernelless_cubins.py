"""A cubin without a kernel in a library's .nv_fatbin cannot fail with "no kernel image":
nothing is launched from it (issue 56).

libcufftw.so.12 (nvidia-cufft 12.0.0.61), cuFFT's FFTW-compatible wrapper that calls
libcufft, carries one uncompressed sm_75 cubin with no kernel (cuobjdump -elf: no .text
section). The kernels check failed nvidia-cufft on an H200 where torch.fft runs: "no kernel
for compute capability 9.0 (carries sm_75): CUDA error 209". nvcc -shared builds that layout
from a .cu without a __global__ function (host code only; a __device__ function only); the
probe reads each uncompressed cubin's section names and tells it from one that holds a
kernel. A compressed cubin (nvcc -Xfatbin -compress-all: zstd) is not read: judged as before.
"""

import sys
from pathlib import Path

import pytest
from support import device_code
from support.pythons import pyenv_version, required

from jetson_env import device_code as rules
from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult, run_probes
from jetson_env.targets import LocalTarget

PYTHON36 = pyenv_version("3.6.15") / "bin" / "python3.6"
SM75 = ["-gencode", "arch=compute_75,code=sm_75"]
SOURCES = {
    "hostonly": ('extern "C" int jetson_env_host(void) { return 0; }\n', []),
    "deviceonly": ("__device__ int twice(int x) { return 2 * x; }\n", []),
    "kernel": (None, []),  # tests/fixtures/device_code/kernel.cu: a kernel, sm_75 only
    "compressed": (
        'extern "C" int jetson_env_host(void) { return 0; }\n',
        ["-Xfatbin", "-compress-all"],  # zstd
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("kernelless")
    built = {}
    for name, (text, extra) in SOURCES.items():
        source = device_code.SOURCE / "kernel.cu"
        if text is not None:
            source = dest / f"{name}.cu"
            source.write_text(text)
        built[name] = dest / f"lib{name}.so"
        device_code.run(device_code.NVCC, "-shared", "-Xcompiler", "-fPIC", *SM75, *extra,
                        "-o", built[name], source)  # fmt: skip
    return built


def kernel_sections(path: Path) -> int:
    """The .text sections of the object's cubins, as cuobjdump -elf lists their headers."""
    listed = device_code.run(device_code.cuobjdump(), "-elf", path).stdout.splitlines()
    return sum(1 for line in listed if "PROGBITS" in line and ".text." in line.split()[-1])


@pytest.fixture(scope="module", params=[sys.executable, str(PYTHON36)], ids=["this", "py3.6"])
def probed(request, built, tmp_path_factory) -> dict:
    """The kernels probe over a venv of this Python or of 3.6 where each object is the
    distribution cubin-NAME."""
    if request.param == str(PYTHON36):
        required("3.6.15")
    where = tmp_path_factory.mktemp("venv") / "v"
    device_code.run(request.param, "-m", "venv", "--without-pip", where)
    site = Path(
        device_code.run(
            where / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ).stdout.strip()
    )
    for name, path in built.items():
        (site / name).mkdir()
        copy = site / name / path.name
        copy.write_bytes(path.read_bytes())
        device_code.add_distribution(site, f"cubin-{name}", "1.0", [copy])
    result = run_probes(LocalTarget(str(where / "bin" / "python")), ["kernels"], {"kernels": 120})
    assert result["kernels"].ok, (result["kernels"].error, result["kernels"].stderr)
    return result["kernels"].data


def entries(data: dict) -> dict[str, dict]:
    return {
        p["name"][len("cubin-") :]: p["files"][0]
        for p in data["packages"]
        if p["name"].startswith("cubin-")
    }


def test_the_probe_tells_a_cubin_without_a_kernel(probed, built):
    """Every object carries sm_75 SASS (cuobjdump --list-elf); those whose cubins hold no
    .text section (cuobjdump -elf) are `kernelless`; the compressed one is not read."""
    found = entries(probed)
    assert sorted(found) == sorted(SOURCES)
    for name, path in built.items():
        assert found[name]["sass"] == device_code.oracle(path)[0] == ["sm_75"], name
    assert [kernel_sections(built[n]) for n in ("hostonly", "deviceonly", "kernel")] == [0, 0, 1]
    assert found["hostonly"]["kernelless"] == found["deviceonly"]["kernelless"] == ["sm_75"]
    assert found["kernel"]["kernelless"] == []
    assert kernel_sections(built["compressed"]) == 0
    assert found["compressed"]["kernelless"] == []


def test_the_kernels_check_fails_only_the_cubin_with_a_kernel(probed):
    """On an H200 (9.0): the sm_75 kernel has no image (CUDA error 209), as before; the
    cubins without a kernel are no failure, and the check says why; the compressed one,
    unread, keeps today's judgement."""
    platform = {"is_jetson": False, "machine": "x86_64", "l4t": None, "l4t_source": None,
                "board": None, "model": None, "soc": None, "os": {"id": "ubuntu"},
                "gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}],
                "python": {"version": "3.12.3", "executable": "/v/bin/python"}, "uid": 0,
                "unknown": {}, "compute_capability": "9.0"}  # fmt: skip
    facts = Facts(
        {
            "platform": ProbeResult("platform", platform, None, 0.1),
            "kernels": ProbeResult("kernels", {**probed, "driver": "13.0"}, None, 0.1),
        },
        load(),
        platform,
    )
    findings = BY_NAME["kernels"].run(facts)
    failed = sorted(f.summary for f in findings if f.status == FAIL)
    assert failed == [
        "cubin-compressed 1.0 has no kernel for compute capability 9.0",
        "cubin-kernel 1.0 has no kernel for compute capability 9.0",
    ]
    (empty,) = [f for f in findings if "without a kernel" in f.summary]
    assert (empty.status, empty.summary) == (
        OK,
        "2 file(s) carry only cubins without a kernel: not judged",
    )
    found = entries(probed)
    assert list(empty.details) == [
        f"{found[name]['path']}: its .nv_fatbin holds only sm_75 cubins without a kernel (no "
        '.text section): nothing is launched from them, so they cannot fail with "no kernel '
        'image"'
        for name in ("deviceonly", "hostonly")
    ]
    assert not rules.carries_code(found["hostonly"])
    assert rules.judge_file(found["kernel"], "9.0", False, None, "13.0").state == rules.NO_KERNEL
