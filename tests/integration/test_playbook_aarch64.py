"""playbooks/jetson.yml against an emulated aarch64 Jetson (Orin, L4T R36.4.3): an unknown
L4T release refused before any change, --check on a fresh and on a provisioned host,
a full run, idempotence and the doctor agreeing inside the host.

The Orin starts without CUDA (flashed, JetPack's components not installed) and without
JetPack's apt source list: jetpack_apt adds the stand-in of NVIDIA's Jetson apt
repository (tests/support/standin_apt.py, HTTPS on loopback, signed) with its key
verified on the controller, and installs the matrix's CUDA and cuDNN packages from it;
cuda_env then manages the toolkit those packages put in place. A Xavier whose JetPack
source list exists keeps it; a key that does not match its pin, or a plain-http
repository, stops the play before any host changes.

torch is PyPI's real aarch64 torch 2.5.0 wheel (the matrix's torch for R36.4.x; a CPU
build with no nvidia-* dependencies on aarch64) given as a file on the controller; its
dependencies come from PyPI inside the host. Off here, each for a stated reason:
torchvision (its fixture build takes over 3 minutes under qemu; the x86 tests cover the
build and the wheel cache), TensorRT from apt (the stand-in repository has none: its
bindings would have to import), pycuda's build
(no CUDA driver) and torch2trt (no TensorRT). Tests run in file order and share the
host `playbook-orin`.

The tests whose subject is a role's rule on a Jetson's release files, not an aarch64 binary
(the unknown release, the Xavier's own source list, the unverified repository, JetPack 4's
CSV gate), run on x86 hosts with that Jetson's release files and device tree
(`start_x86_with_files_of`), each a container of its own: under qemu they took 20-100 s each.

The real provisioning (--check before it, the full run, the second run, --check after
them) and the tests of the provisioned Orin (the doctor inside it, the user's promise) are
keyed by their inputs (PROVISION_INPUTS and the Ansible end): once green in the record
(tests/slow-tier-green.json) they are the slow tier until one of them changes
(tests/README.md, "The slow tier"). The tests that need a provisioned Orin (the second run,
--check after it, the doctor, the user's promise) take it from `provisioned_orin`: the state
the first run kept, else one it provisions and keeps itself (tests/support/provisioned.py),
so each gives the same verdict alone, in any selection and on any worker.
"""

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from playbook_support import (
    CHANGE_REPORTING,
    CHECK_MODE,
    JETPACK_4,
    MODULE_ARGUMENTS,
    NO_PLAYBOOK,
    ROLE_RULE,
    declared,
    declared_tasks,
    downloaded_wheel,
    from_an_unrelated_folder,
    paths_changed_since,
    pip_version,
    provision_inputs,
    remove_host,
    run_playbook,
    start_host,
    start_x86_with_files_of,
    vars_for_test_hosts,
    write_inventory,
)
from support.ansible_envs import AnsibleEnd
from support.hosts import FIXTURES, VENV, Host, project_wheel
from support.provisioned import ProvisionedState
from support.standin_apt import StandinApt, standin_apt, trust_in_host
from support.standins import build_cusparselt_archive, stage_container_runtime

from jetson_env import matrix as matrix_mod
from jetson_env import roles
from jetson_env.probes import cuda as cuda_probe

pytestmark = pytest.mark.hosts

ORIN = "orin-r36.4.3"
TORCH_VERSION = "2.5.0"
NUMPY_PIN = "1.26.1"  # the matrix's r36 family: numpy==1.26.1 (cp311 aarch64 wheel exists)
CUDA_ROOT = "/usr/local/cuda"  # the fixture's symlink to cuda-12.6, as the probe reports it
PROFILE_SCRIPT = roles.default("cuda_env", "profile_file")
LD_CONF = roles.default("cuda_env", "ldconfig_file")
DAEMON_JSON = roles.default("docker_runtime", "daemon_json")
PRE_EXISTING_DAEMON_JSON = {"data-root": "/srv/docker"}
MARKER = "/var/tmp/jetson-env-test-marker"
OUR_SOURCE = roles.default("jetpack_apt", "source_file")
OUR_KEYRING = roles.default("jetpack_apt", "keyring")
JETPACK_SOURCE = roles.default("jetpack_apt", "existing_source")
# What provisioning the emulated Orin depends on: the roles and what they import (jetson_env,
# the matrix), this module's variables and stand-ins, the host images' recipe and fixtures.
PROVISION_INPUTS = provision_inputs(
    __file__, "tests/fixtures/hosts", "tests/fixtures/cusparselt", "tests/fixtures/docker"
)


# The real provisioning and what needs a provisioned Orin: the slow tier while green for these
# inputs.
PROVISIONING = pytest.mark.slow(keyed=True)
# What --check may change on a fresh host: it fetches apt's package lists (see python_base).
CHECK_MODE_WRITES = ("/var/lib/apt/lists", "/var/cache/apt", "/var/log/apt")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, ansible: AnsibleEnd) -> Path:
    """Per end of the Ansible range: its own controller caches, lock file and inventories."""
    return tmp_path_factory.mktemp(f"playbook-aarch64-{ansible.name}")


@pytest.fixture(scope="module")
def torch_wheel() -> Path:
    return downloaded_wheel("torch", TORCH_VERSION, "manylinux2014_aarch64")


