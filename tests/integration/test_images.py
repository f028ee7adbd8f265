"""Real image builds of images/Dockerfile on stand-in bases, and the doctor inside them.

No registry is reachable here, so NVIDIA's bases cannot be had: each build passes a
debootstrapped Debian (tests/support/hosts.py) plus this machine's pip network settings
as BASE_IMAGE, and stages the controller files the playbook needs in
images/inputs/<image>/ (the real CPU torch wheel, the torchvision-like fixture as a
source archive, the stand-in TensorRT tarball on x86). torch2trt is off: its source
is on GitHub (unreachable) and the stand-in TensorRT cannot back it, so the image's
doctor must report it missing, with the remedy.

The x86_64 build runs by default (a few minutes cold; seconds from Docker's layer
cache). The emulated aarch64 build of r36.4.0 is marked `slow` (tests/README.md).
Sizes are printed and written to .cache/images/<name>.sizes.json.
"""

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from playbook_support import OFFLINE_VARS
from support.hosts import (
    CACHE,
    REPO_ROOT,
    BaseImage,
    BuildContext,
    _ensure_image,
    with_controller_pip_settings,
)
from support.pythons import required
from support.standin_apt import CA_IN_HOST, standin_apt
from support.standins import build_cusparselt_archive, build_tensorrt_tarball

from jetson_env import doctor as doctor_mod
from jetson_env import matrix as matrix_mod
from jetson_env import roles
from jetson_env.images import same_everywhere

pytestmark = pytest.mark.hosts

INPUTS = REPO_ROOT / "images" / "inputs"
IN_BUILD = "/opt/jetson-env-build/inputs"
TORCH_X86 = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
TORCH_AARCH64_SPEC = "torch==2.5.0"
TORCHVISION_FIXTURE = REPO_ROOT / "tests" / "fixtures" / "torchvision-like"
TRT_VERSION = "10.3.0"
REPOSITORY = "jetson-env-test"
BUILD_TIMEOUT_S = 3600


def stand_in_base(debian_arch: str, trusted_ca: Path | None = None) -> str:
    """The debootstrapped base with this machine's pip settings (index, CA), as a site's base;
    `trusted_ca` is added to its CA store (the stand-in apt repository's)."""
    lines, files = with_controller_pip_settings(BaseImage(debian_arch).ensure())
    if trusted_ca is not None:
        files["standin-ca.crt"] = trusted_ca.read_bytes()
        lines.append(f"COPY standin-ca.crt {CA_IN_HOST}")
        lines.append("RUN update-ca-certificates")
    context = BuildContext("\n".join(lines) + "\n", files)
    tag = f"jetson-env-image-base:{debian_arch}-{context.digest}"
    return _ensure_image(tag, lambda: context.build(tag))


def stage(image: str, files: dict[str, Path]) -> None:
    """images/inputs/<image>/ holds exactly these files, byte-stable across runs so that
    Docker's layer cache hits (tar.gz files are rewritten with fixed times)."""
    folder = INPUTS / image
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, source in files.items():
        if name.endswith(".tar.gz"):
            stable_tar_gz(source, folder / name)
            continue
        try:
            (folder / name).hardlink_to(source)
        except OSError:
            shutil.copy2(source, folder / name)


