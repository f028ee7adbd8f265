"""`jetson-env bundle` judges the wheels it carries against each target's GPU before it
ships them (issue 56): a torch wheel with no kernel for the target's compute capability is
refused for that target, with the verdict and the matrix's wheel to bundle instead, unless
--allow-no-kernel; PTX only is said in the output and the manifest; a target whose compute
capability is not known is "not judged".

The wheels are built here: a torch wheel (the name `--file torch=` takes) holding one shared
object that nvcc compiled from tests/fixtures/device_code/kernel.cu with one -gencode choice
(tests/support/device_code.py: sm_80 only, compute_80 PTX only, sm_110). The objects' host
code is this machine's x86-64; their device code, what the bundle reads, is real. The bundle
is made by the installed `jetson-env` console script from another folder, for JetPack 7.0
(R38.2.0: a Thor, compute capability 11.0, CUDA 13.0), whose torch role fetches nothing but
the wheel: no network is asked.
"""

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from support import device_code

from jetson_env import matrix

ROOT = Path(__file__).resolve().parents[2]
JETSON_ENV = Path(sys.executable).parent / "jetson-env"
THOR = "aarch64-l4t38.2.0-cp312"
WHEEL = "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl"
MANIFEST_SCHEMA = json.loads((ROOT / "docs" / "bundle-manifest.schema.json").read_text())


@pytest.fixture(scope="module")
def objects(tmp_path_factory) -> dict[str, Path]:
    return device_code.build_kernels(tmp_path_factory.mktemp("kernels"))


def torch_wheel(folder: Path, so: Path, machine: str = "aarch64") -> Path:
    """A wheel named as torch 2.9.0 for `machine`, its library `torch/lib/libtorch_cuda.so`."""
    folder.mkdir(parents=True, exist_ok=True)
    members = {
        "torch/__init__.py": b"",
        "torch/lib/libtorch_cuda.so": so.read_bytes(),
        "torch-2.9.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n",
        "torch-2.9.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
        b"false\nTag: cp312-cp312-manylinux_2_28_" + machine.encode() + b"\n",
    }
    record = []
    for name, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("torch-2.9.0.dist-info/RECORD,,")
    members["torch-2.9.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / WHEEL.replace("aarch64", machine)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in members.items():
            wheel.writestr(name, data)
    return path


def bundle(directory: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(JETSON_ENV), "bundle", str(directory), "--roles", "torch", "--no-controller", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=directory.parent,
    )


def manifest_of(directory: Path) -> dict:
    manifest = json.loads((directory / "manifest.json").read_text())
    jsonschema.validate(manifest, MANIFEST_SCHEMA)
    return manifest


def test_a_wheel_without_a_kernel_for_the_targets_gpu_is_refused(objects, tmp_path: Path):
    """sm_80 only, for a Thor (11.0): refused with the verdict (what CUDA will say) and the
    matrix's torch for R38.2.0; the wheel leaves the bundle and the target is not recorded."""
    wheel = torch_wheel(tmp_path / "wheels", objects["sm80"])
    directory = tmp_path / "b"
    proc = bundle(directory, "--l4t", "R38.2.0", "--file", f"torch={wheel}")
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr
    assert f"pip/{WHEEL} is refused for {THOR} (compute capability 11.0)" in said
    assert (
        "torch/lib/libtorch_cuda.so: no kernel for compute capability 11.0 (carries sm_80)" in said
    )
    assert "CUDA error 209: no kernel image is available for execution on the device" in said
    row = matrix.load().release("38.2.0")
    assert f"torch {row.torch.version} from {row.torch.index}" in said
    assert "--allow-no-kernel" in said
    manifest = manifest_of(directory)
    assert THOR not in manifest["targets"]
    assert f"pip/{WHEEL}" not in manifest["artifacts"]
    assert not (directory / "pip" / WHEEL).exists()


def test_allow_no_kernel_ships_it_with_the_verdict_recorded(objects, tmp_path: Path):
    wheel = torch_wheel(tmp_path / "wheels", objects["sm80"])
    directory = tmp_path / "b"
    proc = bundle(directory, "--l4t", "R38.2.0", "--file", f"torch={wheel}", "--allow-no-kernel",
                  "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (finding,) = json.loads(proc.stdout)["kernels"]
    assert finding["verdict"] == "no-kernel" and finding["refused"] is False
    assert finding["target"] == THOR and finding["capability"] == "11.0"
    manifest = manifest_of(directory)
    entry = manifest["artifacts"][f"pip/{WHEEL}"]
    assert entry["targets"] == [THOR] and THOR in manifest["targets"]
    files = entry["device_code"]["reading"]["files"]
    assert files["torch/lib/libtorch_cuda.so"]["sass"] == ["sm_80"]
    (verdict,) = entry["device_code"]["targets"][THOR]
    assert verdict["verdict"] == "no-kernel" and "carries sm_80" in verdict["why"]


def test_ptx_only_is_said_and_recorded_and_sass_for_the_gpu_is_quiet(objects, tmp_path: Path):
    """compute_80 PTX (ISA 9.0, CUDA 13.0's: R38.2.0's driver compiles it) on a Thor: shipped,
    with a warning in the output and the verdict in the manifest; then sm_110 for another
    Python of the same release: runs, nothing said."""
    directory = tmp_path / "b"
    ptx = torch_wheel(tmp_path / "ptx", objects["ptx80"])
    proc = bundle(directory, "--l4t", "R38.2.0", "--file", f"torch={ptx}")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("kernels:")]
    assert len(lines) == 1, proc.stdout
    assert f"pip/{WHEEL} for {THOR} (compute capability 11.0): runs only after a JIT" in lines[0]
    assert "PTX compute_80 (ISA 9.0) only" in lines[0]
    (verdict,) = manifest_of(directory)["artifacts"][f"pip/{WHEEL}"]["device_code"]["targets"][THOR]
    assert verdict["verdict"] == "jit" and verdict["capability"] == "11.0"
    sm110 = torch_wheel(tmp_path / "sm110", objects["sm110"])
    other = tmp_path / "c"
    proc = bundle(other, "--l4t", "R38.2.0", "--file", f"torch={sm110}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kernels"] == []
    (verdict,) = manifest_of(other)["artifacts"][f"pip/{WHEEL}"]["device_code"]["targets"][THOR]
    assert verdict["verdict"] == "runs" and "SASS sm_110" in verdict["why"]


def test_a_target_without_a_known_compute_capability_is_not_judged(objects, tmp_path: Path):
    """--x86 names no GPU: the wheel is shipped and said to be not judged."""
    wheel = torch_wheel(tmp_path / "wheels", objects["sm80"], "x86_64")
    directory = tmp_path / "b"
    proc = bundle(directory, "--x86", "--python", "3.12", "--file", f"torch={wheel}")
    assert proc.returncode == 0, proc.stderr
    assert "not judged: no compute capability known (give -i facts from the host)" in " ".join(
        proc.stdout.split()
    )