@pytest.fixture(scope="module")
def apt_repo(ansible: AnsibleEnd) -> Iterator[StandinApt]:
    """Per end, on a steady port: the provisioned Orin's apt sources name its URL."""
    releases = [matrix_mod.load().release("36.4.3")]
    with standin_apt(releases, steady_as=f"playbook-aarch64-{ansible.name}") as repo:
        yield repo


@pytest.fixture(scope="module")
def apt_repo_x86() -> Iterator[StandinApt]:
    """The repository for the x86 hosts that stand in for a Nano, a Xavier or an Orin (same
    key and CA)."""
    releases = [matrix_mod.load().release(l4t) for l4t in ("32.4.3", "35.4.1", "36.4.3")]
    with standin_apt(releases, arch="amd64") as repo:
        yield repo


@pytest.fixture(scope="module")
def tls_env(apt_repo: StandinApt) -> dict:
    """The controller trusts the stand-in repository's CA (its key is downloaded there)."""
    return {"SSL_CERT_FILE": str(apt_repo.tls.bundle)}


def cusparselt_archive(work: Path) -> Path:
    """A stand-in of the matrix's cuSPARSELt archive for R36.4.x, built for aarch64."""
    return build_cusparselt_archive(
        matrix_mod.load().release("36.4.3").cusparselt.version, "aarch64", work
    )


def orin_vars(work: Path, torch_wheel: Path, apt_repo: StandinApt) -> dict:
    """The play's variables, its controller's files in `work`."""
    return {
        **vars_for_test_hosts(work, torch_wheel),
        **apt_repo.playbook_vars(),
        # NVIDIA's download is not reachable: the stand-in, as a file on the controller.
        "torch_cusparselt_archive_file": str(cusparselt_archive(work)),
        "jetpack_apt_controller_cache": str(work / "cache" / "apt-keys"),
        "torchvision_enabled": False,
        "tensorrt_from_apt": False,
        "pycuda_build": False,
        # pip's bytecode compiling is most of an install under qemu (torch's wheel: 59 s,
        # 22 s without): the roles' own pip arguments skip it on the emulated hosts.
        "torch_pip_args": ["--no-compile"],
        "python_base_pip_args": ["--no-compile"],
    }


@pytest.fixture(scope="module")
def common_vars(work: Path, torch_wheel: Path, apt_repo: StandinApt) -> dict:
    return orin_vars(work, torch_wheel, apt_repo)


def start_fresh_orin(name: str, work: Path, apt_repo: StandinApt) -> Host:
    """An Orin flashed, JetPack's CUDA not installed yet; the site's CA trusted."""
    host = start_host(ORIN, name)
    host.exec(["rm", "-rf", "/usr/local/cuda", "/usr/local/cuda-12.6"])
    trust_in_host(host, apt_repo.tls)
    host.exec(["mkdir", "-p", "/etc/docker"])
    seed = work / "daemon.seed.json"
    seed.write_text(json.dumps(PRE_EXISTING_DAEMON_JSON))
    host.copy_in(seed, DAEMON_JSON)
    stage_container_runtime(host)  # the nvidia runtime is registered where it is installed
    return host


@dataclass(frozen=True)
class FreshOrin:
    host: Host
    work: Path  # its controller's folder: lock file, caches
    playbook_vars: dict
    inventory: Path


@pytest.fixture
def fresh_orin(tmp_path: Path, torch_wheel: Path, apt_repo: StandinApt) -> Iterator[FreshOrin]:
    """An Orin that never saw the roles and a controller folder of its own, whatever ran
    before in this module."""
    host = start_fresh_orin("playbook-orin", tmp_path, apt_repo)
    try:
        playbook_vars = orin_vars(tmp_path, torch_wheel, apt_repo)
        hosts = {"orin": {"ansible_host": host.container}}
        inventory = write_inventory(tmp_path / "inventory.yml", hosts, playbook_vars)
        yield FreshOrin(host, tmp_path, playbook_vars, inventory)
    finally:
        remove_host(host)


@pytest.fixture(scope="module")
def orin_state(ansible: AnsibleEnd, apt_repo: StandinApt, torch_wheel: Path) -> ProvisionedState:
    """The provisioned Orin, keyed by PROVISION_INPUTS, the end, and what of the session's
    stand-in repository reaches the host (its URL, key and CA)."""
    recipe = {
        "apt": apt_repo.playbook_vars(),
        "ca": hashlib.sha256(apt_repo.tls.ca.read_bytes()).hexdigest(),
        "torch": torch_wheel.name,
    }
    return ProvisionedState(ORIN, ansible.name, PROVISION_INPUTS, recipe)


@dataclass(frozen=True)
class Provisioned:
    host: Host
    inventory: Path  # the host as `orin`, with the variables that provisioned it


@pytest.fixture(scope="module")
def provisioned_orin(
    tmp_path_factory: pytest.TempPathFactory,
    ansible: AnsibleEnd,
    orin_state: ProvisionedState,
    torch_wheel: Path,
    apt_repo: StandinApt,
    tls_env: dict,
) -> Iterator[Provisioned]:
    """A provisioned Orin and its controller: a container of the kept state, else a fresh
    Orin provisioned here (and kept)."""
    work = tmp_path_factory.mktemp(f"orin-provisioned-{ansible.name}")
    name = "playbook-orin-provisioned"

    def start(image: str | None) -> Host:
        if image:
            return start_host(ORIN, name, image=image)
        return start_fresh_orin(name, work, apt_repo)

    def provision(host: Host, work: Path) -> dict:
        playbook_vars = orin_vars(work, torch_wheel, apt_repo)
        hosts = {"orin": {"ansible_host": host.container}}
        inventory = write_inventory(work / "inventory.yml", hosts, playbook_vars)
        result = run_playbook(ansible, inventory, env=tls_env)
        assert result.rc == 0, result.messages() or result.stderr
        return playbook_vars

    host, playbook_vars = orin_state.host(work, start, provision)
    hosts = {"orin": {"ansible_host": host.container}}
    inventory = write_inventory(work / "inventory.yml", hosts, playbook_vars)
    yield Provisioned(host, inventory)
    remove_host(host)


