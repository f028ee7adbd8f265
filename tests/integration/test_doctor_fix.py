"""`jetson-env doctor --fix` for real: hosts provisioned by the playbook, broken in ways the
doctor knows, fixed by the roles that the findings name.

An x86 host over SSH (--host): termcolor uninstalled, the stand-in TensorRT's and CUDA's
folders dropped from ld.so.conf.d, the CUDA login script removed (nvcc stays linked in
/usr/local/bin), daemon.json without the nvidia runtime (no Docker engine there). A
Nano stand-in fixing itself (no --host, from a copy of the checkout, --json): a CSV mount
list missing, its package installed again from JetPack's apt repository (the stand-in).
The Nano is an x86 host with the Nano's release files and device tree: nothing that test
proves depends on the CPU (the CSV gate, the doctor's findings and the role are the same
code on both), and under qemu its pip and apt work took 186 s where x86 takes a fraction.

The host is a container of its own from the x86 test host's image, with an sshd on
loopback: the doctor (paramiko) and ansible-playbook (ssh, host key checked against a
known_hosts written here) both reach it as `root@127.0.0.1:PORT`, as they reach a
Jetson. --fix runs the ansible-playbook beside this interpreter (the provision extra's,
as `pip install '.[provision]'` installs it); the host is provisioned with the newest end's.
Each test breaks a fleet host of its own: a container of the provisioned state kept by
tests/support/provisioned.py (else one provisioned from nothing, and kept), so a test's
verdict depends on no other test's run or leftovers.
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playbook_support import (
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
from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import REPO_ROOT, VENV, Host, SshdImage, free_port, wait_for_port
from support.provisioned import ProvisionedState
from support.schemas import fix_schema_validator
from support.standin_apt import CSV_DIR, CSV_PACKAGES, StandinApt, standin_apt, trust_in_host
from support.standins import (
    build_bindings_wheel,
    build_cuda_toolkit_archive,
    build_libnvinfer,
    build_tensorrt_tarball,
    stage_container_runtime,
)

from jetson_env import matrix, roles

pytestmark = pytest.mark.hosts

PYTHON = "/usr/bin/python3"
TRT_VERSION = "10.3.0"
TRT_LD_CONF = roles.default("tensorrt", "ldconfig_file")
CUDA_LD_CONF = roles.default("cuda_env", "ldconfig_file")
CUDA_PROFILE = roles.default("cuda_env", "profile_file")
DAEMON_JSON = roles.default("docker_runtime", "daemon_json")
OTHER_DAEMON_KEYS = {"log-level": "warn"}
NVIDIA_RUNTIME = {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}
CHECKS = ("--check", "termcolor", "--check", "libnvinfer", "--check", "cuda",
          "--check", "docker", "--no-smoke")  # fmt: skip
MARKER = "/var/tmp/before-fix"
ROLES = "cuda_env,python_base,tensorrt,docker_runtime"  # what the fleet host is provisioned with


@dataclass(frozen=True)
class Fleet:
    host: Host
    home: Path  # HOME for the controller's ssh: the key and known_hosts
    address: str
    playbook_vars: dict


# What decides the fleet host's provisioned state (its key, with the host image, the Ansible
# end and the roles it is provisioned with).
PROVISION_INPUTS = provision_inputs(__file__)


def provision_fleet_host(host: Host, work: Path) -> dict:
    """A fresh x86 host made the fleet host: an sshd that takes the key made here (kept with
    the controller's folder, so a kept state's host still takes it), a stand-in CUDA toolkit,
    NVIDIA's container runtime (a stand-in), a daemon.json of other keys, then the playbook's
    ROLES with the newest end's ansible-playbook. Returns the play's variables."""
    home = work / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    key = home / ".ssh" / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    host.exec(["mkdir", "-p", "/root/.ssh"])
    host.copy_in(key.with_suffix(".pub"), "/root/.ssh/authorized_keys")
    host.exec(["chown", "root:root", "/root/.ssh/authorized_keys"])
    host.copy_in(build_cuda_toolkit_archive(work), "/tmp/cuda.tar")
    host.exec(["tar", "-C", "/usr/local", "-xf", "/tmp/cuda.tar"])
    host.exec(["ln", "-sfn", "cuda-12.6", "/usr/local/cuda"])
    stage_container_runtime(host)  # the nvidia runtime is registered where it is installed
    # A GPU host, to the doctor: nvidia-smi's STAND-IN lists one (without a GPU the doctor
    # prescribes no nvidia runtime: docs/doctor.md, Fixes).
    host.copy_in(REPO_ROOT / "tests" / "fixtures" / "cuda" / "nvidia-smi.standin",
                 "/usr/local/bin/nvidia-smi")  # fmt: skip
    host.exec(["chmod", "755", "/usr/local/bin/nvidia-smi"])
    tarball = build_tensorrt_tarball(TRT_VERSION, "cp311", work / "trt")
    playbook_vars = {**vars_for_test_hosts(work), "tensorrt_tarball": str(tarball)}
    write_daemon_json(host, OTHER_DAEMON_KEYS, work)
    inventory = write_inventory(
        work / "inventory.yml", {"fix": {"ansible_host": host.container}}, playbook_vars
    )
    provisioned = run_playbook(ANSIBLE_ENDS["newest"].ensure(), inventory, "--tags", ROLES)
    assert provisioned.rc == 0, provisioned.messages() or provisioned.stderr
    host.exec(["sh", "-c", f"rm -f {DAEMON_JSON}.*~"])  # the tests count their own backups
    return playbook_vars


def serve_ssh(host: Host, home: Path) -> str:
    """The host's sshd started on a free loopback port (a container of a kept state runs no
    process of the one committed), that port's host key in `home`'s known_hosts: the
    address `root@127.0.0.1:PORT`."""
    port = free_port()
    host.exec(["mkdir", "-p", "/run/sshd"])
    host.exec(["sh", "-c", f"/usr/sbin/sshd -p {port} -o ListenAddress=127.0.0.1 "
               "-o PasswordAuthentication=no"])  # fmt: skip
    host_key = host.exec(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).stdout.split()[:2]
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
    wait_for_port(port)
    return f"root@127.0.0.1:{port}"


@pytest.fixture(scope="module")
def fleet_state() -> ProvisionedState:
    return ProvisionedState("x86-debian12-ssh", "newest", PROVISION_INPUTS, {"tags": ROLES},
                            base=SshdImage("x86-debian12").ensure())  # fmt: skip


@pytest.fixture
def fleet(
    tmp_path_factory: pytest.TempPathFactory, fleet_state: ProvisionedState
) -> Iterator[Fleet]:
    """A provisioned fleet host of this test's own, which it may break as it likes: a
    container of the kept state, else a fresh host provisioned here (and kept), so a test
    gives the same verdict alone, in any order and on any worker. The controller's folder
    (HOME for ssh) has a short path: ssh's control socket under a test's own tmp_path was
    "too long for Unix domain socket"."""
    work = tmp_path_factory.mktemp("fleet")

    def start(image: str | None) -> Host:
        return start_host("x86-debian12", "doctor-fix",
                          image=image or SshdImage("x86-debian12").ensure())  # fmt: skip

    host, playbook_vars = fleet_state.host(work, start, provision_fleet_host)
    try:
        home = work / "home"
        yield Fleet(host, home, serve_ssh(host, home), playbook_vars)
    finally:
        remove_host(host)


def fix(fleet: Fleet, *args: str, yes: bool = True) -> subprocess.CompletedProcess:
    """jetson-env doctor --fix [--yes] on this machine (stdin not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "--no-color", "doctor", "--fix",
         *(["--yes"] if yes else []),
         "--host", fleet.address, "--identity", str(fleet.home / ".ssh" / "id_ed25519"),
         "--python", PYTHON, "--playbook-vars", json.dumps(fleet.playbook_vars), *CHECKS,
         *args],
        capture_output=True, text=True, timeout=1200, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(fleet.home), "SSH_AUTH_SOCK": ""},
    )  # fmt: skip


