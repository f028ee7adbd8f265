"""playbooks/jetson.yml against real x86_64 test hosts: bad input, --check, a full run,
idempotence, the fleet's torchvision wheel cache, doctor agreeing, and failure paths.

The tests before the first run share the fresh host `playbook-x86`; test_provision_x86 provisions
it and keeps it (tests/support/provisioned.py). Every test that needs a provisioned host takes
`provisioned_x86`, a container of that kept state (else one provisioned and kept there), so it
gives the same verdict alone, in any selection and on any worker; the fleet adds
`playbook-x86-b` (a fresh second host, no TensorRT).
torch is the real CPU wheel from the controller (a "file on the controller" source);
TensorRT is the stand-in tarball (tests/support/standins.py); torchvision is built
from the torchvision-like fixture given as a source archive on the controller.
"""

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from playbook_support import (
    CHANGE_REPORTING,
    CHECK_MODE,
    ENGINE,
    MODULE_ARGUMENTS,
    NO_PLAYBOOK,
    ROLE_RULE,
    TORCH_WHEEL_X86,
    TORCHVISION_FIXTURE,
    declared,
    declared_tasks,
    pip_version,
    provision_inputs,
    remove_host,
    run_playbook,
    start_host,
    vars_for_test_hosts,
    write_inventory,
)
from support.ansible_envs import AnsibleEnd
from support.hosts import VENV, Host
from support.provisioned import ProvisionedState
from support.standins import (
    build_bindings_wheel,
    build_libnvinfer,
    build_tensorrt_tarball,
    stage_container_runtime,
)

from jetson_env import roles

pytestmark = pytest.mark.hosts

TRT_VERSION = "10.3.0"
TRT_HOME = f"/opt/TensorRT-{TRT_VERSION}"
DAEMON_JSON = roles.default("docker_runtime", "daemon_json")
BUILDS = str(Path(roles.default("torchvision", "build_dir")).parent)  # every build's folder
PRE_EXISTING_DAEMON_JSON = {
    "log-driver": "json-file",
    "log-opts": {"max-size": "10m"},
    "runtimes": {"crun": {"path": "/usr/bin/crun"}},
}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, ansible: AnsibleEnd) -> Path:
    """Per end of the Ansible range: its own controller caches, lock file and inventories."""
    return tmp_path_factory.mktemp(f"playbook-x86-{ansible.name}")


X86 = "x86-debian12"
# What provisioning the x86 host depends on (its key, with the host image and the Ansible end).
PROVISION_INPUTS = provision_inputs(__file__)


def start_fresh_x86(name: str, work: Path) -> Host:
    """A fresh x86 host with a daemon.json of its own and NVIDIA's container runtime."""
    host = start_host(X86, name)
    host.exec(["mkdir", "-p", "/etc/docker"])
    seed = work / "daemon.seed.json"
    seed.write_text(json.dumps(PRE_EXISTING_DAEMON_JSON))
    host.copy_in(seed, DAEMON_JSON)
    stage_container_runtime(host)  # the nvidia runtime is registered where it is installed
    return host


@pytest.fixture(scope="module")
def x86_a(work: Path) -> Iterator[Host]:
    """A fresh host no test provisions: the runs that must stop, or only say, before any
    change find it as it was, whatever ran before (test_provision_x86 has a host of its own)."""
    host = start_fresh_x86("playbook-x86", work)
    yield host
    remove_host(host)


@pytest.fixture
def first_x86(work: Path, common_vars: dict) -> Iterator[tuple[Host, Path]]:
    """A fresh host for the first provisioning, and its inventory."""
    host = start_fresh_x86("playbook-x86-first", work)
    try:
        hosts = {"x86": {"ansible_host": host.container}}
        yield host, write_inventory(work / "first.yml", hosts, common_vars)
    finally:
        remove_host(host)


@pytest.fixture(scope="module")
def x86_state(ansible: AnsibleEnd) -> ProvisionedState:
    return ProvisionedState(X86, ansible.name, PROVISION_INPUTS)


def x86_vars(work: Path) -> dict:
    """The play's variables: the module's, and the host's TensorRT tarball."""
    tarball = build_tensorrt_tarball(TRT_VERSION, "cp311", work / "trt")
    return {**vars_for_test_hosts(work), "tensorrt_tarball": str(tarball)}


