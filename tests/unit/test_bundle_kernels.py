"""`jetson-env bundle` judges the wheels it carries against each target's GPU before it
ships them (issue 56): a torch wheel with no kernel for the target's compute capability is
refused for that target, with the verdict and the matrix's wheel to bundle instead, unless
--allow-no-kernel; PTX only is said in the output and the manifest; a target whose compute
capability is not known is "not judged".

The wheels are built here: a torch wheel (the name `--file torch=` takes) holding one shared
object that nvcc compiled from tests/fixtures/device_code/kernel.cu with one -gencode choice
(tests/support/device_code.py: sm_80 only, compute_80 PTX only, sm_110). The objects' host
code is this machine's x86-64; their device code, what the bundle reads, is real. The bundle
is made by the installed `jetson-env` console script from another folder, for JetPack 6.2
(R36.4.3: an Orin, 8.7, CUDA 12.6), 7.0 (R38.2.0: a Thor, 11.0, CUDA 13.0) and 7.2 (R39.2.0:
an Orin and a Thor, CUDA 13.2), with https through a closed port: nothing is downloaded
(R36.4.3's cuSPARSELt archive comes from the cache or is listed to supply by hand).
"""

import base64
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from support import device_code
from support.schemas import bundle_schema_validator

from jetson_env import matrix