def mark(host: Host) -> None:
    """Touch the marker that paths_changed_since() compares with."""
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])


@ROLE_RULE
def test_unknown_l4t_release_fails_before_any_change(
    ansible: AnsibleEnd, work: Path, common_vars: dict
):
    host = start_x86_with_files_of(ORIN, "playbook-orin-unknown")
    try:
        host.exec(["sed", "-i", "s/REVISION: 4.3,/REVISION: 9.1,/", "/etc/nv_tegra_release"])
        lock = work / "unknown.lock.yml"
        inventory = write_inventory(
            work / "unknown.yml",
            {"orin-unknown": {"ansible_host": host.container}},
            {**common_vars, "torch_lock_file": str(lock)},
        )
        mark(host)

        result = run_playbook(ansible, inventory)

        assert result.rc != 0
        assert result.failed("orin-unknown") == 1
        assert result.changed("orin-unknown") == 0
        message = result.messages()
        with pytest.raises(matrix_mod.UnknownRelease) as unknown:  # its message lists the supported
            matrix_mod.load().release("36.9.1")
        assert f"{unknown.value} (orin-unknown). Nothing was changed." in message
        assert result.task_hosts("Fetch torch to the controller") == set()
        assert not lock.exists()
        assert paths_changed_since(host, MARKER) == set()

        # A point release of a known line: refused unless the named variable opts in.
        host.exec(["sed", "-i", "s/REVISION: 9.1,/REVISION: 4.99,/", "/etc/nv_tegra_release"])
        mark(host)
        refused = run_playbook(ansible, inventory)
        assert refused.rc != 0 and refused.changed("orin-unknown") == 0
        assert "set jetson_facts_allow_newer_point_release=true" in refused.messages()
        assert paths_changed_since(host, MARKER) == set()

        opted_in = run_playbook(
            ansible, inventory,
            extra_vars={**ALL_ROLES_OFF, "jetson_facts_allow_newer_point_release": True},
        )  # fmt: skip
        assert opted_in.rc == 0, opted_in.messages() or opted_in.stderr
        newest = matrix_mod.load().newest_of_line("36.4.99").l4t
        said = opted_in.task_result("Say which row stands in", "orin-unknown")["msg"]
        assert f"L4T R36.4.99 has no row of its own; provisioning with R{newest}'s" in said
    finally:
        remove_host(host)


@CHECK_MODE
@PROVISIONING
def test_check_mode_on_a_fresh_orin(ansible: AnsibleEnd, fresh_orin: FreshOrin, tls_env: dict):
    orin, work = fresh_orin.host, fresh_orin.work
    mark(orin)

    result = run_playbook(ansible, fresh_orin.inventory, check=True, env=tls_env)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.failed("orin") == 0
    assert result.changed("orin") > 0  # what a real run would change
    changed = paths_changed_since(orin, MARKER)
    assert {p for p in changed if not p.startswith(CHECK_MODE_WRITES)} == set()
    assert pip_version(orin, "torch") is None
    assert not (work / "jetson-env.lock.yml").exists()
    # Nothing changed on the controller either: the key was not downloaded, only named.
    assert not (work / "cache" / "apt-keys").exists()
    assert result.task_hosts("Say what --check would fetch") == {"orin"}
    # The repository would be added first, so its packages are not looked up.
    assert result.task_hosts("cannot be checked in --check") == {"orin"}
    assert orin.exec(["test", "-e", OUR_SOURCE], check=False).returncode == 1