@dataclass(frozen=True)
class Provisioned:
    host: Host
    inventory: Path  # the host as `x86`, with the variables that provisioned it
    work: Path  # the controller's folder of that provisioning (lock file, caches)


@pytest.fixture(scope="module")
def provisioned_x86(
    tmp_path_factory: pytest.TempPathFactory, ansible: AnsibleEnd, x86_state: ProvisionedState
) -> Iterator[Provisioned]:
    """A provisioned x86 host and its controller: a container of the kept state, else a fresh
    host provisioned here (and kept)."""
    work = tmp_path_factory.mktemp(f"x86-provisioned-{ansible.name}")
    name = "playbook-x86-provisioned"

    def start(image: str | None) -> Host:
        return start_host(X86, name, image=image) if image else start_fresh_x86(name, work)

    def provision(host: Host, work: Path) -> dict:
        playbook_vars = x86_vars(work)
        hosts = {"x86": {"ansible_host": host.container}}
        result = run_playbook(ansible, write_inventory(work / "inventory.yml", hosts,
                                                       playbook_vars))  # fmt: skip
        assert result.rc == 0, result.messages() or result.stderr
        return playbook_vars

    host, playbook_vars = x86_state.host(work, start, provision)
    hosts = {"x86": {"ansible_host": host.container}}
    yield Provisioned(host, write_inventory(work / "inventory.yml", hosts, playbook_vars), work)
    remove_host(host)


@pytest.fixture(scope="module")
def x86_b(work: Path) -> Iterator[Host]:
    """Depends on `work`, so each end of the Ansible range gets a fresh one."""
    host = start_host("x86-debian12", "playbook-x86-b")
    yield host
    remove_host(host)


@pytest.fixture(scope="module")
def common_vars(work: Path) -> dict:
    return x86_vars(work)


@pytest.fixture(scope="module")
def inventory(work: Path, x86_a: Host, common_vars: dict) -> Path:
    hosts = {"x86": {"ansible_host": x86_a.container}}
    return write_inventory(work / "inventory.yml", hosts, common_vars)


@ENGINE
def test_wrong_variable_type_fails_before_any_change(
    ansible: AnsibleEnd, inventory: Path, x86_a: Host
):
    result = run_playbook(ansible, inventory, extra_vars={"torchvision_max_jobs": "many"})

    assert result.rc != 0
    assert result.changed("x86") == 0
    # Ansible's type check, refused before anything else (2.16 says "<class 'str'>").
    validation = declared("Validate every role's variables before anything changes")
    said = [message for task, message in result.failures("x86") if task.endswith(validation)]
    wrong_type = (
        r"Validation of arguments failed:\nargument 'torchvision_max_jobs' is of type "
        r"(str|<class 'str'>) and we were unable to convert to int: .* "
        r"cannot be converted to an int"
    )
    assert [m for m in said if re.fullmatch(wrong_type, m)], result.failures("x86")
    assert pip_version(x86_a, "torch") is None


@ROLE_RULE
def test_http_torch_url_is_refused_before_any_change(
    ansible: AnsibleEnd, inventory: Path, x86_a: Host
):
    result = run_playbook(
        ansible,
        inventory,
        extra_vars={"torch_wheel_file": "", "torch_wheel_url": "http://example.org/torch.whl"},
    )

    assert result.rc != 0
    assert result.changed("x86") == 0
    assert result.failures("x86") == [
        (f"jetson_env.jetson.torch : {declared('Refuse sources that are not https')}",
         "torch source http://example.org/torch.whl is not https; only https downloads are "
         "allowed. Nothing was changed."),
    ]  # fmt: skip


