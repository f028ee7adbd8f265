"""The torchvision role building pytorch/vision's real release source on an x86 test host.

The host is the x86 host image plus Debian bookworm's own torch (python3-torch 1.13.1 and
libtorch-dev's headers, which extensions compile against); Debian built it from a tree
without version information, so it reports itself as 1.13.0a0. It pairs with torchvision
0.14.x, and 0.14.1 is the release Debian pairs with it: pytorch/vision's v0.14.1 release
tarball, from Debian's source archive (tests/support/debian_source.py), pinned by sha256
in the matrix and given to the role as a file on the controller.

Under these conditions the role builds the real setup.py (11.6 minutes on 2 cores, see
tests/README.md), so the provisioning tests are the `slow` tier until the built wheel is in
the controller's cache, keyed by the build's inputs (the role's build files among them);
from then on they install that wheel and run in the default tier. The bad-archive tests need
no build and always run.
"""

import json
import re
import shutil
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from playbook_support import (
    ROLES_DIR,
    PlayResult,
    pip_version,
    remove_host,
    run_playbook,
    start_host,
    write_inventory,
)
from support.ansible_envs import ANSIBLE_ENDS
from support.debian_source import vision_archive_sha256, vision_source_archive
from support.debian_torch import DEBIAN_TORCH, debian_torch_image
from support.hosts import (
    CACHE,
    VENV,
    Host,
    short_hash,
)

from jetson_env import matrix, roles

pytestmark = pytest.mark.hosts

# One end of the Ansible range is enough here: the playbook tests run both.
NEWEST = ANSIBLE_ENDS["newest"]
VISION = "0.14.1"
OTHER_VISION = "0.21.0"  # a real archive of another version, for the mismatch test
# The build's apt packages: the compiler, ninja (parallel jobs), Python's headers, and the
# image libraries torchvision's setup.py looks for.
BUILD_APT_PACKAGES = [
    "g++",
    "ninja-build",
    "python3-dev",
    "libjpeg-dev",
    "libpng-dev",
    "zlib1g-dev",
]
ROLES_OFF = (
    "cuda_env",
    "python_base",
    "torch",
    "pycuda",
    "tensorrt",
    "torch2trt",
    "docker_runtime",
)
# The folders of the role that say how it builds (tasks, scripts, variables, defaults); its
# argument specs do not.
ROLE_BUILD_FOLDERS = ("tasks", "files", "templates", "vars", "defaults")


def role_build_digest(role: Path) -> str:
    """A hash of every file the role builds with, by path and content."""
    files = sorted(
        path for folder in ROLE_BUILD_FOLDERS for path in (role / folder).rglob("*")
        if path.is_file()
    )  # fmt: skip
    return short_hash(*(part for path in files
                        for part in (str(path.relative_to(role)), path.read_bytes())))  # fmt: skip


def wheel_cache(build_inputs: dict) -> Path:
    """The wheel cache's folder for these build inputs."""
    return CACHE / "torchvision-upstream" / short_hash(json.dumps(build_inputs, sort_keys=True))


# Every input the built wheel depends on; its hash names the wheel cache's folder.
BUILD_INPUTS = {
    "archive_sha256": vision_archive_sha256(VISION),
    "torch": DEBIAN_TORCH,
    "python": "cp311",
    "arch": "x86_64",
    "apt": BUILD_APT_PACKAGES,
    "env": {"FORCE_CUDA": None, "TORCH_CUDA_ARCH_LIST": None},
    "role": role_build_digest(ROLES_DIR / "torchvision"),
}
BUILD_DIR = roles.default("torchvision", "build_dir")  # removed after a build
WHEEL_CACHE = wheel_cache(BUILD_INPUTS)


def cached_wheels() -> list[Path]:
    return sorted(WHEEL_CACHE.rglob("torchvision-*.whl"))


WHEEL_WAS_CACHED = bool(cached_wheels())


def slow_until_cached(test: Callable) -> Callable:
    """The `slow` tier while the wheel must be built; the default tier once it is cached."""
    return test if WHEEL_WAS_CACHED else pytest.mark.slow(test)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("torchvision-upstream")


def vision_host(name: str) -> Host:
    return start_host("x86-debian12", name, image=debian_torch_image())


