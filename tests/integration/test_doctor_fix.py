"""`jetson-env doctor --fix --host` for real: a host provisioned by the playbook, broken in
ways the doctor knows (termcolor uninstalled, the stand-in TensorRT's and the stand-in
CUDA's folders dropped from ld.so.conf.d), fixed by the roles that the findings name.

The host is a container of its own from the x86 test host's image, with an sshd on
loopback: the doctor (paramiko) and ansible-playbook (ssh, host key checked against a
known_hosts written here) both reach it as `root@127.0.0.1:PORT`, as they reach a
Jetson. --fix runs the ansible-playbook beside this interpreter (the provision extra's,
as `pip install '.[provision]'` installs it); the host is provisioned with the newest end's.
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
    remove_host,
    run_playbook,
    start_host,
    vars_for_test_hosts,
    write_inventory,
)
from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import Host, free_port, wait_for_port
from support.standins import build_cuda_toolkit_archive, build_tensorrt_tarball

pytestmark = pytest.mark.hosts

PYTHON = "/usr/bin/python3"
TRT_VERSION = "10.3.0"
TRT_LD_CONF = "/etc/ld.so.conf.d/jetson-env-tensorrt.conf"
CUDA_LD_CONF = "/etc/ld.so.conf.d/jetson-env-cuda.conf"
CHECKS = ("--check", "termcolor", "--check", "libnvinfer", "--check", "cuda", "--no-smoke")


@dataclass(frozen=True)
class Fleet:
    host: Host
    home: Path  # HOME for the controller's ssh: the key and known_hosts
    address: str
    playbook_vars: dict


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    work = tmp_path_factory.mktemp("doctor-fix")
    host = start_host("x86-debian12", "doctor-fix")
    try:
        install = (
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
            "apt-get install -y -qq --no-install-recommends openssh-server >/dev/null"
        )
        host.exec(["sh", "-c", install], timeout=900)
        home = work / "home"
        (home / ".ssh").mkdir(parents=True, mode=0o700)
        key = home / ".ssh" / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        host.exec(["mkdir", "-p", "/run/sshd", "/root/.ssh"])
        host.copy_in(key.with_suffix(".pub"), "/root/.ssh/authorized_keys")
        host.exec(["chown", "root:root", "/root/.ssh/authorized_keys"])
        port = free_port()
        host.exec(["sh", "-c", f"/usr/sbin/sshd -p {port} -o ListenAddress=127.0.0.1 "
                   "-o PasswordAuthentication=no"])  # fmt: skip
        host_key = host.exec(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).stdout.split()[:2]
        (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
        wait_for_port(port)
        host.copy_in(build_cuda_toolkit_archive(work), "/tmp/cuda.tar")
        host.exec(["tar", "-C", "/usr/local", "-xf", "/tmp/cuda.tar"])
        host.exec(["ln", "-sfn", "cuda-12.6", "/usr/local/cuda"])
        tarball = build_tensorrt_tarball(TRT_VERSION, "cp311", work / "trt")
        playbook_vars = {**vars_for_test_hosts(work), "tensorrt_tarball": str(tarball)}
        yield Fleet(host, home, f"root@127.0.0.1:{port}", playbook_vars)
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


def test_provision_then_break_then_fix(fleet: Fleet, tmp_path: Path):
    host = fleet.host
    inventory = write_inventory(
        tmp_path / "inventory.yml", {"fix": {"ansible_host": host.container}}, fleet.playbook_vars
    )
    provisioned = run_playbook(
        ANSIBLE_ENDS["newest"].ensure(), inventory, "--tags", "cuda_env,python_base,tensorrt"
    )
    assert provisioned.rc == 0, provisioned.messages() or provisioned.stderr
    assert pip_version(host, "termcolor")

    host.exec([PYTHON, "-m", "pip", "uninstall", "--quiet", "--yes", "--break-system-packages",
               "termcolor"])  # fmt: skip
    host.exec(["sh", "-c", f"rm {TRT_LD_CONF} {CUDA_LD_CONF} && ldconfig"])
    host.exec(["touch", "/tmp/before-fix"])

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
    assert "termcolor: fail -> ok" in fixed.stdout
    assert "libnvinfer: fail -> ok" in fixed.stdout
    assert "--check --diff" in fixed.stderr  # the plan ran first
    assert f"running: {Path(sys.executable).parent}/ansible-playbook " in fixed.stderr
    assert pip_version(host, "termcolor")
    assert f"/opt/TensorRT-{TRT_VERSION}/lib" in host.exec(["cat", TRT_LD_CONF]).stdout
    assert "/usr/local/cuda/lib64" in host.exec(["cat", CUDA_LD_CONF]).stdout
    cudart = [f for f in report(fleet)["findings"] if "libcudart" in f["summary"]]
    assert [f["status"] for f in cudart] == ["ok"], cudart
    changed = paths_changed_since(host, "/tmp/before-fix")
    expected = ("/etc/ld.so.c", "/usr/local/lib/python3", "/var/log", "/root/.cache",
                "/var/cache/ldconfig", "/run")  # fmt: skip
    unexpected = {
        path
        for path in changed
        if path != "/etc" and not path.startswith(expected) and "termcolor" not in path
    }
    assert unexpected == set(), changed

    again = fix(fleet)

    assert again.returncode == 0, again.stdout + again.stderr
    assert "--fix: nothing to do" in again.stdout
    assert "ansible-playbook" not in again.stderr


def test_an_unreachable_host_changes_nothing(fleet: Fleet):
    unreachable = Fleet(fleet.host, fleet.home, f"root@127.0.0.1:{free_port()}", {})

    proc = fix(unreachable)

    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "cannot reach" in proc.stdout
    assert "ansible-playbook" not in proc.stderr