@ROLE_RULE
def test_http_torchvision_archive_is_refused_before_any_change(
    ansible: AnsibleEnd, inventory: Path, x86_a: Host
):
    result = run_playbook(
        ansible,
        inventory,
        extra_vars={"torchvision_source_archive": "http://example.org/vision.tar.gz"},
    )

    assert result.rc != 0
    # Only the controller's lock file may have changed: torch's sha256 recorded on first use.
    assert result.changed_tasks("x86") <= declared_tasks(
        "Record the sha256 in the lock file on first use: torch wheel"
    )
    assert pip_version(x86_a, "torch") is None
    refusal = declared("Refuse a source archive URL that is not https")
    assert result.failures("x86") == [
        (f"jetson_env.jetson.torchvision : {refusal}",
         "torchvision_source_archive http://example.org/vision.tar.gz is not https; only https "
         "downloads are allowed. Nothing was changed."),
    ]  # fmt: skip


@ROLE_RULE
def test_checksum_mismatch_stops_before_any_change(
    ansible: AnsibleEnd, inventory: Path, x86_a: Host, work: Path
):
    lock = work / "mismatch.lock.yml"
    lock.write_text(yaml.safe_dump({"sha256": {TORCH_WHEEL_X86.name: "0" * 64}}))

    result = run_playbook(ansible, inventory, extra_vars={"torch_lock_file": str(lock)})

    assert result.rc != 0
    assert result.changed("x86") == 0
    message = result.messages()
    assert f"sha256 mismatch for {TORCH_WHEEL_X86.name}" in message
    assert "0" * 64 in message
    assert yaml.safe_load(lock.read_text()) == {"sha256": {TORCH_WHEEL_X86.name: "0" * 64}}
    assert pip_version(x86_a, "torch") is None


@CHECK_MODE
def test_check_mode_on_a_fresh_host(ansible: AnsibleEnd, inventory: Path, x86_a: Host, work: Path):
    lock = work / "jetson-env.lock.yml"

    def controller_files() -> tuple:
        return sorted(work.rglob("*")), lock.read_bytes() if lock.exists() else None

    before = controller_files()

    result = run_playbook(ansible, inventory, check=True)

    assert result.rc == 0, result.messages() or result.stderr
    assert pip_version(x86_a, "torch") is None
    # The controller does not change either: lock file and caches as they were.
    assert controller_files() == before
    assert json.loads(x86_a.exec(["cat", DAEMON_JSON]).stdout) == PRE_EXISTING_DAEMON_JSON


