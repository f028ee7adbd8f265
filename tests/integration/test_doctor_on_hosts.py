"""`jetson-env doctor` inside the test hosts, each broken for real and then repaired.

Every variant changes the host (files, packages, the loader cache) and restores it.
The x86 host does the heavy work (the stand-in TensorRT, real torch and torchvision
wheels); the emulated Nano does the Jetson-only checks (CSV mount lists, a malformed
nv_tegra_release).
"""

import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import TORCH_WHEEL_X86 as TORCH_WHEEL
from playbook_support import WHEELS
from support.hosts import FIXTURES, VENV, Host
from support.standins import build_cuda_toolkit_archive, build_tensorrt_tarball

from jetson_env import roles

pytestmark = pytest.mark.hosts

PYTHON = f"{VENV}/bin/python"
TRT_VERSION = "8.6.1"
TRT_DIR = f"/opt/TensorRT-{TRT_VERSION}"
TRT_LD_CONF = roles.default("tensorrt", "ldconfig_file")
TORCH_VENV = "/opt/torch-venv"


def cached_wheel(requirement: str, pattern: str) -> Path:
    """A wheel from WHEELS (playbook_support's), downloaded there (no dependencies) on first
    use."""
    found = sorted(WHEELS.glob(pattern))
    if not found:
        subprocess.run(
            ["python3", "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
             "-d", str(WHEELS), requirement],
            check=True, capture_output=True,
        )  # fmt: skip
        found = sorted(WHEELS.glob(pattern))
    return found[-1]