def report(fleet: Fleet) -> dict:
    """The doctor's JSON report over SSH, without --fix."""
    proc = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "doctor", "--json", "--host", fleet.address,
         "--identity", str(fleet.home / ".ssh" / "id_ed25519"), "--python", PYTHON, *CHECKS],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "HOME": str(fleet.home), "SSH_AUTH_SOCK": ""},
    )  # fmt: skip
    return json.loads(proc.stdout)


def findings_of(report: dict, check: str, summary_start: str) -> list[dict]:
    return [
        f for f in report["findings"]
        if f["check"] == check and f["summary"].startswith(summary_start)
    ]  # fmt: skip


def write_daemon_json(host: Host, config: dict, work: Path) -> None:
    local = work / "daemon.json"
    local.write_text(json.dumps(config))
    host.exec(["mkdir", "-p", str(Path(DAEMON_JSON).parent)])
    host.copy_in(local, DAEMON_JSON)


def test_without_nvidias_runtime_nothing_registers_it_and_the_doctor_names_its_package(
    fleet: Fleet, tmp_path: Path
):
    """No nvidia-container-runtime on the host (its package comes from NVIDIA's apt
    repository, off by default): docker_runtime leaves the nvidia runtime out of daemon.json
    and says why, where `docker run --runtime nvidia` would fail; a daemon.json that registers
    it anyway is not ok to the doctor, whose remedy is the package and the role that installs
    it (docker_runtime_install_packages). Then the runtime (a stand-in) is staged where its
    package puts it again: the role registers it."""
    host = fleet.host
    host.exec(["rm", "/usr/bin/nvidia-container-runtime"])
    inventory = write_inventory(
        tmp_path / "inventory.yml", {"fix": {"ansible_host": host.container}}, fleet.playbook_vars
    )
    write_daemon_json(host, OTHER_DAEMON_KEYS, tmp_path)

    left_out = run_playbook(ANSIBLE_ENDS["newest"].ensure(), inventory, "--tags", "docker_runtime")

    assert left_out.rc == 0, left_out.messages() or left_out.stderr
    assert json.loads(host.exec(["cat", DAEMON_JSON]).stdout) == OTHER_DAEMON_KEYS
    said = left_out.task_result("Say that the nvidia runtime is not registered", "fix")["msg"]
    assert "NVIDIA's container runtime is not installed" in said, said
    assert "docker_runtime_install_packages=true installs it (docker.io, nvidia-container-" in said

    write_daemon_json(host, {**OTHER_DAEMON_KEYS, "runtimes": NVIDIA_RUNTIME}, tmp_path)
    (registered,) = findings_of(report(fleet), "docker", DAEMON_JSON)
    assert registered["status"] == "warn", registered
    assert "nvidia-container-runtime is not installed" in registered["summary"]
    assert registered["remedy"] == "apt-get install -y nvidia-container-toolkit"
    assert registered["playbook"]["vars"] == {
        "docker_runtime_install_packages": True,
        "docker_runtime_packages": ["nvidia-container-toolkit"],
    }

    stage_container_runtime(host)
    write_daemon_json(host, OTHER_DAEMON_KEYS, tmp_path)
    registers = run_playbook(ANSIBLE_ENDS["newest"].ensure(), inventory, "--tags", "docker_runtime")

    assert registers.rc == 0, registers.messages() or registers.stderr
    assert json.loads(host.exec(["cat", DAEMON_JSON]).stdout)["runtimes"] == NVIDIA_RUNTIME
    (ok,) = findings_of(report(fleet), "docker", DAEMON_JSON)
    assert ok["status"] == "ok", ok