ROOT = Path(__file__).resolve().parents[2]
JETSON_ENV = Path(sys.executable).parent / "jetson-env"
ORIN6 = ("R36.4.3", "aarch64-l4t36.4.3-cp310", "310")
THOR = ("R38.2.0", "aarch64-l4t38.2.0-cp312", "312")
ORIN_THOR = ("R39.2.0", "aarch64-l4t39.2.0-cp312", "312")
OFFLINE = {"https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
MANIFEST_SCHEMA = json.loads((ROOT / "docs" / "bundle-manifest.schema.json").read_text())


@pytest.fixture(scope="module")
def objects(tmp_path_factory) -> dict[str, Path]:
    return device_code.build_kernels(tmp_path_factory.mktemp("kernels"))


def torch_wheel(
    folder: Path,
    so: Path,
    python: str,
    machine: str = "aarch64",
    more: dict | None = None,
    requires: tuple[str, ...] = (),
) -> Path:
    """A wheel named as torch 2.9.0 for CPython `python` ("312") on `machine`, its library
    `torch/lib/libtorch_cuda.so` (and `more`: {path in the wheel: bytes}), requiring
    `requires` (Requires-Dist)."""
    tag = f"cp{python}-cp{python}-manylinux_2_28_{machine}"
    members = {
        "torch/__init__.py": b"",
        "torch/lib/libtorch_cuda.so": so.read_bytes(),
        **(more or {}),
    }
    return write_wheel(folder, "torch", "2.9.0", tag, members, requires)


def write_wheel(
    folder: Path, name: str, version: str, tag: str, members: dict, requires: tuple[str, ...] = ()
) -> Path:
    """NAME-VERSION-TAG.whl holding `members` ({path: bytes}), its METADATA, WHEEL and RECORD."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {requirement}\n" for requirement in requires
    )
    members = {
        **members,
        f"{info}/METADATA": metadata.encode(),
        f"{info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n"
        ).encode(),
    }
    record = []
    for member, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for member, data in members.items():
            wheel.writestr(member, data)
    return path


def bundle(directory: Path, *args, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(JETSON_ENV), "bundle", str(directory), "--roles", "torch", "--no-controller",
         *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=directory.parent,
        env={**os.environ, **OFFLINE, **(env or {})},
    )  # fmt: skip


def made(proc: subprocess.CompletedProcess) -> dict:
    """The bundle --json output of a run that made its bundle, checked against its schema."""
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    bundle_schema_validator().validate(data)
    return data


def manifest_of(directory: Path) -> dict:
    manifest = json.loads((directory / "manifest.json").read_text())
    jsonschema.validate(manifest, MANIFEST_SCHEMA)
    return manifest


@pytest.mark.parametrize(
    "release, key, python, capability, rule",
    [
        # The case: sm_80 on a JetPack 6 Orin, where Tegra has no binary compatibility.
        (*ORIN6, "8.7", " (a Jetson runs only SASS of its exact compute capability before "
         "JetPack 7.2's CUDA 13.2)"),
        (*THOR, "11.0", ""),
    ],
    ids=["jetpack6-orin", "jetpack7-thor"],
)  # fmt: skip
def test_a_wheel_without_a_kernel_for_the_targets_gpu_is_refused(
    objects, tmp_path: Path, release, key, python, capability, rule
):
    """sm_80 only: refused with the verdict (what CUDA will say) and the matrix's torch for
    the release; the wheel leaves the bundle and the target is not recorded."""
    wheel = torch_wheel(tmp_path / "wheels", objects["sm80"], python)
    directory = tmp_path / "b"
    proc = bundle(directory, "--l4t", release, "--file", f"torch={wheel}")
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr
    assert f"pip/{wheel.name} is refused for {key} (compute capability {capability})" in said
    assert (
        f"torch/lib/libtorch_cuda.so: no kernel for compute capability {capability} (carries "
        f"sm_80){rule}: CUDA error 209: no kernel image is available for execution on the device"
    ) in said
    row = matrix.load().release(release)
    assert f"torch {row.torch.version} from {row.torch.url or row.torch.index}" in said
    assert "--allow-no-kernel" in said
    manifest = manifest_of(directory)
    assert key not in manifest["targets"]
    assert f"pip/{wheel.name}" not in manifest["artifacts"]
    assert not (directory / "pip" / wheel.name).exists()


def test_allow_no_kernel_ships_it_with_the_verdicts_recorded(objects, tmp_path: Path):
    """sm_80 for JetPack 7.2, whose release runs on an Orin and a Thor: the Orin runs it
    (CUDA 13.2 lets a Jetson use a cubin of a lower minor), the Thor has no kernel; shipped
    with --allow-no-kernel, both verdicts recorded, the Thor's said."""
    release, key, python = ORIN_THOR
    wheel = torch_wheel(tmp_path / "wheels", objects["sm80"], python)
    directory = tmp_path / "b"
    proc = bundle(directory, "--l4t", release, "--file", f"torch={wheel}", "--allow-no-kernel",
                  "--json")  # fmt: skip
    data = made(proc)
    assert f"reading the device code of pip/{wheel.name}" in proc.stderr
    (finding,) = data["kernels"]
    assert finding["verdict"] == "no-kernel" and finding["refused"] is False
    assert finding["target"] == key and finding["capability"] == "11.0"
    manifest = manifest_of(directory)
    entry = manifest["artifacts"][f"pip/{wheel.name}"]
    assert entry["targets"] == [key] and key in manifest["targets"]
    files = entry["device_code"]["reading"]["files"]
    assert files["torch/lib/libtorch_cuda.so"]["sass"] == ["sm_80"]
    thor, orin = entry["device_code"]["targets"][key]
    assert thor["capability"] == "11.0" and thor["verdict"] == "no-kernel"
    assert "carries sm_80" in thor["why"]
    assert orin["capability"] == "8.7" and orin["verdict"] == "runs"
    assert "SASS sm_80 for compute capability 8.7 (a cubin of the same major" in orin["why"]
    # The manifest, read back as every reader does (its schema, fastjsonschema): --verify,
    # run as the JSON's next step says, passes; running the command again judges the wheel
    # from its recorded reading and says the same next steps.
    assert data["next"]["verify"].endswith(f"bundle --verify {shlex.quote(str(directory))}")
    verified = subprocess.run(shlex.split(data["next"]["verify"]), capture_output=True,
                              text=True, check=False)  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    again = bundle(directory, "--l4t", release, "--file", f"torch={wheel}", "--allow-no-kernel")
    assert again.returncode == 0, again.stderr
    assert "reading the device code" not in again.stderr and "shipped anyway" in again.stdout
    steps = data["next"]
    assert again.stdout.splitlines()[-2:] == [
        f"next: check it where it is used: {steps['verify']}",
        f"then provision from it, with no network: {steps['provision']}",
    ]
    assert data["next"]["provision"].endswith(f"provision --bundle {shlex.quote(str(directory))}")
    # A reading of another shape than the schema's (a manifest is untrusted input) is refused
    # before anything is read through it.
    manifest = json.loads((directory / "manifest.json").read_text())
    code = manifest["artifacts"][f"pip/{wheel.name}"]["device_code"]
    code["reading"]["files"]["torch/lib/libtorch_cuda.so"]["sass"] = ["sm_87; touch x"]
    (directory / "manifest.json").write_text(json.dumps(manifest))
    tampered = subprocess.run([str(JETSON_ENV), "bundle", "--verify", str(directory)],
                              capture_output=True, text=True, check=False)  # fmt: skip
    assert tampered.returncode == 2 and "not of the documented form" in tampered.stderr


def test_a_dependency_of_torch_without_a_kernel_is_shipped_with_its_verdict(
    objects, tmp_path: Path
):
    """A torch with sm_110 for a Thor that requires a package with sm_80 only, as PyPI's
    aarch64 torch 2.14.1 requires nvidia-nvshmem-cu13 3.4.5 (sm_75..sm_120 without sm_110):
    the dependency is shipped, not refused (refused alone, torch would not install with no
    index), and its verdict is said, naming torch as what requires it."""
    release, key, python = THOR
    deps = tmp_path / "deps"
    members = {"needed_kernels/lib/libneeded.so": objects["sm80"].read_bytes()}
    needed = write_wheel(deps, "needed_kernels", "1.0", "py3-none-manylinux_2_28_aarch64", members)
    torch = torch_wheel(
        tmp_path / "wheels", objects["sm110"], python, requires=("needed-kernels==1.0",)
    )
    directory = tmp_path / "b"
    index = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(deps)}
    proc = bundle(directory, "--l4t", release, "--file", f"torch={torch}", "--json", env=index)
    assert proc.returncode == 0, proc.stderr
    (finding,) = json.loads(proc.stdout)["kernels"]
    assert finding["path"] == f"pip/{needed.name}" and finding["target"] == key
    assert (finding["verdict"], finding["refused"], finding["required_by"]) == (
        "no-kernel",
        False,
        "torch",
    )
    assert finding["capability"] == "11.0" and "carries sm_80" in finding["why"]
    manifest = manifest_of(directory)
    assert key in manifest["targets"]
    for wheel in (torch, needed):
        assert manifest["artifacts"][f"pip/{wheel.name}"]["targets"] == [key]
        assert (directory / "pip" / wheel.name).is_file()
    again = bundle(directory, "--l4t", release, "--file", f"torch={torch}", env=index)
    assert again.returncode == 0, again.stderr
    assert (
        f"kernels: pip/{needed.name} for {key} (compute capability 11.0): shipped: torch "
        "requires it (no-kernel): needed_kernels/lib/libneeded.so: no kernel"
    ) in " ".join(again.stdout.split())