def only_torchvision(work: Path, host: Host) -> Path:
    """An inventory of `host` with every role but torchvision off, VISION from its archive."""
    variables = {
        **{f"{role}_enabled": False for role in ROLES_OFF},
        "torchvision_version": VISION,
        "torchvision_source_archive": str(vision_source_archive(VISION)),
        "torchvision_wheel_cache": str(WHEEL_CACHE),
        "torchvision_apt_packages": BUILD_APT_PACKAGES,
    }
    return write_inventory(
        work / f"{host.name}.yml", {"vision": {"ansible_host": host.container}}, variables
    )


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    """The host provisioned by the `provisioned` fixture."""
    host = vision_host("playbook-x86-vision")
    yield host
    remove_host(host)


@pytest.fixture(scope="module")
def inventory(work: Path, host: Host) -> Path:
    return only_torchvision(work, host)


@pytest.fixture(scope="module")
def untouched(work: Path) -> Iterator[tuple[Host, Path]]:
    """A host of its own for the runs that must stop before any change, and its inventory:
    never provisioned, whatever ran before."""
    host = vision_host("playbook-x86-vision-untouched")
    yield host, only_torchvision(work, host)
    remove_host(host)


def test_debian_pairs_this_torchvision_with_this_torch(host: Host):
    """The pairing rule's oracle for a pre-release torch (jetson_env.pairing): Debian's own
    torchvision of this release depends on the libtorch of the torch that reports 1.13.0a0."""
    show = host.exec(["apt-cache", "show", "python3-torchvision"]).stdout
    fields = dict(re.findall(r"^(Version|Depends): (.*)$", show, re.M))
    torch = host.exec(["python3", "-c", "import torch; print(torch.__version__)"]).stdout.strip()

    assert fields["Version"].startswith(f"{VISION}-"), fields
    assert re.search(r"\blibtorch1\.13 \(>= 1\.13\.1\+dfsg\)", fields["Depends"]), fields
    assert torch == "1.13.0a0"
    assert matrix.load().torchvision_pair(torch).admits(VISION)


def assert_nothing_changed(result: PlayResult, host: Host) -> None:
    assert result.rc != 0
    assert result.changed("vision") == 0
    assert pip_version(host, "torchvision") is None
    assert host.exec(["test", "-e", BUILD_DIR], check=False).returncode


def test_archive_of_another_version_stops_before_any_change(untouched: tuple[Host, Path]):
    host, inventory = untouched
    other = vision_source_archive(OTHER_VISION)

    result = run_playbook(
        NEWEST.ensure(), inventory, extra_vars={"torchvision_source_archive": str(other)}
    )

    assert_nothing_changed(result, host)
    message = result.messages()
    assert f"{other} is not torchvision {VISION} (torchvision_version)" in message
    assert f"its version.txt says {OTHER_VISION}" in message
    assert f"Give the source archive of v{VISION}" in message


def test_archive_with_another_sha256_stops_before_any_change(untouched: tuple[Host, Path]):
    host, inventory = untouched
    result = run_playbook(
        NEWEST.ensure(), inventory, extra_vars={"torchvision_source_sha256": "0" * 64}
    )

    assert_nothing_changed(result, host)
    message = result.messages()
    assert f"sha256 mismatch for {vision_source_archive(VISION)}: expected {'0' * 64}" in message
    assert f"got {vision_archive_sha256(VISION)}. Nothing was changed." in message


def task_seconds(result: PlayResult, name_part: str) -> float:
    """How long the task whose name contains `name_part` ran, from the json callback's times."""
    for task in result.tasks():
        if name_part in task["task"]["name"] and not task["hosts"]["vision"].get("skipped"):
            duration = task["task"]["duration"]
            start, end = (datetime.fromisoformat(duration[k].rstrip("Z")) for k in ("start", "end"))
            return (end - start).total_seconds()
    raise AssertionError(f"no task '{name_part}' ran")


def test_the_wheel_cache_follows_the_roles_build_files(tmp_path: Path):
    """A change to how the role builds (its build tasks) is a new cache folder: the wheel is
    built again, not taken from a build by the role as it was."""
    role = tmp_path / "torchvision"
    shutil.copytree(ROLES_DIR / "torchvision", role)
    assert role_build_digest(role) == BUILD_INPUTS["role"]
    build_tasks = role / "tasks" / "build.yml"
    build_tasks.write_text(build_tasks.read_text().replace("MAX_JOBS", "MAX_JOBS_CHANGED"))
    changed = role_build_digest(role)
    assert changed != BUILD_INPUTS["role"]
    assert wheel_cache({**BUILD_INPUTS, "role": changed}) != WHEEL_CACHE