def test_provision_then_break_then_fix(fleet: Fleet, tmp_path: Path):
    """The fleet host as provisioned, broken four ways, fixed by --fix."""
    host = fleet.host
    assert pip_version(host, "termcolor")
    provisioned_daemon_json = host.exec(["cat", DAEMON_JSON]).stdout
    assert json.loads(provisioned_daemon_json)["runtimes"] == NVIDIA_RUNTIME

    host.exec([PYTHON, "-m", "pip", "uninstall", "--quiet", "--yes", "--break-system-packages",
               "termcolor"])  # fmt: skip
    host.exec(["sh", "-c", f"rm {TRT_LD_CONF} {CUDA_LD_CONF} {CUDA_PROFILE} && ldconfig"])
    host.exec(["rm", "-f", *host.exec(["sh", "-c", f"ls {DAEMON_JSON}.*~ || true"]).stdout.split()])
    write_daemon_json(host, OTHER_DAEMON_KEYS, tmp_path)
    broken = report(fleet)
    assert [f["status"] for f in findings_of(broken, "cuda", "login shells")] == ["warn"]
    assert [f["status"] for f in findings_of(broken, "docker", DAEMON_JSON)] == ["warn"]
    assert findings_of(broken, "docker", DAEMON_JSON)[0]["playbook"]["role"] == "docker_runtime"
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])

    unasked = fix(fleet, yes=False)

    assert unasked.returncode == 2, unasked.stdout + unasked.stderr
    assert "no terminal to ask" in unasked.stderr and "--yes" in unasked.stderr
    assert "--check --diff" in unasked.stderr  # the plan was shown
    assert pip_version(host, "termcolor") is None

    fixed = fix(fleet)

    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "--fix: role python_base on root@127.0.0.1" in fixed.stdout
    assert "--fix: role tensorrt on root@127.0.0.1" in fixed.stdout
    assert "--fix: role cuda_env on root@127.0.0.1" in fixed.stdout
    assert "--fix: role docker_runtime on root@127.0.0.1" in fixed.stdout
    assert "termcolor: fail -> ok" in fixed.stdout
    assert "libnvinfer: fail -> ok" in fixed.stdout
    assert "docker: warn -> ok" in fixed.stdout  # no engine: the skip and daemon.json's ok
    assert "--check --diff" in fixed.stderr  # the plan ran first
    assert f"running: {Path(sys.executable).parent}/ansible-playbook " in fixed.stderr
    assert pip_version(host, "termcolor")
    assert f"/opt/TensorRT-{TRT_VERSION}/lib" in host.exec(["cat", TRT_LD_CONF]).stdout
    assert "/usr/local/cuda/lib64" in host.exec(["cat", CUDA_LD_CONF]).stdout
    after = report(fleet)
    for check, summary in (("cuda", "libcudart"), ("cuda", "login shells"),
                           ("docker", DAEMON_JSON)):  # fmt: skip
        assert [f["status"] for f in findings_of(after, check, summary)] == ["ok"], after
    assert host.exec(["cat", CUDA_PROFILE]).stdout.startswith("#")  # the role's template
    assert json.loads(host.exec(["cat", DAEMON_JSON]).stdout) == json.loads(
        provisioned_daemon_json
    )  # nvidia merged back, the other keys kept
    backups = host.exec(["sh", "-c", f"cat {DAEMON_JSON}.*~"]).stdout
    assert json.loads(backups) == OTHER_DAEMON_KEYS  # the role kept the broken one
    changed = paths_changed_since(host, MARKER)
    expected = ("/etc/ld.so.c", "/usr/local/lib/python3", "/var/log", "/root/.cache",
                "/var/cache/ldconfig", "/run", CUDA_PROFILE, DAEMON_JSON)  # fmt: skip
    unexpected = {
        path
        for path in changed
        if path not in ("/etc", "/etc/profile.d", "/etc/docker")
        and not path.startswith(expected)
        and "termcolor" not in path
    }
    assert unexpected == set(), changed

    again = fix(fleet)

    assert again.returncode == 0, again.stdout + again.stderr
    assert "--fix: nothing to do" in again.stdout
    assert "ansible-playbook" not in again.stderr