def test_ptx_only_is_said_and_recorded_and_sass_for_the_gpu_is_quiet(objects, tmp_path: Path):
    """compute_80 PTX (ISA 9.0, CUDA 13.0's: R38.2.0's driver compiles it) on a Thor: shipped,
    with a warning in the output and the verdict in the manifest; sm_110 in another bundle:
    runs, nothing said."""
    release, key, python = THOR
    directory = tmp_path / "b"
    ptx = torch_wheel(tmp_path / "ptx", objects["ptx80"], python)
    proc = bundle(directory, "--l4t", release, "--file", f"torch={ptx}")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("kernels:")]
    assert len(lines) == 1, proc.stdout
    assert f"pip/{ptx.name} for {key} (compute capability 11.0): runs only after a JIT" in lines[0]
    assert "PTX compute_80 (ISA 9.0) only" in lines[0]
    code = manifest_of(directory)["artifacts"][f"pip/{ptx.name}"]["device_code"]
    (verdict,) = code["targets"][key]
    assert verdict["verdict"] == "jit" and verdict["capability"] == "11.0"
    sm110 = torch_wheel(tmp_path / "sm110", objects["sm110"], python)
    other = tmp_path / "c"
    proc = bundle(other, "--l4t", release, "--file", f"torch={sm110}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kernels"] == []
    (verdict,) = manifest_of(other)["artifacts"][f"pip/{sm110.name}"]["device_code"]["targets"][key]
    assert verdict["verdict"] == "runs" and "SASS sm_110" in verdict["why"]