def stable_tar_gz(source: Path, dest: Path) -> None:
    """`source` with every member's time, owner and mode the same from any checkout."""
    with (
        tarfile.open(source) as src,
        gzip.GzipFile(dest, "wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as out,
    ):
        for member in sorted(src.getmembers(), key=lambda m: m.name):
            if "__pycache__" in member.name:
                continue
            member = same_everywhere(member)  # the checkout's umask: as the context's files
            member.mtime = 0
            # A PAX source keeps each file's own time in its extended header too.
            member.pax_headers = {
                k: v for k, v in member.pax_headers.items() if k not in ("mtime", "atime", "ctime")
            }
            out.addfile(member, src.extractfile(member) if member.isfile() else None)


def source_archive(tree: Path, top: str, dest: Path) -> Path:
    archive = dest / f"{top}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname=top)
    return archive


def build(name: str, base: str, playbook_vars: dict, *options: str) -> dict:
    """`jetson-env images build NAME --json [OPTIONS]` for real; prints and records the
    sizes."""
    log = REPO_ROOT / ".cache" / "images" / f"test-{name}.log"
    started = time.monotonic()
    result = subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "jetson-env"), "--no-color", "images",
         "--repository", REPOSITORY, "build", name, "--base", base, "--json",
         "--log", str(log), "--playbook-vars", json.dumps(playbook_vars), *options],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"{result.stderr}\n--- log tail ---\n" + "".join(
        log.read_text().splitlines(keepends=True)[-40:]
    )
    built = json.loads(result.stdout)
    sizes = {
        "image": built["tag"],
        "size_mib": round(built["size_bytes"] / 2**20),
        "largest_layer_mib": round(built["largest_layer_bytes"] / 2**20),
        "build_s": round(time.monotonic() - started),
    }
    (log.parent / f"{name}.sizes.json").write_text(json.dumps(sizes, indent=2) + "\n")
    print(f"\n{name}: {json.dumps(sizes)}")
    return built