def test_bad_input_and_an_unreachable_host_change_nothing(fleet: Fleet):
    fleet.host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])
    unreachable = Fleet(fleet.host, fleet.home, f"root@127.0.0.1:{free_port()}", {})

    proc = fix(unreachable)

    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "cannot reach" in proc.stdout
    assert "ansible-playbook" not in proc.stderr

    unknown_tag = fix(fleet, "--fix=cuda_env,no_such_role")

    assert unknown_tag.returncode == 2, unknown_tag.stdout + unknown_tag.stderr
    assert "no role no_such_role in jetson_env.jetson.provision" in unknown_tag.stderr
    assert unknown_tag.stdout == ""  # refused before any probe
    assert paths_changed_since(fleet.host, MARKER) == set()


def test_a_bundle_without_a_roles_files_leaves_the_role_out_and_says_where_they_go(
    fleet: Fleet, tmp_path: Path
):
    """`--fix --bundle B` where B was made for tensorrt but without its files (the TensorRT
    wheels or tarball, which nothing here can download): the playbook's preflight would skip
    the tensorrt role for want of them, so --fix does not run it (it reported "failed
    (tensorrt): still fail after role tensorrt") but leaves it out, saying where the files go."""
    host = fleet.host
    bundle = tmp_path / "bundle"
    made = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "bundle", str(bundle), "--x86", "--roles",
         "tensorrt", "--no-controller", "--python-version", "3.11", "--glibc", "2.36",
         "--distribution", "debian/bookworm"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    host.exec(["sh", "-c", f"rm {TRT_LD_CONF} && ldconfig"])

    fixed = fix(fleet, "--bundle", str(bundle), "--json")

    said = fixed.stdout + fixed.stderr
    document = json.loads(fixed.stdout)
    assert "tensorrt" not in document["plan"]["roles"], document["plan"]
    assert "--fix: role tensorrt" not in said
    (row,) = [r for r in document["findings"] if r["check"] == "libnvinfer"]
    assert row["verdict"] == "left out", row
    assert row["why"].startswith(
        f"the bundle {bundle} lacks role tensorrt's files for this host: TensorRT wheels"
    ), row
    assert "add it as pip/tensorrt_cu13*-*.whl" in row["why"]
    assert "--file tensorrt=PATH" in row["why"]
    assert f"left out for libnvinfer on {fleet.address}: role tensorrt fixes it" in said