@MODULE_ARGUMENTS
@PROVISIONING
def test_provision_orin(
    ansible: AnsibleEnd,
    fresh_orin: FreshOrin,
    torch_wheel: Path,
    apt_repo: StandinApt,
    tls_env: dict,
    orin_state: ProvisionedState,
):
    orin, work = fresh_orin.host, fresh_orin.work
    result = run_playbook(ansible, fresh_orin.inventory, env=tls_env)
    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("orin") > 0

    # NVIDIA's repository (the stand-in) added for the release's suite, signed-by the key
    # the controller verified; the matrix's CUDA and cuDNN packages installed from it.
    source = orin.exec(["cat", OUR_SOURCE]).stdout
    assert f"deb [signed-by={OUR_KEYRING}] {apt_repo.url} r36.4 main" in source.splitlines()
    keyring = orin.exec(["sha256sum", OUR_KEYRING]).stdout.split()[0]
    assert keyring == apt_repo.key.binary_sha256
    packages = matrix_mod.load().release("36.4.3").jetpack_packages["build"]
    assert packages == ("cuda-toolkit-12-6", "libcudnn9-dev-cuda-12")
    for package in packages:
        status = orin.exec(["dpkg-query", "-W", "-f", "${Status}", package]).stdout
        assert status == "install ok installed", package
    owner = orin.exec(["dpkg", "-S", "/usr/local/cuda-12.6/version.json"]).stdout
    assert owner.startswith("cuda-toolkit-12-6:")

    # cuSPARSELt (the torch wheels of R36.4 load it): the archive verified and locked on the
    # controller, unpacked into its own folder and listed for the loader, before torch.
    archive = Path(fresh_orin.playbook_vars["torch_cusparselt_archive_file"])
    lock = yaml.safe_load((work / "jetson-env.lock.yml").read_text())
    assert lock["sha256"][archive.name] == hashlib.sha256(archive.read_bytes()).hexdigest()
    cusparselt = matrix_mod.load().release("36.4.3").cusparselt
    libdir = f"/opt/nvidia/cusparselt-{cusparselt.version}/lib"
    conf = orin.exec(["cat", roles.default("torch", "cusparselt_ld_conf")]).stdout
    assert libdir in conf.splitlines()
    cache = orin.exec(["ldconfig", "-p"]).stdout
    assert f"libcusparseLt.so.0 (libc6,AArch64) => {libdir}/libcusparseLt.so.0" in cache, cache
    names = [task["task"]["name"] for task in result.tasks()]
    unpacked = next(i for i, n in enumerate(names) if "Unpack cuSPARSELt" in n)
    installed = next(i for i, n in enumerate(names) if "Install the verified torch wheel" in n)
    assert unpacked < installed

    # CUDA 12.6 from the package: a login script adding each directory once, and the loader.
    script = orin.exec(["cat", PROFILE_SCRIPT]).stdout
    assert f"# CUDA 12.6.68 at {CUDA_ROOT}:" in script
    sourced_twice = orin.exec(
        ["sh", "-c", f". {PROFILE_SCRIPT}; . {PROFILE_SCRIPT}; "
         'printf "%s\\n" "$CUDA_HOME" "$PATH" "$LD_LIBRARY_PATH" "$CPATH" "$LIBRARY_PATH"'],
        env={"PATH": "/usr/bin:/bin", "CPATH": "/opt/include"},
    ).stdout.splitlines()  # fmt: skip
    assert sourced_twice == [
        CUDA_ROOT,
        f"{CUDA_ROOT}/bin:/usr/bin:/bin",
        f"{CUDA_ROOT}/lib64",
        f"{CUDA_ROOT}/include:/opt/include",
        f"{CUDA_ROOT}/lib64",
    ]
    assert orin.exec(["readlink", "-f", CUDA_ROOT]).stdout.strip() == "/usr/local/cuda-12.6"
    assert f"{CUDA_ROOT}/lib64" in orin.exec(["cat", LD_CONF]).stdout.splitlines()
    scanned = orin.exec(["ldconfig", "-v", "-N"]).stdout
    assert f"{CUDA_ROOT}/lib64: (from {LD_CONF}:2)" in scanned
    # torch: the controller's wheel, its sha256 recorded on first use; dependencies from PyPI.
    probe = "import torch as t; print(t.__version__, t.cuda.is_available(), t.ones(3).sum().item())"
    assert orin.exec(["python3", "-c", probe], env={}).stdout.split() == [
        TORCH_VERSION,
        "False",
        "3.0",
    ]
    lock = yaml.safe_load((work / "jetson-env.lock.yml").read_text())
    assert lock == {
        "sha256": {
            torch_wheel.name: hashlib.sha256(torch_wheel.read_bytes()).hexdigest(),
            archive.name: hashlib.sha256(archive.read_bytes()).hexdigest(),
        }
    }
    for dependency in ("filelock", "typing-extensions", "networkx", "jinja2", "fsspec", "sympy"):
        assert pip_version(orin, dependency), dependency
    assert orin.exec(["python3", "-m", "pip", "check"]).returncode == 0
    # Python base: numpy exactly as the r36 family pins it, termcolor.
    assert pip_version(orin, "numpy") == NUMPY_PIN
    assert pip_version(orin, "termcolor")
    # pycuda: the stand-in toolkit has no cuda.h, which pycuda compiles against, so the role
    # leaves pycuda alone (no siteconf either) and says why.
    said = result.task_result("Say why pycuda is left alone", "orin")["msg"]
    assert f"{CUDA_ROOT}/include/cuda.h is missing" in said
    assert orin.exec(["test", "-e", roles.default("pycuda", "siteconf")], check=False).returncode
    assert pip_version(orin, "pycuda") is None
    # Docker on a Jetson: the nvidia runtime is the default, the other keys kept, a backup.
    daemon = json.loads(orin.exec(["cat", DAEMON_JSON]).stdout)
    assert daemon == {
        **PRE_EXISTING_DAEMON_JSON,
        "default-runtime": "nvidia",
        "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}},
    }
    backups = orin.exec(["sh", "-c", f"ls {DAEMON_JSON}.*~"]).stdout.split()
    assert [json.loads(orin.exec(["cat", b]).stdout) for b in backups] == [PRE_EXISTING_DAEMON_JSON]
    assert pip_version(orin, "torchvision") is None  # off here (see the module docstring)
    # Provisioned: kept for the tests that need a provisioned Orin.
    orin_state.keep(orin, work, fresh_orin.playbook_vars)


@CHANGE_REPORTING
@PROVISIONING
def test_second_run_changes_nothing(
    ansible: AnsibleEnd, provisioned_orin: Provisioned, tls_env: dict
):
    result = run_playbook(ansible, provisioned_orin.inventory, env=tls_env)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("orin") == 0, result.stats