def test_a_target_without_a_known_compute_capability_is_not_judged(objects, tmp_path: Path):
    """--x86 names no GPU: the wheel is shipped and said to be not judged."""
    wheel = torch_wheel(tmp_path / "wheels", objects["sm80"], "312", "x86_64")
    directory = tmp_path / "b"
    proc = bundle(directory, "--x86", "--python-version", "3.12", "--file", f"torch={wheel}")
    assert proc.returncode == 0, proc.stderr
    key = "x86_64-x86-cp312"
    assert (
        f"kernels: {key}: not judged: no compute capability known (give -i facts from the "
        f"host): pip/{wheel.name}"
    ) in " ".join(proc.stdout.split())
    entry = manifest_of(directory)["artifacts"][f"pip/{wheel.name}"]
    assert entry["targets"] == [key]
    (verdict,) = entry["device_code"]["targets"][key]
    assert verdict["verdict"] == "not-judged" and verdict["capability"] == ""


def test_an_inventory_hosts_own_gpu_is_judged(objects, tmp_path: Path):
    """`bundle -i`: this machine as a host of the inventory (Ansible's local connection), its
    GPU an H200 (9.0) as nvidia-smi's stand-in (tests/fixtures/cuda) says: sm_80 has no
    kernel for it (a desktop GPU runs a lower minor of its own major only), refused with the
    matrix's x86 torch; sm_80 + sm_90 runs."""
    python = "/usr/bin/python3"
    version = subprocess.run(
        [python, "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    key = f"x86_64-x86-cp{version}"
    folder = tmp_path / "bin"
    folder.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "cuda" / "nvidia-smi.standin", folder / "nvidia-smi")
    inventory = tmp_path / "fleet.yml"
    inventory.write_text(
        json.dumps({"all": {"hosts": {"here": {"ansible_connection": "local",
                                               "ansible_python_interpreter": python}}}})
    )  # fmt: skip
    path = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    sm80 = torch_wheel(tmp_path / "sm80", objects["sm80"], version, "x86_64")
    directory = tmp_path / "b"
    proc = bundle(directory, "-i", inventory, "--file", f"torch={sm80}", env=path)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr
    assert f"pip/{sm80.name} is refused for {key} (compute capability 9.0)" in said
    assert "no kernel for compute capability 9.0 (carries sm_80): CUDA error 209" in said
    x86 = matrix.load().x86.torch
    assert f"bundle the matrix's torch for x86: torch {x86.version} from" in said
    both = torch_wheel(tmp_path / "both", objects["sm80_sm90"], version, "x86_64")
    proc = bundle(directory, "-i", inventory, "--file", f"torch={both}", "--json", env=path)
    data = made(proc)
    assert data["kernels"] == []
    assert data["next"]["provision"].endswith(
        f"provision --bundle {shlex.quote(str(directory))} -i {shlex.quote(str(inventory))}"
    )
    code = manifest_of(directory)["artifacts"][f"pip/{both.name}"]["device_code"]
    assert code["targets"][key] == [
        {"capability": "9.0", "verdict": "runs",
         "why": "torch/lib/libtorch_cuda.so: SASS sm_90 for compute capability 9.0"}
    ]  # fmt: skip


def test_a_member_the_reader_refuses_leaves_the_others_judged(objects, tmp_path: Path):
    """A shared object stripped of its section headers (the sm_80 object with e_shnum 0) is
    named as not read; the wheel is judged on the rest: sm_110, which a Thor runs."""
    release, key, python = THOR
    stripped = bytearray(objects["sm80"].read_bytes())
    stripped[0x3C:0x3E] = b"\0\0"  # e_shnum: no section headers
    wheel = torch_wheel(tmp_path / "w", objects["sm110"], python,
                        more={"torch/lib/libstripped.so": bytes(stripped)})  # fmt: skip
    directory = tmp_path / "b"
    proc = bundle(directory, "--l4t", release, "--file", f"torch={wheel}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kernels"] == []
    code = manifest_of(directory)["artifacts"][f"pip/{wheel.name}"]["device_code"]
    assert code["reading"]["unread"].startswith("torch/lib/libstripped.so: no section headers")
    assert list(code["reading"]["files"]) == ["torch/lib/libtorch_cuda.so"]
    (verdict,) = code["targets"][key]
    assert verdict["verdict"] == "runs" and "SASS sm_110" in verdict["why"]