NANO = "nano-r32.4.3"
# --fix runs from an unrelated folder: the installed wheel carries the roles.
WORKDIR = "/root/elsewhere"
# What a flashed JetPack 4 has: JetPack's own apt source list and the CSV mount lists
# (l4t.csv from L4T itself, the others from NVIDIA's nvidia-container-csv-* packages).
JETPACK_SOURCE = roles.default("jetpack_apt", "existing_source")
STANDIN_KEY = "/etc/apt/keyrings/jetson-env-standin.asc"
NANO_VARS = {"docker_runtime_container_build": True}  # no Docker engine in the test host


def flash_like_jetpack4(host: Host, apt: StandinApt, work: Path) -> None:
    trust_in_host(host, apt.tls)
    (work / "key.asc").write_bytes(apt.key.armored)
    (work / "source.list").write_text(f"deb [signed-by={STANDIN_KEY}] {apt.url} r32.4 main\n")
    (work / "l4t.csv").write_text(
        "# STAND-IN for L4T's own l4t.csv (jetson-env tests)\ndir, /etc\n"
    )
    host.exec(["mkdir", "-p", str(Path(STANDIN_KEY).parent), CSV_DIR])
    host.copy_in(work / "key.asc", STANDIN_KEY)
    host.copy_in(work / "source.list", JETPACK_SOURCE)
    host.copy_in(work / "l4t.csv", f"{CSV_DIR}/l4t.csv")
    only_jetpack = ["-o", f"Dir::Etc::sourcelist={JETPACK_SOURCE}", "-o", "Dir::Etc::sourceparts=-",
                    "-o", "APT::Get::List-Cleanup=0"]  # fmt: skip
    host.exec(["apt-get", "update", "-qq", *only_jetpack], timeout=600)
    host.exec(["apt-get", "install", "-y", "-qq", *CSV_PACKAGES.values()], timeout=600)
    # daemon.json as docker_runtime writes it on a Jetson, with the runtime it names
    # (nvidia-docker2's, a stand-in)
    write_daemon_json(host, {"runtimes": NVIDIA_RUNTIME, "default-runtime": "nvidia"}, work)
    stage_container_runtime(host)


def local_fix(host: Host) -> subprocess.CompletedProcess:
    """`jetson-env doctor --fix --yes --json` on the host itself, from a folder that holds
    nothing of jetson-env (the installed wheel's collection has the roles)."""
    return host.exec(
        ["sh", "-c", f'cd {WORKDIR} && exec "$@"', "sh", f"{VENV}/bin/jetson-env", "--no-color",
         "doctor", "--fix", "--yes", "--json", "--python", PYTHON, "--check", "docker",
         "--no-smoke", "--playbook-vars", json.dumps(NANO_VARS)],
        check=False, timeout=900,
    )  # fmt: skip