@pytest.fixture(scope="module")
def provisioned(inventory: Path, host: Host) -> PlayResult:
    """The first run on `host`: torchvision installed, the wheel in the controller's cache, no
    build tree."""
    result = run_playbook(NEWEST.ensure(), inventory)
    assert result.rc == 0, result.messages() or result.stderr
    assert pip_version(host, "torchvision") == VISION
    (wheel,) = cached_wheels()
    assert wheel.name.startswith(f"torchvision-{VISION}-cp311-cp311-linux_x86_64")
    assert wheel.parent.name == f"x86_64-x86-cp311-torch1.13.0a0-torchvision{VISION}"
    assert host.exec(["test", "-e", BUILD_DIR], check=False).returncode
    return result


@pytest.mark.skipif(WHEEL_WAS_CACHED, reason="a wheel of these build inputs is cached: "
                    "test_provision_installs_the_cached_wheel runs instead")  # fmt: skip
@pytest.mark.slow
def test_provision_builds_the_release_source(provisioned: PlayResult):
    result = provisioned

    assert result.task_hosts("Build the torchvision wheel") == {"vision"}
    build = next(t for t in result.tasks() if "Build the torchvision wheel" in t["task"]["name"])
    # torch's extension builder says so on stderr when ninja runs the build's jobs.
    output = build["hosts"]["vision"]["stderr"]
    jobs = re.search(r"Using envvar MAX_JOBS \((\d+)\)", output)
    assert jobs and int(jobs.group(1)) >= 1, output[-2000:]
    seconds = task_seconds(result, "Build the torchvision wheel")
    print(f"\ntorchvision {VISION} built in {seconds:.0f} s")


@pytest.mark.skipif(not WHEEL_WAS_CACHED, reason="no wheel of these build inputs is cached: "
                    "test_provision_builds_the_release_source builds it (slow tier)")  # fmt: skip
def test_provision_installs_the_cached_wheel(provisioned: PlayResult):
    assert provisioned.task_hosts("Build the torchvision wheel") == set()


RUN_FROM_A_NEUTRAL_FOLDER = """
import os
os.chdir("/")
import torch, torchvision
from torchvision.ops import nms, roi_align
boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [20.0, 20.0, 30.0, 30.0]])
scores = torch.tensor([0.9, 0.8, 0.7])
features = torch.arange(64.0).reshape(1, 1, 8, 8)
pooled = roi_align(features, [torch.tensor([[0.0, 0.0, 4.0, 4.0]])], output_size=2)
model = torchvision.models.resnet18().eval()
with torch.no_grad():
    logits = model(torch.rand(1, 3, 64, 64))
print(torchvision.__version__, torchvision.__file__, getattr(torchvision.version, "cuda", None))
print(nms(boxes, scores, 0.5).tolist())
print(list(pooled.shape), list(logits.shape), bool(torch.isfinite(logits).all()))
"""


@slow_until_cached
def test_release_runs_its_ops_and_a_model(host: Host, provisioned: PlayResult):
    out = host.exec(["python3", "-c", RUN_FROM_A_NEUTRAL_FOLDER]).stdout.splitlines()

    version, location, cuda = out[0].split()
    assert version == VISION
    assert location == "/usr/local/lib/python3.11/dist-packages/torchvision/__init__.py"
    assert cuda == "None"  # no CUDA on the test host: FORCE_CUDA was not set
    assert out[1] == "[0, 2]"
    assert out[2] == "[1, 1, 2, 2] [1, 1000] True"


@slow_until_cached
def test_second_run_changes_nothing(inventory: Path, provisioned: PlayResult):
    result = run_playbook(NEWEST.ensure(), inventory)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("vision") == 0, result.changed_tasks("vision")


@slow_until_cached
def test_doctor_reports_torchvision_paired(host: Host, provisioned: PlayResult):
    host.install_project()
    result = host.exec(
        [f"{VENV}/bin/jetson-env", "doctor", "--json", "--python", "/usr/bin/python3",
         "--check", "torchvision"],
        check=False,
    )  # fmt: skip
    findings = {f["check"]: f for f in json.loads(result.stdout)["findings"]}

    assert findings["torchvision"]["status"] == "ok", findings
    assert findings["torchvision"]["summary"] == (
        f"torchvision {VISION} (pairs with torch 1.13.0a0); ops.nms works on CPU"
    )
