"""playbooks/jetson.yml against real x86_64 test hosts: bad input, --check, a full run,
idempotence, the fleet's torchvision wheel cache, doctor agreeing, and failure paths.

Tests in this module run in order and share two hosts: `playbook-x86` (provisioned by
test_provision...) and `playbook-x86-b` (the fleet's second host, no TensorRT).
torch is the real CPU wheel from the controller (a "file on the controller" source);
TensorRT is the stand-in tarball (tests/support/standins.py); torchvision is built
from the torchvision-like fixture given as a source archive on the controller.
"""

import hashlib
import json
import re
from collections.abc import Iterator
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
    remove_host,
    run_playbook,
    start_host,
    vars_for_test_hosts,
    write_inventory,
)
from support.ansible_envs import AnsibleEnd
from support.hosts import VENV, Host
from support.standins import build_tensorrt_tarball, stage_container_runtime

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


@pytest.fixture(scope="module")
def x86_a(work: Path) -> Iterator[Host]:
    host = start_host("x86-debian12", "playbook-x86")
    host.exec(["mkdir", "-p", "/etc/docker"])
    seed = work / "daemon.seed.json"
    seed.write_text(json.dumps(PRE_EXISTING_DAEMON_JSON))
    host.copy_in(seed, DAEMON_JSON)
    stage_container_runtime(host)  # the nvidia runtime is registered where it is installed
    yield host
    remove_host(host)


@pytest.fixture(scope="module")
def x86_b(work: Path) -> Iterator[Host]:
    """Depends on `work`, so each end of the Ansible range gets a fresh one."""
    host = start_host("x86-debian12", "playbook-x86-b")
    yield host
    remove_host(host)


@pytest.fixture(scope="module")
def common_vars(work: Path) -> dict:
    return vars_for_test_hosts(work)


@pytest.fixture(scope="module")
def inventory(work: Path, x86_a: Host, common_vars: dict) -> Path:
    tarball = build_tensorrt_tarball(TRT_VERSION, "cp311", work / "trt")
    hosts = {"x86": {"ansible_host": x86_a.container, "tensorrt_tarball": str(tarball)}}
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
def test_provision_x86(ansible: AnsibleEnd, inventory: Path, x86_a: Host, work: Path):
    result = run_playbook(ansible, inventory)
    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") > 0
    (work / "first_run_s").write_text(str(result.wall_s))

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


@CHANGE_REPORTING
def test_second_run_changes_nothing(ansible: AnsibleEnd, inventory: Path, work: Path):
    result = run_playbook(ansible, inventory)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0, result.stats
    assert result.task_hosts("Build the torchvision wheel") == set()


@CHECK_MODE
def test_check_mode_on_a_provisioned_host(ansible: AnsibleEnd, inventory: Path):
    result = run_playbook(ansible, inventory, check=True)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0, result.stats


@CHECK_MODE
def test_a_failed_dry_run_fails_check_with_pips_own_error(
    ansible: AnsibleEnd, inventory: Path, x86_a: Host
):
    """--check asks pip for a dry run; where pip refuses the requirements (here a version
    that does not exist) the real run would fail: --check fails with pip's own error (it
    printed "hint: See above for details." or the last line and passed)."""
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
    ansible: AnsibleEnd, inventory: Path, extra: dict, plugins: str
):
    """Both plugin kinds (the --plugins extension and the CMake library) where NvInfer.h is;
    --check, so nothing is built (the stand-in TensorRT could not back it). Only torch2trt's
    tasks (and the facts): its choice reads nothing the other roles set, and the whole
    --check on this host is test_check_mode_on_a_provisioned_host's (31 s; these 10-18 s)."""
    result = run_playbook(
        ansible, inventory, "--tags", "torch2trt", check=True,
        extra_vars={"torch2trt_enabled": True, **extra},
    )  # fmt: skip

    assert result.rc == 0, result.messages() or result.stderr
    said = result.task_result("Say which plugins are built", "x86")["msg"]
    assert said == f"torch2trt plugins on x86: {plugins}"


@NO_PLAYBOOK
def test_doctor_inside_the_host_agrees(inventory: Path, x86_a: Host):
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
    ansible: AnsibleEnd, inventory: Path, x86_a: Host
):
    """torchvision 0.28.0+cpu beside torch 2.13.0+cpu (as PyPI's CUDA index serves
    0.26.0+cu130 beside 2.11.0+cu130) pairs by the one rule: the role keeps it and the doctor
    agrees. On main the role compared versions exactly and reinstalled 0.28.0 over it."""
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
def fleet_inventory(work: Path, x86_a: Host, x86_b: Host, inventory: Path) -> Path:
    hosts = yaml.safe_load(inventory.read_text())["all"]["hosts"]
    # No TensorRT on this one: no tarball, and not the pip default (PyPI serves none of
    # tensorrt-cu13's libraries).
    hosts["x86-b"] = {"ansible_host": x86_b.container, "tensorrt_pip_package": ""}
    common = yaml.safe_load(inventory.read_text())["all"]["vars"]
    return write_inventory(work / "fleet.yml", hosts, common)


@ROLE_RULE
def test_fleet_second_host_installs_the_cached_wheel(
    ansible: AnsibleEnd, fleet_inventory: Path, x86_b: Host, work
):
    result = run_playbook(ansible, fleet_inventory)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0
    assert pip_version(x86_b, "torchvision") == "0.28.0"
    assert result.task_hosts("Build the torchvision wheel") == set()
    assert result.task_hosts("Install torchvision from the cached wheel") == {"x86-b"}
    # Nothing was compiled on x86-b: the build's compiler was never even installed.
    assert x86_b.exec(["sh", "-c", "command -v g++"], check=False).returncode != 0
    assert x86_b.exec(["test", "-e", BUILDS], check=False).returncode
    wheels = list((work / "cache" / "torchvision").rglob("torchvision-*.whl"))
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
    result = run_playbook(
        ansible, fleet_inventory, "--limit", "x86-b", extra_vars={"torch2trt_enabled": True}
    )

    assert result.rc != 0
    message = result.messages()
    assert "torch2trt needs TensorRT's Python bindings" in message
    assert "No module named 'tensorrt'" in message
    assert "Nothing was installed" in message
    assert pip_version(x86_b, "torch2trt") is None
    assert x86_b.exec(["test", "-e", roles.default("torch2trt", "marker")], check=False).returncode
    assert x86_b.exec(
        ["test", "-e", roles.default("torch2trt", "build_dir")], check=False
    ).returncode


@ENGINE
def test_docker_restart_failure_restores_daemon_json(
    ansible: AnsibleEnd, inventory: Path, x86_a: Host, work: Path
):
    before = b'{\n    "data-root": "/srv/docker",\n    "runtimes": {}\n}\n'
    (work / "daemon.json").write_bytes(before)
    x86_a.copy_in(work / "daemon.json", DAEMON_JSON)
    # Docker's engine is installed (a stand-in dockerd): the role restarts what it finds.
    x86_a.exec(["sh", "-c", "printf '#!/bin/sh\\nexit 1\\n' >/usr/local/bin/dockerd && "
                "chmod 755 /usr/local/bin/dockerd"])  # fmt: skip
    failing_restart = ["sh", "-c", "echo 'Job for docker.service failed' >&2; exit 1"]

    result = run_playbook(
        ansible,
        inventory,
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