def test_a_nano_standin_on_debians_python_fixes_its_missing_csv_list_itself(tmp_path: Path):
    """jetson-env runs here in the stand-in's Debian Python 3.11: a real JetPack 4 Nano has
    Python 3.6, in which jetson-env itself (3.10+) does not run, so there --fix comes from
    another machine (--host, -i); this test covers the local flow and the role, not that."""
    host = start_x86_with_files_of(NANO, "doctor-fix-nano", provision_extra=True)
    try:
        with standin_apt([matrix.load().release("32.4.3")], arch="amd64") as apt:
            flash_like_jetpack4(host, apt, tmp_path)
            host.install_project()
            host.exec(["mkdir", "-p", WORKDIR])
            host.exec(["dpkg", "--purge", CSV_PACKAGES["cudnn.csv"]])
            host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])

            fixed = local_fix(host)

            assert fixed.returncode == 0, fixed.stdout + fixed.stderr
            document = json.loads(fixed.stdout)  # stdout is the one JSON document
            fix_schema_validator().validate(document)
            assert document["kind"] == "fix" and document["host"] == "localhost"
            assert document["plan"]["roles"] == ["docker_runtime"]
            assert document["plan"]["vars"]["docker_runtime_packages"] == [
                CSV_PACKAGES["cudnn.csv"]
            ]
            assert document["applied"] and document["changed"] == 1
            assert {"check": "docker", "before": "fail", "after": "warn"} in document["moved"]
            csv_before = [f for f in document["before"]["findings"] if "cudnn.csv" in f["summary"]]
            assert [f["status"] for f in csv_before] == ["fail"]
            after = [f for f in document["after"]["findings"] if "cudnn.csv" in f["summary"]]
            assert [f["status"] for f in after] == ["ok"], after
            assert "-c local" in fixed.stderr  # this machine, no SSH
            changed = paths_changed_since(host, MARKER)
            package_doc = f"/usr/share/doc/{CSV_PACKAGES['cudnn.csv']}"
            expected = (CSV_DIR, package_doc, "/var/lib/dpkg", "/var/lib/apt", "/var/cache",
                        "/var/log", "/root/.cache")  # fmt: skip
            # Nothing is written into the folder --fix runs from.
            unexpected = {
                path for path in changed
                if path != "/usr/share/doc" and not path.startswith(expected)
            }  # fmt: skip
            assert unexpected == set(), changed

            again = local_fix(host)

            # Docker itself is missing too: docker_runtime installs it when asked
            # (docker_runtime_install_packages), so the second --fix plans that role; its
            # plan stops at apt, which has no Docker for JetPack 4 here, so it is not applied.
            second = json.loads(again.stdout)
            assert second["plan"]["roles"] == ["docker_runtime"], second["plan"]
            assert second["plan"]["vars"] == {"docker_runtime_install_packages": True}
            assert second["plan"]["manual"] == [] and not second["applied"], second
            (verdict,) = second["findings"]
            assert verdict["verdict"] == "failed", verdict
            assert verdict["why"].startswith("the plan of role docker_runtime: "), verdict
    finally:
        remove_host(host)


ORIN = "orin-r36.4.3"


def test_a_termcolor_fix_changes_termcolor_only_on_a_jetson_row_with_an_exact_numpy_pin():
    """JetPack 6's row pins numpy==1.26.1 and lists onnx (with protobuf and ml_dtypes) for
    torch.onnx.export. A user with numpy 1.26.4 and no termcolor runs `doctor --fix`: its plan
    names termcolor alone, and after it numpy is still 1.26.4 and onnx is not there (the whole
    python_base ran: numpy moved to the pin, onnx and protobuf 7 came with termcolor). Then
    the full python_base's plan (provision --check) keeps that numpy too: the pin is for a
    Python without numpy. An x86 host with the Orin's release files: the row is the Jetson's,
    nothing here depends on the CPU."""
    host = start_x86_with_files_of(ORIN, "doctor-fix-sets", provision_extra=True)
    try:
        host.install_project()
        host.exec([PYTHON, "-m", "pip", "install", "--quiet", "--break-system-packages",
                   "numpy==1.26.4"], timeout=900)  # fmt: skip
        host.exec(["mkdir", "-p", WORKDIR])
        jetson_env = ["sh", "-c", f'cd {WORKDIR} && exec "$@"', "sh", f"{VENV}/bin/jetson-env",
                      "--no-color"]  # fmt: skip

        fixed = host.exec([*jetson_env, "doctor", "--fix", "--yes", "--json", "--python",
                           PYTHON, "--check", "termcolor", "--no-smoke"],
                          check=False, timeout=900)  # fmt: skip

        assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]
        document = json.loads(fixed.stdout)
        assert document["plan"]["vars"]["python_base_sets"] == ["packages"], document["plan"]
        assert {"check": "termcolor", "before": "fail", "after": "ok"} in document["moved"]
        would = [line for line in fixed.stderr.splitlines()
                 if "--check:" in line and "pip would install" in line]  # fmt: skip
        assert len(would) == 1 and "termcolor==" in would[0], would or fixed.stderr[-3000:]
        assert "numpy" not in would[0] and "onnx" not in would[0], would
        assert pip_version(host, "numpy") == "1.26.4"
        for untouched in ("onnx", "protobuf", "ml_dtypes"):
            assert pip_version(host, untouched) is None, untouched

        planned = host.exec([*jetson_env, "provision", "--check", "--python", PYTHON, "--tags",
                             "python_base", "-e", '{"python_base_sets": ["numpy", "packages"]}'],
                            check=False, timeout=900)  # fmt: skip

        said = planned.stdout + planned.stderr
        assert planned.returncode == 0, said[-3000:]
        assert "pip finds every requirement met" in said, said[-3000:]
    finally:
        remove_host(host)