def doctor(host: Host, *args: str, python: str = PYTHON) -> tuple[int, dict]:
    host.install_project()
    result = host.exec(
        [f"{VENV}/bin/jetson-env", "doctor", "--json", "--python", python, *args], check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def one(report: dict, check: str) -> dict:
    (finding,) = [f for f in report["findings"] if f["check"] == check]
    return finding


def apply(host: Host, remedy: str) -> None:
    """Run a remedy exactly as printed (the hosts run as root: no sudo in it)."""
    host.exec(["sh", "-c", remedy])


@pytest.fixture
def tensorrt_tarball_in_opt(x86_host: Host, tmp_path: Path) -> Iterator[Host]:
    """TensorRT extracted to /opt and nothing more: outside the loader path
    ("libnvinfer.so.N: cannot open shared object file")."""
    tarball = build_tensorrt_tarball(TRT_VERSION, "cp311", tmp_path)
    x86_host.copy_in(tarball, f"/tmp/{tarball.name}")
    x86_host.exec(["tar", "-C", "/opt", "-xzf", f"/tmp/{tarball.name}"])
    wheel = f"{TRT_DIR}/python/tensorrt-{TRT_VERSION}-cp311-none-linux_x86_64.whl"
    x86_host.exec([f"{VENV}/bin/pip", "install", "--quiet", "--no-deps", wheel])
    yield x86_host
    x86_host.exec([f"{VENV}/bin/pip", "uninstall", "--quiet", "--yes", "tensorrt"])
    x86_host.exec(["rm", "-rf", TRT_DIR, TRT_LD_CONF, f"/tmp/{tarball.name}"])
    x86_host.exec(["ldconfig"])


def test_libnvinfer_outside_the_loader_path_and_its_remedy(tensorrt_tarball_in_opt: Host):
    host = tensorrt_tarball_in_opt
    checks = ("--check", "libnvinfer", "--check", "tensorrt-python")

    code, before = doctor(host, *checks)

    assert code == 1
    library = one(before, "libnvinfer")
    assert library["status"] == "fail"
    assert f"libnvinfer {TRT_VERSION} is in {TRT_DIR}/lib" in library["summary"]
    assert "libnvinfer.so.8: cannot open shared object file" in library["summary"]
    remedy = f"echo {TRT_DIR}/lib | tee {TRT_LD_CONF} && ldconfig"
    assert library["remedy"] == remedy
    assert library["playbook"] == {"role": "tensorrt", "tags": ["tensorrt"],
                                   "vars": {"tensorrt_sets": ["tensorrt"]}}  # fmt: skip
    bindings = one(before, "tensorrt-python")
    assert bindings["status"] == "fail"
    assert "cannot open shared object file" in bindings["details"][0]
    assert bindings["remedy"] == remedy

    apply(host, library["remedy"])
    code, after = doctor(host, *checks)

    assert code == 0, after
    assert one(after, "libnvinfer")["status"] == "ok"
    assert one(after, "libnvinfer")["summary"].startswith(f"libnvinfer {TRT_VERSION} loads")
    assert one(after, "tensorrt-python")["summary"].startswith(f"tensorrt {TRT_VERSION} imports")


def test_termcolor_absent_then_installed_by_the_remedy(x86_host: Host):
    x86_host.exec([f"{VENV}/bin/pip", "uninstall", "--quiet", "--yes", "termcolor"], check=False)

    code, before = doctor(x86_host, "--check", "termcolor")
    finding = one(before, "termcolor")
    assert (code, finding["status"]) == (1, "fail")
    assert finding["remedy"] == f"{PYTHON} -m pip install termcolor"

    wheel = cached_wheel("termcolor", "termcolor-*.whl")
    x86_host.copy_in(wheel, f"/tmp/{wheel.name}")
    apply(x86_host, finding["remedy"] + " --no-index --find-links /tmp")
    try:
        code, after = doctor(x86_host, "--check", "termcolor")
        assert (code, one(after, "termcolor")["status"]) == (0, "ok")
    finally:
        x86_host.exec([f"{VENV}/bin/pip", "uninstall", "--quiet", "--yes", "termcolor"])


@pytest.fixture(scope="module")
def torch_venv(x86_host: Host) -> str:
    """Real torch (CPU build) in a venv of its own on the x86 host: the wheel the playbook
    tests install too, so a machine without it fails here as there, instead of skipping."""
    assert TORCH_WHEEL.exists(), f"{TORCH_WHEEL} is not on this machine (the playbook tests' too)"
    x86_host.copy_in(TORCH_WHEEL, f"/tmp/{TORCH_WHEEL.name}")
    x86_host.exec(["python3", "-m", "venv", TORCH_VENV])
    x86_host.exec(
        [f"{TORCH_VENV}/bin/pip", "install", "--quiet", f"/tmp/{TORCH_WHEEL.name}", "numpy"],
        timeout=900,
    )
    x86_host.exec(["rm", f"/tmp/{TORCH_WHEEL.name}"])
    return f"{TORCH_VENV}/bin/python"


def install_torchvision(host: Host, version: str) -> None:
    wheel = cached_wheel(f"torchvision=={version}.*", f"torchvision-{version}.*-cp311-*.whl")
    host.copy_in(wheel, f"/tmp/{wheel.name}")
    host.exec([f"{TORCH_VENV}/bin/pip", "install", "--quiet", "--no-deps", "--force-reinstall",
               f"/tmp/{wheel.name}"])  # fmt: skip


@pytest.fixture
def torchvision_in_the_venv(x86_host: Host, torch_venv: str) -> Iterator[str]:
    """The torch venv for a test that installs torchvision into it: removed after, so that
    the venv's other tests find torch alone, whatever order they run in."""
    yield torch_venv
    x86_host.exec([f"{TORCH_VENV}/bin/pip", "uninstall", "--yes", "--quiet", "torchvision"])


def test_torchvision_paired_vs_mismatched_with_real_wheels(
    x86_host: Host, torchvision_in_the_venv: str
):
    torch_venv = torchvision_in_the_venv
    install_torchvision(x86_host, "0.28")
    code, paired = doctor(x86_host, "--check", "torch", "--check", "torchvision", python=torch_venv)
    torch = one(paired, "torch")
    assert torch["status"] == "warn"  # a CPU build on a machine without a GPU
    assert torch["summary"].startswith("torch 2.13.0+cpu is a CPU-only build")
    vision = one(paired, "torchvision")
    assert vision["status"] == "fail"
    assert "pairs with torch 2.13.0+cpu" in vision["summary"]
    assert "cannot load its C++ ops" in vision["summary"]
    assert "torchvision::nms" in vision["details"][0]
    cpu_index = "--index-url https://download.pytorch.org/whl/cpu"
    assert vision["remedy"] == f"{torch_venv} -m pip install {cpu_index} 'torchvision==0.28.*'"
    assert code == 1

    install_torchvision(x86_host, "0.27")
    code, mismatched = doctor(x86_host, "--check", "torchvision", python=torch_venv)
    vision = one(mismatched, "torchvision")
    assert vision["status"] == "fail"
    assert vision["summary"].startswith("torchvision 0.27.")
    assert (
        "does not pair with torch 2.13.0+cpu (torch 2.13.0+cpu needs torchvision 0.28.x)"
        in (vision["summary"])
    )
    assert code == 1


def test_smoke_runs_the_reference_and_never_claims_a_conversion(x86_host: Host, torch_venv: str):
    code, report = doctor(x86_host, "--check", "smoke", python=torch_venv)
    smoke = [f for f in report["findings"] if f["check"] == "smoke"]
    assert [f["status"] for f in smoke] == ["ok", "skip"]
    assert smoke[0]["summary"].startswith("PyTorch reference (torch 2.13.0+cpu) on cpu: ")
    assert smoke[1]["summary"] == (
        "conversion not run: no CUDA device is available to torch: TensorRT needs a GPU"
    )
    assert report["smoke"]["conversions"] == []
    assert report["smoke"]["reference"]["output_shape"] == [1, 10]
    assert code == 0


CSV_DIR = roles.default("docker_runtime", "csv_dir")


@pytest.fixture
def nano_with_csv_lists(nano_host: Host) -> Iterator[Host]:
    present = "/usr/local/cuda-10.2/version.txt"
    missing = "/usr/lib/aarch64-linux-gnu/libnvinfer.so.7.1.3"
    text = f"lib, {present}\nlib, {missing}\nsym, /usr/local/cuda\n"
    nano_host.exec(["mkdir", "-p", CSV_DIR])
    nano_host.exec(["sh", "-c", f"printf %s {shlex.quote(text)} > {CSV_DIR}/tensorrt.csv"])
    yield nano_host
    nano_host.exec(["rm", "-rf", "/etc/nvidia-container-runtime"])


def test_nano_csv_list_with_a_missing_host_file(nano_with_csv_lists: Host):
    code, report = doctor(nano_with_csv_lists, "--check", "docker", python="python3")
    csv = [f for f in report["findings"] if f["summary"].startswith("tensorrt.csv")]
    assert len(csv) == 1
    assert csv[0]["status"] == "fail"
    assert csv[0]["summary"].startswith("tensorrt.csv: 1 of 3 listed host files are missing")
    assert csv[0]["details"] == ["lib, /usr/lib/aarch64-linux-gnu/libnvinfer.so.7.1.3"]
    assert "nvidia-container-csv-tensorrt" in csv[0]["remedy"]
    assert code == 1


@pytest.fixture
def nano_with_malformed_release(nano_host: Host) -> Iterator[Host]:
    nano_host.exec(["sh", "-c", "printf 'R32 something else\\n' > /etc/nv_tegra_release"])
    yield nano_host
    nano_host.copy_in(
        FIXTURES / nano_host.name / "etc" / "nv_tegra_release", "/etc/nv_tegra_release"
    )


def test_malformed_nv_tegra_release_is_a_platform_failure(nano_with_malformed_release: Host):
    code, report = doctor(nano_with_malformed_release, "--check", "platform", python="python3")
    platform = one(report, "platform")
    assert platform["status"] == "fail"
    assert platform["summary"] == "NVIDIA Jetson Nano Developer Kit: L4T release unknown"
    assert any("/etc/nv_tegra_release is malformed" in line for line in platform["details"])
    assert platform["remedy"].endswith("apt-get install --reinstall -y nvidia-l4t-core")
    assert code == 1


def test_nano_without_torch_gets_nvidias_wheel_for_jetpacks_python(nano_host: Host):
    """The R32.4.3 wheel is cp36: on another Python the remedy says which one to use."""
    code, report = doctor(nano_host, "--check", "torch", python="python3")
    torch = one(report, "torch")
    assert torch["status"] == "fail"
    assert torch["summary"] == "torch is not installed for /usr/bin/python3"
    assert torch["remedy"] == (
        "NVIDIA's torch wheel for this L4T is for Python 3.6, not 3.11: python3.6 -m pip install "
        "https://nvidia.box.com/shared/static/9eptse6jyly1ggt9axbja2yrmj6pbarc.whl"
    )
    assert code == 1


@pytest.fixture
def cuda_toolkit_in_usr_local(x86_host: Host, tmp_path: Path) -> Iterator[Host]:
    """The Orin's staged CUDA 12.6 tree, plus a stand-in libcudart in its lib64."""
    x86_host.copy_in(build_cuda_toolkit_archive(tmp_path), "/tmp/cuda.tar")
    x86_host.exec(["tar", "-C", "/usr/local", "-xf", "/tmp/cuda.tar"])
    x86_host.exec(["ln", "-sfn", "cuda-12.6", "/usr/local/cuda"])
    yield x86_host
    x86_host.exec(
        ["rm", "-rf", "/usr/local/cuda", "/usr/local/cuda-12.6", "/tmp/cuda.tar", CUDA_CONF]
    )
    x86_host.exec(["ldconfig"])


CUDA_CONF = roles.default("cuda_env", "ldconfig_file")


def cudart_finding(host: Host) -> dict:
    _, report = doctor(host, "--check", "cuda", "--no-smoke")
    (finding,) = [
        f for f in report["findings"] if f["check"] == "cuda" and "libcudart" in f["summary"]
    ]
    return finding


def test_libcudart_the_loader_misses_and_each_remedy(cuda_toolkit_in_usr_local: Host):
    """Three reasons, three remedies, each applied for real: a folder the loader does not
    search, a stale loader cache, a toolkit without its runtime library."""
    host = cuda_toolkit_in_usr_local
    lib = "/usr/local/cuda/lib64"

    unlisted = cudart_finding(host)
    assert unlisted["summary"] == f"libcudart is in {lib}, which the loader does not search"
    assert unlisted["remedy"] == f"echo {lib} | tee {CUDA_CONF} && ldconfig"
    assert unlisted["playbook"]["vars"] == {"cuda_env_root": "/usr/local/cuda"}
    apply(host, unlisted["remedy"])
    loads = cudart_finding(host)
    assert loads["status"] == "ok"
    assert loads["summary"].startswith("libcudart 12.6 loads")

    host.exec(["sh", "-c", f"rm {CUDA_CONF} && ldconfig && echo {lib} > {CUDA_CONF}"])
    stale = cudart_finding(host)
    assert stale["summary"] == (
        f"libcudart is in {lib}, which {CUDA_CONF} lists, but the loader's cache is stale"
    )
    assert stale["remedy"] == "ldconfig"
    apply(host, stale["remedy"])
    assert cudart_finding(host)["status"] == "ok"

    host.exec(["sh", "-c", f"rm {lib}/libcudart.so* && ldconfig"])
    missing = cudart_finding(host)
    assert missing["summary"] == "libcudart is not in the toolkit at /usr/local/cuda"
    assert missing["remedy"].startswith("reinstall the CUDA toolkit")