@CHECK_MODE
@PROVISIONING
def test_check_mode_on_a_provisioned_orin(
    ansible: AnsibleEnd, provisioned_orin: Provisioned, tls_env: dict
):
    mark(provisioned_orin.host)

    result = run_playbook(ansible, provisioned_orin.inventory, check=True, env=tls_env)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.failed("orin") == 0
    assert result.changed("orin") == 0, result.stats
    assert paths_changed_since(provisioned_orin.host, MARKER) == set()


@NO_PLAYBOOK
@PROVISIONING
def test_doctor_inside_the_orin_agrees(provisioned_orin: Provisioned):
    orin = provisioned_orin.host
    orin.install_project()
    result = orin.exec(
        [
            f"{VENV}/bin/jetson-env",
            "doctor",
            "--json",
            "--no-smoke",
            "--python",
            "/usr/bin/python3",
        ],
        check=False,
    )
    report = json.loads(result.stdout)
    findings = {}
    for finding in report["findings"]:
        findings.setdefault(finding["check"], []).append(finding)

    assert result.returncode == 1  # no TensorRT, no cuDNN: a Jetson without JetPack's stack
    platform = report["platform"]
    assert (platform["l4t"], platform["jetpack"], platform["compute_capability"]) == (
        "36.4.3",
        "6.2",
        "8.7",
    )
    assert platform["cuda"]["version"] == "12.6.68"
    (platform_finding,) = findings["platform"]
    assert platform_finding["status"] == "ok"
    assert "L4T R36.4.3 (JetPack 6.2), compute capability 8.7" in platform_finding["summary"]
    (termcolor,) = findings["termcolor"]
    assert termcolor["status"] == "ok"
    # The playbook's torch, judged for a Jetson: the right version, but PyPI's CPU build.
    (torch,) = findings["torch"]
    assert torch["summary"].startswith(f"torch {TORCH_VERSION} is a CPU-only build")
    # The playbook's login script gives new shells CUDA's bin, but the stand-in toolkit has no
    # nvcc: the finding says so and names JetPack's packages, not the script.
    # (There is no C compiler without torchvision's build packages, so no cuda.h finding.)
    cuda = {f["summary"].split(":")[0]: f for f in findings["cuda"]}
    assert cuda[f"CUDA 12.6.68 at {CUDA_ROOT} (from {CUDA_ROOT}/version.json)"]["status"] == "ok"
    nvcc = cuda[f"nvcc is not on PATH and the toolkit at {CUDA_ROOT} has none "
                f"({CUDA_ROOT}/bin/nvcc)"]  # fmt: skip
    assert nvcc["status"] == "warn" and "apt-get install" in nvcc["remedy"], nvcc
    # The stand-in cuDNN package has no library: the remedy names the matrix's packages,
    # the ones the playbook installs.
    (cudnn,) = findings["cudnn"]
    assert cudnn["status"] == "fail"
    assert cudnn["remedy"].endswith("apt-get install -y cuda-toolkit-12-6 libcudnn9-dev-cuda-12")


# Only jetpack_apt (and the facts it needs): the other roles are covered above.
JETPACK_APT_ONLY = {
    "cuda_env_enabled": False,
    "python_base_enabled": False,
    "torch_enabled": False,
    "torchvision_enabled": False,
    "pycuda_enabled": False,
    "tensorrt_enabled": False,
    "torch2trt_enabled": False,
    "docker_runtime_enabled": False,
}
ALL_ROLES_OFF = {**JETPACK_APT_ONLY, "jetpack_apt_enabled": False}


# The roles a user of this emulated Orin turns off, each for a reason of the stand-in: NVIDIA's
# Jetson apt repository and its torch wheel are not reachable (the image's repository was the
# session's stand-in, its torch PyPI's CPU build), no TensorRT, no CUDA driver to build
# against, no Docker engine in a container; pip's bytecode compiling is most of an install
# under qemu.
PROMISE_VARS = {
    **{f"{role}_enabled": False for role in ("jetpack_apt", "torch", "torchvision", "tensorrt",
                                             "pycuda", "torch2trt", "docker_runtime")},
    "python_base_pip_args": ["--no-compile"],
}  # fmt: skip
PROMISE_ROLES = ("cuda_env", "python_base")  # what those leave on
USER_VENV = "/root/jetson-env"


@pytest.fixture
def orin_of_a_user(provisioned_orin: Provisioned, orin_state: ProvisionedState) -> Iterator[Host]:
    """A container of the provisioned Orin's kept state, jetson-env installed as the README
    says: the working tree's wheel with its provision extra into a venv, its dependencies'
    aarch64 wheels from the index the host's pip.conf names."""
    host = start_host(ORIN, "playbook-orin-promise", image=orin_state.tag)
    try:
        wheel = project_wheel()
        host.copy_in(wheel, f"/tmp/{wheel.name}")
        host.exec(["sh", "-c", f"python3 -m venv {USER_VENV} && {USER_VENV}/bin/pip install -q "
                   f"'/tmp/{wheel.name}[provision]'"], timeout=1800)  # fmt: skip
        yield host
    finally:
        remove_host(host)