def run_in(tag: str, *cmd: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", "run", "--rm", "--network", "none", tag, *cmd],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def doctor_findings(tag: str, timeout: float = 600) -> tuple[int, dict[str, dict]]:
    result = run_in(tag, "jetson-env", "doctor", "--json", "--no-smoke", timeout=timeout)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    return result.returncode, {f["check"]: f for f in report["findings"]}


def assert_nothing_of_the_build_remains(tag: str) -> None:
    probe = (
        "for tool in g++ gcc cc c++ ansible ansible-playbook git; do "
        "command -v $tool && echo FOUND $tool; done; "
        "for path in /opt/jetson-env-build /opt/jetson-env-ansible /var/cache/jetson-env "
        "/root/.cache /root/.ansible; do test -e $path && echo FOUND $path; done; "
        "python3 -c 'import ansible' 2>/dev/null && echo FOUND ansible-module; true"
    )
    result = run_in(tag, "sh", "-c", probe)
    assert result.returncode == 0, result.stderr
    assert "FOUND" not in result.stdout, result.stdout


@pytest.fixture(scope="module")
def x86_image(tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("image-x86")
    tarball = build_tensorrt_tarball(TRT_VERSION, "cp311", work / "trt")
    vision = source_archive(TORCHVISION_FIXTURE, "vision-0.28.0", work)
    stage("x86_64", {TORCH_X86.name: TORCH_X86, tarball.name: tarball, vision.name: vision})
    return build(
        "x86_64",
        stand_in_base("amd64"),
        {
            "torch_wheel_file": f"{IN_BUILD}/{TORCH_X86.name}",
            "torchvision_source_archive": f"{IN_BUILD}/{vision.name}",
            # Of the staged copy: staging rewrites tar.gz files with fixed times.
            "torchvision_source_sha256": hashlib.sha256(
                (INPUTS / "x86_64" / vision.name).read_bytes()
            ).hexdigest(),
            # The fixture needs only a C++ compiler and Python headers.
            "torchvision_apt_packages": ["g++", "python3-dev"],
            "tensorrt_tarball": f"{IN_BUILD}/{tarball.name}",
            "torch2trt_enabled": False,
        },
    )


def test_x86_image_reports_its_size(x86_image: dict):
    assert x86_image["tag"] == f"{REPOSITORY}:x86_64"
    assert 0 < x86_image["largest_layer_bytes"] <= x86_image["size_bytes"]
    assert Path(x86_image["log"]).read_text().count("Step ") > 10
    assert x86_image["image"]["build_args"]["TORCH_VERSION"] == matrix_mod.load().x86.torch.version


def test_x86_image_runs_the_doctor_by_default(x86_image: dict):
    inspect = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{json .Config.Cmd}}", x86_image["tag"]],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(inspect.stdout) == ["jetson-env", "doctor"]


def test_x86_image_doctor_findings(x86_image: dict):
    code, findings = doctor_findings(x86_image["tag"])

    assert findings["platform"]["status"] == "warn"
    assert findings["platform"]["summary"].startswith("x86_64 host without an NVIDIA GPU")
    assert findings["torch"]["summary"].startswith("torch 2.13.0+cpu is a CPU-only build")
    # torchvision is installed, pairs with torch and its C++ nms op runs (the fixture's).
    assert findings["torchvision"]["summary"] == (
        "torchvision 0.28.0 (pairs with torch 2.13.0+cpu); ops.nms works on CPU"
    )
    assert findings["termcolor"]["status"] == "ok", findings["termcolor"]
    assert findings["tensorrt-python"]["summary"].startswith(f"tensorrt {TRT_VERSION} imports")
    assert findings["libnvinfer"]["summary"].startswith(f"libnvinfer {TRT_VERSION} loads")
    # torch2trt was not installed (see the module docstring): reported; its fix is of use
    # only with a GPU, and the image has none: the doctor's one "left out" step, no role.
    assert findings["torch2trt"]["status"] == "fail", findings["torch2trt"]
    assert findings["torch2trt"]["remedy"] == doctor_mod.LEFT_OUT_WITHOUT_A_GPU.shell
    assert findings["torch2trt"]["playbook"] is None
    assert code == 1


def test_x86_image_keeps_no_compiler_sources_or_ansible(x86_image: dict):
    assert_nothing_of_the_build_remains(x86_image["tag"])
    # ... but what the build compiled is there: torchvision's C++ op runs.
    result = run_in(
        x86_image["tag"],
        "python3",
        "-c",
        "import torch, torchvision; print(torchvision.add_one(torch.zeros(2)).tolist())",
    )
    assert result.stdout.strip() == "[1.0, 1.0]", result.stderr


def torch_aarch64_wheel() -> Path:
    """PyPI's aarch64 CPU wheel of the r36.4 row's torch (2.5.0, 92 MB), downloaded once."""
    dest = CACHE / "image-wheels"
    found = sorted(dest.glob("torch-2.5.0-cp311-*aarch64*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--platform", "manylinux2014_aarch64", "--python-version", "3.11",
             "--dest", str(dest), TORCH_AARCH64_SPEC],
            check=True, capture_output=True, text=True, timeout=1200,
        )  # fmt: skip
        found = sorted(dest.glob("torch-2.5.0-cp311-*aarch64*.whl"))
    return found[-1]


@pytest.mark.slow
def test_r36_image_on_emulated_aarch64(tmp_path: Path):
    """The R36.4 image built under qemu from a plain base (cuda_from: apt): CUDA and cuDNN
    from the stand-in of NVIDIA's Jetson apt repository (the toolkit in the build stage,
    the libraries in the final one); torch from PyPI's aarch64 CPU wheel; torchvision,
    pycuda's build (the stand-in toolkit has nothing to build against), TensorRT (the
    stand-in repository has none) and torch2trt off; L4T from the build argument."""
    wheel = torch_aarch64_wheel()
    release = matrix_mod.load().release("36.4.0")
    # The row's cuSPARSELt (the torch role installs it for the row): NVIDIA's download is not
    # reachable here, so its stand-in, as a file in the build context.
    cusparselt = build_cusparselt_archive(release.cusparselt.version, "aarch64", tmp_path)
    stage("r36.4.0", {wheel.name: wheel, cusparselt.name: cusparselt})
    with standin_apt([release]) as apt_repo:
        built = build(
            "r36.4.0",
            stand_in_base("arm64", trusted_ca=apt_repo.tls.ca),
            {
                **apt_repo.playbook_vars(),
                "torch_wheel_file": f"{IN_BUILD}/{wheel.name}",
                "torch_cusparselt_archive_file": f"{IN_BUILD}/{cusparselt.name}",
                "torchvision_enabled": False,
                "tensorrt_from_apt": False,
                # The stand-in toolkit has no headers, nvcc or libcuda to build against.
                "pycuda_build": False,
                "torch2trt_enabled": False,
            },
        )
    tag = built["tag"]
    assert run_in(tag, "uname", "-m").stdout.strip() == "aarch64"
    assert_nothing_of_the_build_remains(tag)
    # The final stage has JetPack's runtime libraries, not the toolkit, and keeps the
    # repository listed (signed-by its verified key) for whatever else a user installs.
    status = run_in(
        tag, "dpkg-query", "-W", "-f", "${Package} ${Status}\n",
        *release.jetpack_packages["runtime"], *release.jetpack_packages["build"],
    ).stdout  # fmt: skip
    installed = {line.split()[0] for line in status.splitlines() if "ok installed" in line}
    assert installed == set(release.jetpack_packages["runtime"]), status
    source = run_in(tag, "cat", roles.default("jetpack_apt", "source_file")).stdout
    assert f"{apt_repo.url} r36.4 main" in source

    code, findings = doctor_findings(tag, timeout=1200)

    assert code == 1
    assert findings["torch"]["summary"].startswith("torch 2.5.0"), findings["torch"]
    assert findings["termcolor"]["status"] == "ok", findings["termcolor"]
    assert findings["torchvision"]["status"] == "fail"
    assert findings["torchvision"]["summary"].startswith("torchvision is not installed")
    assert findings["torch2trt"]["status"] == "fail"
    # its fix is of use only with a GPU, and the emulated image has none: the doctor's one
    # "left out" step, no role (as the x86 image's)
    assert findings["torch2trt"]["remedy"] == doctor_mod.LEFT_OUT_WITHOUT_A_GPU.shell
    assert findings["torch2trt"]["playbook"] is None


def old_python_base(version: str) -> str:
    """A stand-in for a JetPack 4 or 5 base: the amd64 stand-in whose /usr/bin/python3 is
    pyenv's genuine CPython `version` (the base's own Python, which the roles provision and
    Ansible's modules run in), with Debian's python3.11 beside it (the Python 3.10+ for
    Ansible's controller side that the build finds on PATH; on NVIDIA's r35 base uv installs
    one). x86: the subject is the build's Pythons, not an aarch64 binary."""
    root = required(version)
    short = version.rsplit(".", 1)[0]
    lines = [f"FROM {stand_in_base('amd64')}", f"COPY rootfs/ {root}/",
             f"RUN ln -sf {root}/bin/python{short} /usr/bin/python3"]  # fmt: skip
    context = BuildContext("\n".join(lines) + "\n", tree=root)
    tag = f"jetson-env-image-base:amd64-python{short}-{context.digest}"
    return _ensure_image(tag, lambda: context.build(tag))


# What an x86 stand-in of an aarch64 JetPack base cannot have: NVIDIA's aarch64 wheels and
# CUDA, Ubuntu's package names. The build then provisions the Python it has (python_base).
OLD_BASE_VARS = {**OFFLINE_VARS, "torch_enabled": False}


@pytest.mark.slow(keyed=True)
@pytest.mark.parametrize(("name", "python", "core"), [("r35.4.1", "3.8.18", "2.19."),
                                                      ("r32.7.1", "3.6.15", "2.16.")])  # fmt: skip
def test_a_jetpack_4_or_5_image_builds_with_its_own_python_provisioned(name, python, core):
    """Issue 44: the r35 line (Python 3.8) and the r32 line (3.6, from a base that has a Python
    3.10+ beside it: NVIDIA's has none, `images build` says so) build. Ansible's controller side
    runs in the Python 3.10+, with the ansible-core the matrix prescribes for the base's Python,
    and the roles provision the base's own python3; jetson-env in the image runs the doctor."""
    # --no-cache: the steps' own lines are in the log only where the steps ran (a CI machine
    # that kept Docker's cache printed "Using cache" for every one), and a cached step keeps
    # what pip resolved on an earlier day.
    built = build(name, old_python_base(python), OLD_BASE_VARS, "--no-cache")
    log = Path(built["log"]).read_text()
    assert "Using cache" not in log
    short = python.rsplit(".", 1)[0]
    assert f"ansible-core {core}" in log and f"in the base's Python {short}" in log, log[-3000:]
    tag = built["tag"]
    assert_nothing_of_the_build_remains(tag)
    assert run_in(tag, "python3", "-c", "import termcolor, numpy").returncode == 0

    _, findings = doctor_findings(tag)

    assert findings["termcolor"]["status"] == "ok", findings["termcolor"]
    version = run_in(tag, "jetson-env", "info", "--json").stdout
    assert json.loads(version)["platform"]["python"]["version"] == python