NO_APT_TENSORRT = '{"tensorrt_from_apt": false}'  # the stand-in's, not JetPack's packages


def pip_would_install(run: subprocess.CompletedProcess) -> list[str]:
    """The lines of pip_packages' --check that say what pip would install."""
    return [line for line in (run.stdout + run.stderr).splitlines()
            if "--check:" in line and "pip would install" in line]  # fmt: skip


def test_onnx_comes_with_the_tensorrt_role_where_its_tensorrt_offers_the_onnx_converter(
    tmp_path: Path,
):
    """JetPack 6's row: onnx (what torch.onnx.export needs, for TensorRT's OnnxParser) is the
    ONNX converter's, the tensorrt role's `onnx` set, not python_base's. python_base's pip sets
    plan no onnx (its `prerequisites` set brought onnx, protobuf 7 and ml_dtypes); the tensorrt
    role plans it and installs it once the host's TensorRT offers the ONNX converter: STAND-IN
    bindings 10.3.0 (JetPack 6's) with a STAND-IN libnvinfer.so.10, not from apt here. An x86
    host with the Orin's release files: the row is the Jetson's."""
    host = start_x86_with_files_of(ORIN, "onnx-set", provision_extra=True)
    try:
        host.install_project()
        tag = host.exec([PYTHON, "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"])
        wheel = build_bindings_wheel(TRT_VERSION, tag.stdout.strip(), tmp_path / "trt")
        host.copy_in(
            build_libnvinfer(TRT_VERSION, tmp_path / "trt"), "/usr/local/lib/libnvinfer.so.10"
        )
        host.exec(["ldconfig"])
        host.copy_in(wheel, f"/tmp/{wheel.name}")
        host.exec([PYTHON, "-m", "pip", "install", "--quiet", "--break-system-packages",
                   "--no-deps", "--no-index", f"/tmp/{wheel.name}"])  # fmt: skip
        host.exec(["mkdir", "-p", WORKDIR])
        provision = ["sh", "-c", f'cd {WORKDIR} && exec "$@"', "sh", f"{VENV}/bin/jetson-env",
                     "--no-color", "provision", "--python", PYTHON]  # fmt: skip

        base = host.exec([*provision, "--check", "--tags", "python_base", "-e",
                          '{"python_base_sets": ["numpy", "prerequisites", "packages"]}'],
                         check=False, timeout=900)  # fmt: skip

        assert base.returncode == 0, (base.stdout + base.stderr)[-3000:]
        would = pip_would_install(base)
        assert not any("onnx" in line for line in would), would

        planned = host.exec([*provision, "--check", "--tags", "tensorrt", "-e", NO_APT_TENSORRT],
                            check=False, timeout=900)  # fmt: skip

        assert planned.returncode == 0, (planned.stdout + planned.stderr)[-3000:]
        assert any("onnx==" in line for line in pip_would_install(planned)), planned.stdout[-3000:]
        assert pip_version(host, "onnx") is None

        applied = host.exec([*provision, "--tags", "tensorrt", "-e", NO_APT_TENSORRT],
                            check=False, timeout=900)  # fmt: skip

        assert applied.returncode == 0, (applied.stdout + applied.stderr)[-3000:]
        assert pip_version(host, "onnx")
        assert pip_version(host, "tensorrt") == TRT_VERSION  # TensorRT itself is as it was
    finally:
        remove_host(host)