@pytest.mark.ansible_ends(
    "newest", why="the Orin's own ansible-core (the provision extra's) runs it; the newest "
    "end's provisioned image"
)  # fmt: skip
@PROVISIONING
def test_the_promise_on_the_emulated_orin(orin_of_a_user: Host):
    """Issue 33's promise on the emulated Orin, on the host itself as its user runs it:
    `jetson-env provision` (no -i: this machine, local connection), then `jetson-env doctor`
    with its defaults agrees for what the roles manage; termcolor removed, `jetson-env doctor
    --fix ROLES --yes` (the roles it provisions) makes it green again. No run prints a
    template error or a deprecation. Keyed with the provisioning: under qemu its image's
    provisioning takes most of an hour on 2 cores, and this test 10-20 minutes more."""
    orin = orin_of_a_user
    jetson_env = f"{USER_VENV}/bin/jetson-env"
    off = json.dumps(PROMISE_VARS)

    provision = from_an_unrelated_folder(jetson_env, "--no-color", "provision", "-e", off)
    run = orin.exec(provision, check=False, timeout=1800)

    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-6000:]
    assert re.search(r"localhost\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", run.stdout), (
        said[-6000:]
    )
    # (Debian's python3 is externally managed: the play says so after these words.)
    assert "(/usr/bin/python3: the Python provisioned" in said, said[-6000:]

    def doctor(*args: str) -> tuple[dict, str]:
        command = from_an_unrelated_folder(jetson_env, "--no-color", "doctor", "--json",
                                           "--no-smoke", *args)  # fmt: skip
        proc = orin.exec(command, check=False, timeout=1800)
        return json.loads(proc.stdout), proc.stderr

    report, _ = doctor()
    assert report["platform"]["python"]["executable"] == "/usr/bin/python3"
    # No problem left whose fix is one of the roles provisioned (a finding names its role).
    left = [f for f in report["findings"] if f["status"] in ("warn", "fail", "crash")
            and (f.get("playbook") or {}).get("role") in PROMISE_ROLES]  # fmt: skip
    assert left == [], left
    statuses = {f["check"]: f["status"] for f in report["findings"] if f["check"] == "termcolor"}
    assert statuses == {"termcolor": "ok"}, report["findings"]

    orin.exec(["python3", "-m", "pip", "uninstall", "-y", "-q", "--break-system-packages",
               "termcolor"])  # fmt: skip
    # --fix with the roles the user's provisioning runs (the others are off: see PROMISE_VARS).
    fix = from_an_unrelated_folder(jetson_env, "--no-color", "doctor", "--fix",
                                   ",".join(PROMISE_ROLES), "--yes", "--no-smoke",
                                   "--playbook-vars", off)  # fmt: skip
    fixed = orin.exec(fix, check=False, timeout=1800)
    fix_said = fixed.stdout + fixed.stderr
    assert "termcolor: fixed (python_base)" in fix_said, fix_said[-6000:]
    after, _ = doctor("--check", "termcolor")
    assert [f["status"] for f in after["findings"]] == ["ok"], after
    for output in (said, fix_said):
        for forbidden in ("template error", "deprecat"):
            assert forbidden not in output.lower(), output[-4000:]


# The JetPacks that list NVIDIA's repository themselves (from L4T R32.4): the x86 stand-in of
# each line's oldest device, its suite, the CUDA its packages install and that toolkit's
# version file. JetPack 4's Python is 3.6 and 5's 3.8; jetpack_apt installs apt packages only,
# and its modules run in the Python that has apt's bindings (the system's: Debian's 3.11 here).
OWN_SOURCE = {"jetpack4": ("nano-r32.4.3", "32.4.3"), "jetpack5": ("xavier-r35.4.1", "35.4.1")}


def toolkit_version(read: Callable[[str], str | None], root: str) -> str | None:
    """The CUDA toolkit's version under `root` as the doctor's probe reads it: version.json
    (CUDA 11 and later), else version.txt (10.2); `read` gives a file's text or None."""
    for name, parse in (("version.json", cuda_probe.parse_version_json),
                        ("version.txt", cuda_probe.parse_version_txt)):  # fmt: skip
        text = read(f"{root}/{name}")
        if text is not None:
            return parse(text)
    return None