@MODULE_ARGUMENTS
def test_provision_x86(
    ansible: AnsibleEnd,
    first_x86: tuple[Host, Path],
    work: Path,
    common_vars: dict,
    x86_state: ProvisionedState,
):
    x86_a, inventory = first_x86
    result = run_playbook(ansible, inventory)
    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") > 0

    # torch: the real wheel, its sha256 recorded on first use in the lock file.
    assert pip_version(x86_a, "torch") == "2.13.0+cpu"
    lock = yaml.safe_load(Path(work / "jetson-env.lock.yml").read_text())
    expected = hashlib.sha256(TORCH_WHEEL_X86.read_bytes()).hexdigest()
    assert lock == {"sha256": {TORCH_WHEEL_X86.name: expected}}
    # Python base: termcolor, numpy as the x86 row pins it (>=1.26,<3).
    assert pip_version(x86_a, "termcolor")
    numpy = pip_version(x86_a, "numpy")
    assert numpy and 1 <= int(numpy.split(".")[0]) < 3
    # torchvision: built from the fixture with BUILD_VERSION, no CUDA on this host.
    assert pip_version(x86_a, "torchvision") == "0.28.0"
    run_op = (
        "import json, importlib.resources as r, torch, torchvision;"
        "print(torchvision.add_one(torch.zeros(2)).tolist());"
        "print(r.files('torchvision').joinpath('build_info.json').read_text())"
    )
    out = x86_a.exec(["python3", "-c", run_op], env={}).stdout.splitlines()
    assert out[0] == "[1.0, 1.0]"
    build_info = json.loads(out[1])
    assert build_info["version"] == "0.28.0"
    assert build_info["cuda"] is False
    assert build_info["env"]["FORCE_CUDA"] is None
    assert int(build_info["env"]["MAX_JOBS"]) >= 1
    # TensorRT from the tarball: in /opt, on the loader path, bindings of the same version.
    conf = x86_a.exec(["cat", roles.default("tensorrt", "ldconfig_file")]).stdout
    assert f"{TRT_HOME}/lib" in conf.splitlines()
    ldconfig = x86_a.exec(["ldconfig", "-p"]).stdout
    assert f"libnvinfer.so.10 (libc6,x86-64) => {TRT_HOME}/lib/libnvinfer.so.10" in ldconfig
    assert pip_version(x86_a, "tensorrt") == TRT_VERSION
    # daemon.json: nvidia runtime merged, pre-existing keys kept, the old file kept as a backup.
    daemon = json.loads(x86_a.exec(["cat", DAEMON_JSON]).stdout)
    assert daemon["log-driver"] == "json-file"
    assert daemon["log-opts"] == {"max-size": "10m"}
    assert daemon["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
    assert "default-runtime" not in daemon  # off by default on x86
    backups = x86_a.exec(["sh", "-c", f"ls {DAEMON_JSON}.*~"]).stdout.split()
    assert len(backups) == 1
    assert json.loads(x86_a.exec(["cat", backups[0]]).stdout) == PRE_EXISTING_DAEMON_JSON
    # No CUDA toolkit on the x86 test host: no CUDA profile.d, no pycuda siteconf.
    for path in (roles.default("cuda_env", "profile_file"), roles.default("pycuda", "siteconf")):
        assert x86_a.exec(["test", "-e", path], check=False).returncode, path
    # Provisioned: kept for the tests that need a provisioned host.
    x86_state.keep(x86_a, work, common_vars)


@CHANGE_REPORTING
def test_second_run_changes_nothing(ansible: AnsibleEnd, provisioned_x86: Provisioned):
    result = run_playbook(ansible, provisioned_x86.inventory)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0, result.stats
    assert result.task_hosts("Build the torchvision wheel") == set()


@CHECK_MODE
def test_check_mode_on_a_provisioned_host(ansible: AnsibleEnd, provisioned_x86: Provisioned):
    result = run_playbook(ansible, provisioned_x86.inventory, check=True)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0, result.stats


@CHECK_MODE
def test_a_failed_dry_run_fails_check_with_pips_own_error(
    ansible: AnsibleEnd, provisioned_x86: Provisioned
):
    """--check asks pip for a dry run; where pip refuses the requirements (here a version
    that does not exist) the real run would fail: --check fails with pip's own error (it
    printed "hint: See above for details." or the last line and passed)."""
    x86_a, inventory = provisioned_x86.host, provisioned_x86.inventory
    termcolor = pip_version(x86_a, "termcolor")
    wanted = {"python_base_pip_packages": ["termcolor==0.0.0.99"]}
    result = run_playbook(ansible, inventory, "--tags", "python_base", check=True,
                          extra_vars=wanted)  # fmt: skip

    assert result.rc != 0, result.stderr[-3000:]
    message = result.messages()
    assert "Fail when pip's dry run fails (--check)" in message, message
    assert "so the real install would fail too" in message
    assert "No matching distribution found for termcolor==0.0.0.99" in message, message
    assert pip_version(x86_a, "termcolor") == termcolor


@CHECK_MODE
@pytest.mark.parametrize(
    ("extra", "plugins"),
    [
        ({}, f"both (auto: TensorRT headers found in {TRT_HOME}/include)"),
        ({"torch2trt_tensorrt_include_dir": "/nonexistent"},
         "none (auto: TensorRT headers missing in /nonexistent): for the plugins give "
         "torch2trt_tensorrt_include_dir and torch2trt_tensorrt_lib_dir the include/ and lib/ of a "
         "TensorRT tarball of this release, or install libnvinfer-dev (TensorRT from pip has no "
         "headers)"),
        ({"torch2trt_plugins": "legacy"}, "legacy (torch2trt_plugins=legacy)"),
    ],
    ids=["headers", "no-headers", "chosen"],
)  # fmt: skip
def test_torch2trt_plugins_follow_tensorrts_headers(
    ansible: AnsibleEnd, provisioned_x86: Provisioned, extra: dict, plugins: str
):
    """Both plugin kinds (the --plugins extension and the CMake library) where NvInfer.h is;
    --check, so nothing is built (the stand-in TensorRT could not back it). Only torch2trt's
    tasks (and the facts): its choice reads nothing the other roles set, and the whole
    --check on this host is test_check_mode_on_a_provisioned_host's (31 s; these 10-18 s)."""
    result = run_playbook(
        ansible, provisioned_x86.inventory, "--tags", "torch2trt", check=True,
        extra_vars={"torch2trt_enabled": True, **extra},
    )  # fmt: skip

    assert result.rc == 0, result.messages() or result.stderr
    said = result.task_result("Say which plugins are built", "x86")["msg"]
    assert said == f"torch2trt plugins on x86: {plugins}"


@ROLE_RULE
def test_torch2trt_is_left_out_where_it_cannot_use_the_tensorrt(
    ansible: AnsibleEnd, provisioned_x86: Provisioned, tmp_path: Path
):
    """A Python whose TensorRT is 11 (what the matrix gives a Python 3.14 host: no 10.x has cp314
    bindings): torch2trt cannot use it, so the role says so and which converters can, and
    installs nothing. Here a venv over the provisioned host's Python (its torch) with a STAND-IN
    TensorRT 11.1 and its STAND-IN libnvinfer.so.11, removed afterwards."""
    x86_a, inventory = provisioned_x86.host, provisioned_x86.inventory
    venv, library = "/opt/trt11-venv", "/usr/local/lib/libnvinfer.so.11"
    version = "11.1.0.106"
    wheel = build_bindings_wheel(version, "cp311", tmp_path)
    built = build_libnvinfer(version, tmp_path)
    try:
        x86_a.copy_in(built, library)
        x86_a.exec(["ldconfig"])
        x86_a.exec(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        x86_a.copy_in(wheel, f"/tmp/{wheel.name}")
        x86_a.exec([f"{venv}/bin/pip", "install", "-q", "--no-deps", "--no-index",
                    f"/tmp/{wheel.name}"])  # fmt: skip

        result = run_playbook(
            ansible, inventory, "--tags", "torch2trt",
            extra_vars={"torch2trt_enabled": True, "jetson_facts_python": f"{venv}/bin/python3"},
        )  # fmt: skip

        assert result.rc == 0, result.messages() or result.stderr
        said = result.task_result("Leave torch2trt out where it cannot use this TensorRT", "x86")
        assert said["msg"].startswith(
            f"torch2trt is not installed on x86: it cannot use TensorRT {version}; the converters"
            " that can: onnx"
        )
        assert result.changed("x86") == 0
        imported = x86_a.exec([f"{venv}/bin/python3", "-c", "import torch2trt"], check=False)
        assert imported.returncode != 0
    finally:
        x86_a.exec(["rm", "-rf", venv, library, f"/tmp/{wheel.name}"], check=False)
        x86_a.exec(["ldconfig"], check=False)


@NO_PLAYBOOK
def test_doctor_inside_the_host_agrees(provisioned_x86: Provisioned):
    x86_a = provisioned_x86.host
    x86_a.install_project()
    checks = ["libnvinfer", "tensorrt-python", "termcolor"]
    args = [arg for check in checks for arg in ("--check", check)]
    result = x86_a.exec(
        [f"{VENV}/bin/jetson-env", "doctor", "--json", "--python", "/usr/bin/python3", *args],
        check=False,
    )
    report = json.loads(result.stdout)
    findings = {f["check"]: f for f in report["findings"]}

    assert result.returncode == 0, findings
    assert findings["libnvinfer"]["status"] == "ok"
    assert findings["libnvinfer"]["summary"].startswith(f"libnvinfer {TRT_VERSION} loads")
    assert findings["tensorrt-python"]["summary"].startswith(f"tensorrt {TRT_VERSION} imports")
    assert findings["termcolor"]["status"] == "ok"


@ROLE_RULE
def test_a_torchvision_with_a_local_label_that_pairs_is_kept(
    ansible: AnsibleEnd, provisioned_x86: Provisioned
):
    """torchvision 0.28.0+cpu beside torch 2.13.0+cpu (as PyPI's CUDA index serves
    0.26.0+cu130 beside 2.11.0+cu130) pairs by the one rule: the role keeps it and the doctor
    agrees. On main the role compared versions exactly and reinstalled 0.28.0 over it."""
    x86_a, inventory = provisioned_x86.host, provisioned_x86.inventory
    x86_a.install_project()
    x86_a.copy_in(TORCHVISION_FIXTURE, "/tmp/torchvision-label")
    x86_a.exec(
        ["python3", "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
         "--break-system-packages", "/tmp/torchvision-label"],
        env={"BUILD_VERSION": "0.28.0+cpu"},
    )  # fmt: skip
    assert pip_version(x86_a, "torchvision") == "0.28.0+cpu"

    result = run_playbook(ansible, inventory, "--tags", "torchvision")

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0, result.changed_tasks("x86")
    assert result.task_hosts("Install torchvision from the cached wheel") == set()
    assert pip_version(x86_a, "torchvision") == "0.28.0+cpu"
    # The preflight says what happens here, not the row's torch 2.14.1 -> torchvision 0.29.1.
    said = result.task_result("Say which torch and torchvision this host ends with", "x86")
    assert said["msg"] == (
        "x86: torch 2.13.0 (as installed) -> torchvision 0.28.0+cpu (kept: it pairs)"
    ), said
    report = result.task_result("Report the host's platform", "x86")["msg"]
    assert "-> torchvision" not in report, report
    doctor = x86_a.exec([f"{VENV}/bin/jetson-env", "doctor", "--json", "--python",
                         "/usr/bin/python3", "--check", "torchvision"], check=False)  # fmt: skip
    (vision,) = json.loads(doctor.stdout)["findings"]
    assert vision["status"] == "ok", vision
    assert vision["summary"].startswith("torchvision 0.28.0+cpu (pairs with torch 2.13.0+cpu)")


@pytest.fixture(scope="module")
def fleet_inventory(provisioned_x86: Provisioned, x86_b: Host) -> Path:
    inventory = provisioned_x86.inventory
    hosts = yaml.safe_load(inventory.read_text())["all"]["hosts"]
    # No TensorRT on this one: no tarball, and not the pip default (PyPI serves none of
    # tensorrt-cu13's libraries).
    hosts["x86-b"] = {"ansible_host": x86_b.container, "tensorrt_tarball": "",
                      "tensorrt_pip_package": ""}  # fmt: skip
    common = yaml.safe_load(inventory.read_text())["all"]["vars"]
    return write_inventory(provisioned_x86.work / "fleet.yml", hosts, common)


@ROLE_RULE
def test_fleet_second_host_installs_the_cached_wheel(
    ansible: AnsibleEnd, fleet_inventory: Path, x86_b: Host, provisioned_x86: Provisioned
):
    """The roles the cache concerns, as a user runs them (`--tags torch,torchvision`): the
    wheel pairs with the torch the torch role installs. The other roles read nothing of it;
    their full run on a fresh host is test_provision_x86's, their changed=0 on a provisioned
    one test_second_run_changes_nothing's."""
    result = run_playbook(ansible, fleet_inventory, "--tags", "torch,torchvision")

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0
    assert pip_version(x86_b, "torchvision") == "0.28.0"
    assert result.task_hosts("Build the torchvision wheel") == set()
    assert result.task_hosts("Install torchvision from the cached wheel") == {"x86-b"}
    # Nothing was compiled on x86-b: the build's compiler was never even installed.
    assert x86_b.exec(["sh", "-c", "command -v g++"], check=False).returncode != 0
    assert x86_b.exec(["test", "-e", BUILDS], check=False).returncode
    wheels = list((provisioned_x86.work / "cache" / "torchvision").rglob("torchvision-*.whl"))
    assert [w.parent.name for w in wheels] == ["x86_64-x86-cp311-torch2.13.0-torchvision0.28.0"]
    out = x86_b.exec(
        [
            "python3",
            "-c",
            "import torch, torchvision; print(torchvision.add_one(torch.ones(1)).item())",
        ]
    )
    assert out.stdout.strip() == "2.0"


@ROLE_RULE
def test_torch2trt_without_tensorrt_fails_cleanly(
    ansible: AnsibleEnd, fleet_inventory: Path, x86_b: Host
):
    """torch2trt's own check, before the role changes anything (`--tags torch2trt`: what the
    other roles would install first is not this rule's, so the host must end unchanged)."""
    result = run_playbook(
        ansible, fleet_inventory, "--limit", "x86-b", "--tags", "torch2trt",
        extra_vars={"torch2trt_enabled": True},
    )  # fmt: skip

    assert result.rc != 0
    assert result.changed("x86-b") == 0, result.changed_tasks("x86-b")
    message = result.messages()
    assert "torch2trt needs TensorRT's Python bindings" in message
    assert "No module named 'tensorrt'" in message
    assert "Nothing was installed" in message
    assert pip_version(x86_b, "torch2trt") is None
    assert x86_b.exec(["test", "-e", roles.default("torch2trt", "marker")], check=False).returncode
    assert x86_b.exec(
        ["test", "-e", roles.default("torch2trt", "build_dir")], check=False
    ).returncode


@pytest.fixture
def own_provisioned_x86(
    provisioned_x86: Provisioned, x86_state: ProvisionedState, tmp_path: Path
) -> Iterator[Provisioned]:
    """A container of the kept provisioned state for a test that changes the host, with the
    variables that provisioned it: the module's provisioned host stays as the others see it."""
    host = start_host(X86, "playbook-x86-own", image=x86_state.tag)
    try:
        playbook_vars = yaml.safe_load(provisioned_x86.inventory.read_text())["all"]["vars"]
        hosts = {"x86": {"ansible_host": host.container}}
        inventory = write_inventory(tmp_path / "inventory.yml", hosts, playbook_vars)
        yield Provisioned(host, inventory, provisioned_x86.work)
    finally:
        remove_host(host)


@ENGINE
def test_docker_restart_failure_restores_daemon_json(
    ansible: AnsibleEnd, own_provisioned_x86: Provisioned, tmp_path: Path
):
    x86_a, inventory = own_provisioned_x86.host, own_provisioned_x86.inventory
    before = b'{\n    "data-root": "/srv/docker",\n    "runtimes": {}\n}\n'
    (tmp_path / "daemon.json").write_bytes(before)
    x86_a.copy_in(tmp_path / "daemon.json", DAEMON_JSON)
    # Docker's engine is installed (a stand-in dockerd): the role restarts what it finds.
    x86_a.exec(["sh", "-c", "printf '#!/bin/sh\\nexit 1\\n' >/usr/local/bin/dockerd && "
                "chmod 755 /usr/local/bin/dockerd"])  # fmt: skip
    failing_restart = ["sh", "-c", "echo 'Job for docker.service failed' >&2; exit 1"]

    # docker_runtime's block/rescue alone (`--tags docker_runtime`): the other roles on this
    # provisioned host change nothing (test_second_run_changes_nothing) and read no daemon.json.
    result = run_playbook(
        ansible,
        inventory,
        "--tags",
        "docker_runtime",
        extra_vars={
            "docker_runtime_container_build": False,
            "docker_runtime_restart_command": failing_restart,
        },
    )

    assert result.rc != 0
    message = result.messages()
    assert "Docker did not come back with the nvidia runtime" in message
    assert "Job for docker.service failed" in message
    assert "the previous daemon.json was restored" in message
    after = x86_a.exec(["cat", DAEMON_JSON]).stdout.encode()
    assert after == before


@ROLE_RULE
def test_torchvision_without_torch_says_what_to_do(
    ansible: AnsibleEnd, work: Path, common_vars: dict
):
    """torchvision is built for the installed torch: with none, the role stops and says how."""
    host = start_host("x86-debian12", "playbook-x86-notorch")
    try:
        only_torchvision = {
            **common_vars,
            **{
                f"{role}_enabled": False
                for role in ("cuda_env", "python_base", "torch", "pycuda", "tensorrt",
                             "torch2trt", "docker_runtime")
            },
        }  # fmt: skip
        inventory = write_inventory(
            work / "notorch.yml", {"notorch": {"ansible_host": host.container}}, only_torchvision
        )

        result = run_playbook(ansible, inventory)

        assert result.rc != 0
        assert result.failed("notorch") == 1
        assert result.changed("notorch") == 0
        message = result.messages()
        assert "torchvision is built for the installed torch" in message
        assert "has none for /usr/bin/python3 (torch_enabled is false)" in message
        assert "install torch, or set torchvision_enabled=false" in message
        assert pip_version(host, "torchvision") is None
    finally:
        remove_host(host)