@ROLE_RULE
@pytest.mark.parametrize("line", list(OWN_SOURCE))
def test_a_jetpack_that_lists_nvidias_repository_keeps_its_own_source_list(
    ansible: AnsibleEnd,
    work: Path,
    common_vars: dict,
    apt_repo_x86: StandinApt,
    tls_env: dict,
    line: str,
):
    """JetPack 4 and 5 list NVIDIA's repository themselves: no second source (one left by
    an earlier run is removed), no key download. apt's cache looks fresh but never indexed
    that repository: the role updates it anyway; once indexed, a second run does not."""
    jetson, l4t = OWN_SOURCE[line]
    row = matrix_mod.load().release(l4t)
    suite = "r" + ".".join(l4t.split(".")[:2])  # NVIDIA's list on the device: r35.4 for 35.4.1
    toolkit = f"/usr/local/cuda-{row.cuda}"
    host = start_x86_with_files_of(jetson, f"playbook-own-source-{line}")
    try:
        trust_in_host(host, apt_repo_x86.tls)
        keyring = work / "jetpack-key.asc"
        keyring.write_bytes(apt_repo_x86.key.armored)
        host.copy_in(keyring, "/etc/apt/trusted.gpg.d/jetson-ota-public.asc")
        jetpack_list = work / Path(JETPACK_SOURCE).name
        jetpack_list.write_text(f"deb {apt_repo_x86.url} {suite} main\n")
        host.copy_in(jetpack_list, JETPACK_SOURCE)
        host.exec(["rm", "-rf", "/usr/local/cuda", toolkit])
        # A list an earlier run added before JetPack's own appeared: it must go.
        host.exec(["sh", "-c", f"echo 'deb {apt_repo_x86.url} {suite} main' > {OUR_SOURCE}"])
        cache = work / f"{line}-apt-keys"
        inventory = write_inventory(
            work / f"{line}.yml",
            {line: {"ansible_host": host.container}},
            {
                **common_vars,
                **apt_repo_x86.playbook_vars(),
                **JETPACK_APT_ONLY,
                "jetpack_apt_controller_cache": str(cache),
            },
        )

        host.exec(["mkdir", "-p", "/var/lib/apt/periodic"])
        host.exec(["touch", "/var/lib/apt/lists", "/var/lib/apt/periodic/update-success-stamp"])

        apt_repo_x86.requests.clear()

        result = run_playbook(ansible, inventory, env=tls_env)

        assert result.rc == 0, result.messages() or result.stderr
        index = result.task_result("Check that apt has indexed", line)
        assert index["indexed"] is False, index
        # apt fetched the suite's index (the stamp apt's age test reads did not move: Debian
        # has no hook that writes it, so the module's cache_updated cannot tell).
        assert f"/dists/{suite}/InRelease" in apt_repo_x86.requests, apt_repo_x86.requests
        assert result.task_hosts("Download the repository's key") == set()
        assert not cache.exists()
        assert host.exec(["test", "-e", OUR_SOURCE], check=False).returncode == 1
        assert host.exec(["cat", JETPACK_SOURCE]).stdout == jetpack_list.read_text()
        for package in row.jetpack_packages["build"]:
            status = host.exec(["dpkg-query", "-W", "-f", "${Status}", package]).stdout
            assert status == "install ok installed", package

        def on_host(path: str) -> str | None:
            read = host.exec(["cat", path], check=False)
            return read.stdout if read.returncode == 0 else None

        def staged(path: str) -> str | None:
            file = FIXTURES / jetson / path.lstrip("/")
            return file.read_text() if file.is_file() else None

        installed = toolkit_version(on_host, toolkit)
        assert installed and installed.startswith(f"{row.cuda}."), installed
        assert installed == toolkit_version(staged, toolkit)  # the stand-in package's toolkit

        apt_repo_x86.requests.clear()

        again = run_playbook(ansible, inventory, env=tls_env)

        assert again.rc == 0, again.messages() or again.stderr
        index = again.task_result("Check that apt has indexed", line)
        lists = host.exec(["ls", "--full-time", "/var/lib/apt/lists"]).stdout
        assert index["indexed"] is True, (index, lists)
        assert apt_repo_x86.requests == []  # indexed and fresh: no update
        assert again.changed(line) == 0, again.changed_tasks(line)
    finally:
        remove_host(host)


VERIFY_KEY = "Verify the key against its pinned sha256 and fingerprint"


@ROLE_RULE
@pytest.mark.parametrize(
    ("override", "task", "message"),
    [
        (
            {"jetpack_apt_key_sha256": "0" * 64},
            VERIFY_KEY,
            "is not the pinned one: sha256 {sha256} (expected " + "0" * 64 + ")",
        ),
        (
            {"jetpack_apt_key_fingerprint": "F" * 40},
            VERIFY_KEY,
            "fingerprint {fingerprint} (expected " + "F" * 40 + ")",
        ),
        (
            {"jetpack_apt_url": "http://127.0.0.1:9/jetson/common"},
            "Refuse a repository or key that is not https",
            "http://127.0.0.1:9/jetson/common is not https; only https downloads are allowed.",
        ),
    ],
    ids=["wrong-sha256", "wrong-fingerprint", "plain-http"],
)
def test_an_unverified_repository_stops_the_play_before_any_change(
    ansible: AnsibleEnd,
    work: Path,
    common_vars: dict,
    apt_repo: StandinApt,
    tls_env: dict,
    override,
    task,
    message,
):
    host = start_x86_with_files_of(ORIN, "playbook-orin-badkey")
    try:
        cache = work / "badkey-apt-keys"
        inventory = write_inventory(
            work / "badkey.yml",
            {"orin-badkey": {"ansible_host": host.container}},
            {
                **common_vars,
                **JETPACK_APT_ONLY,
                **override,
                "jetpack_apt_controller_cache": str(cache),
            },
        )
        mark(host)

        result = run_playbook(ansible, inventory, env=tls_env)

        assert result.rc != 0
        assert result.failed("orin-badkey") == 1
        # Only the controller's download cache changed; the host did not (below).
        assert result.changed_tasks("orin-badkey") <= declared_tasks(
            "Create the controller's key cache",
            "Download the repository's key to the controller",
        )
        expected = message.format(
            sha256=apt_repo.key.binary_sha256, fingerprint=apt_repo.key.fingerprint
        )
        (failure,) = result.failures("orin-badkey")
        assert failure[0] == f"jetson_env.jetson.jetpack_apt : {declared(task)}"
        assert expected in failure[1] and "Nothing was changed." in failure[1], failure
        assert not list(cache.glob("*.gpg"))  # no verified key was kept
        assert paths_changed_since(host, MARKER) == set()
    finally:
        remove_host(host)


NANO_ONLY_DOCKER = {
    "jetpack_apt_enabled": False,
    "cuda_env_enabled": False,
    "python_base_enabled": False,  # r32's apt prerequisites are Ubuntu 18.04's, not Debian's
    "torch_enabled": False,
    "torchvision_enabled": False,
    "pycuda_enabled": False,
    "tensorrt_enabled": False,
    "torch2trt_enabled": False,
    "docker_runtime_install_packages": False,
    "docker_runtime_container_build": True,
}
CSV_DIR = roles.default("docker_runtime", "csv_dir")


@JETPACK_4
def test_nano_docker_runtime_needs_jetpack4_csv_lists(ansible: AnsibleEnd, work: Path):
    """JetPack 4 (r32): no daemon.json change until CUDA/cuDNN/TensorRT's CSV lists exist."""
    host = start_x86_with_files_of("nano-r32.4.3", "playbook-nano")
    try:
        stage_container_runtime(host)  # nvidia-docker2's, as a flashed JetPack 4 has it
        inventory = write_inventory(
            work / "nano.yml", {"nano": {"ansible_host": host.container}}, NANO_ONLY_DOCKER
        )
        mark(host)

        missing = run_playbook(ansible, inventory)

        assert missing.rc != 0
        assert missing.changed("nano") == 0
        assert (
            f"l4t.csv, cuda.csv, cudnn.csv, tensorrt.csv missing in {CSV_DIR}" in missing.messages()
        )
        assert paths_changed_since(host, MARKER) == set()

        host.exec(["mkdir", "-p", CSV_DIR])
        host.exec(["touch", *(f"{CSV_DIR}/{name}" for name in ("l4t.csv", "cuda.csv"))])
        partly = run_playbook(ansible, inventory)
        assert partly.rc != 0
        assert f"cudnn.csv, tensorrt.csv missing in {CSV_DIR}" in partly.messages()

        host.exec(["touch", *(f"{CSV_DIR}/{name}" for name in ("cudnn.csv", "tensorrt.csv"))])
        complete = run_playbook(ansible, inventory)
        assert complete.rc == 0, complete.messages() or complete.stderr
        assert json.loads(host.exec(["cat", DAEMON_JSON]).stdout) == {
            "default-runtime": "nvidia",
            "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}},
        }
    finally:
        remove_host(host)


SYSTEM_ONLY = "/usr/lib/python3/dist-packages/jetson_env_system_only.py"


@ROLE_RULE
def test_jetpacks_tensorrt_bindings_import_in_a_venv(
    ansible: AnsibleEnd, work: Path, apt_repo_x86: StandinApt, tls_env: dict
):
    """Most JetPack 6 users provision a venv, and JetPack's TensorRT bindings
    (python3-libnvinfer) are the system Python's: `doctor --fix tensorrt` installed them and
    then failed its own import check in the venv. The tensorrt role now makes them importable
    there through a .pth in the venv's site-packages that lists a folder of links to them
    alone (the venv does not see the rest of the system's packages), and the doctor's remedy
    does the same for another venv: both import tensorrt. JetPack's packages are the
    stand-in repository's (a STAND-IN libnvinfer and bindings that load it). A role's rule
    on the Orin's release files, no aarch64 binary: an x86 host with them (under qemu this
    test took 519 s of a cold run)."""
    host = start_x86_with_files_of(ORIN, "trt-venv")
    try:
        trust_in_host(host, apt_repo_x86.tls)
        for venv in ("/opt/venv", "/opt/venv2"):
            host.exec(["python3", "-m", "venv", "--without-pip", venv])
        host.exec(["sh", "-c", f"echo 'SEEN = True' > {SYSTEM_ONLY}"])
        inventory = write_inventory(
            work / "trt-venv.yml",
            {"orin-trt": {"ansible_host": host.container}},
            {**apt_repo_x86.playbook_vars(), "jetson_facts_python": "/opt/venv/bin/python",
             "jetpack_apt_controller_cache": str(work / "trt-venv-keys"),
             # the bindings alone: these venvs have no pip for the role's onnx set
             "tensorrt_sets": ["tensorrt"]},
        )  # fmt: skip

        result = run_playbook(ansible, inventory, "--tags", "jetpack_apt,tensorrt", env=tls_env)

        assert result.rc == 0, result.messages() or result.stderr[-3000:]
        links = roles.default("tensorrt", "venv_links_dir")
        said = result.task_result("Say how the venv gets JetPack's bindings", "orin-trt")["msg"]
        assert f"lists {links}" in said, said
        imported = host.exec(
            [
                "/opt/venv/bin/python",
                "-c",
                "import tensorrt; print(tensorrt.__version__, tensorrt.__file__)",
            ]
        )
        assert imported.stdout.split() == ["10.3.0", f"{links}/tensorrt/__init__.py"], imported
        hidden = host.exec(["/opt/venv/bin/python", "-c", "import jetson_env_system_only"],
                           check=False)  # fmt: skip
        assert hidden.returncode == 1  # the system's other packages stay out of the venv
        assert host.exec(["python3", "-c", "import jetson_env_system_only"]).returncode == 0

        host.install_project()
        doctor = [f"{VENV}/bin/jetson-env", "doctor", "--json", "--no-smoke", "--python",
                  "/opt/venv2/bin/python", "--check", "tensorrt-python"]  # fmt: skip
        (before,) = json.loads(host.exec(doctor, check=False).stdout)["findings"]
        assert before["status"] == "fail", before
        assert any("jetson-env-tensorrt.pth" in line for line in before["details"]), before
        host.exec(["rm", "-r", links])  # the remedy makes its links itself
        host.exec(["sh", "-c", before["remedy"]], timeout=600)
        (after,) = json.loads(host.exec(doctor, check=False).stdout)["findings"]
        assert after["status"] == "ok", after
        assert after["summary"] == "tensorrt 10.3.0 imports in /opt/venv2/bin/python", after
    finally:
        remove_host(host)
