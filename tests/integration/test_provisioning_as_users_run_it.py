"""Provisioning the way users run it: the README's install, over SSH, and a real JetPack 4 Python.

- A newcomer: a copy of the checkout (what git tracks, like a fresh clone), the README's
  provisioning install run verbatim in it with an empty HOME (a venv in ~/jetson-env outside
  the checkout; pip builds and installs jetson-env from the checkout, not editable, and nothing
  tells pip where else to look: jetson-env is on no index), then from an unrelated
  folder `jetson-env provision --check` and the real run against a fresh x86 host over SSH
  (a known_hosts with the host's key), a second run changing nothing, nothing written into
  that folder, the lock file beside the inventory; that venv's `jetson-env doctor --host`
  agreeing; a breakage (termcolor removed) repaired by `jetson-env doctor --fix --yes`.
  torch comes from pip's configured index: the controller computes the host's wheel tags
  (glibc 2.36) to fetch the matrix's manylinux_2_28 wheel.
- JetPack 4: an x86 host with a Nano's release files and a genuine CPython 3.6.15 (pyenv's
  build on this machine) as the interpreter Ansible's modules and the stack use. The oldest
  supported ansible-core (2.16) provisions it (cuda_env, python_base, torch from a STAND-IN of
  NVIDIA's wheel, docker_runtime; JETPACK4_ROLES says why the others cannot run there), a
  second run and --check change nothing; the newest stops in the preflight, naming the way
  out, before any change; the probes run in that 3.6; a break (termcolor removed) is repaired
  by `jetson-env doctor -i --fix` from the controller.
"""

import hashlib
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import (
    PLAYBOOK_TIMEOUT_S,
    TORCH_WHEEL_X86,
    TORCHVISION_FIXTURE,
    paths_changed_since,
    remove_host,
    run_playbook,
    source_archive,
    start_x86_with_files_of,
    write_inventory,
)
from playbook_support import start_host as start_playbook_host
from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import REPO_ROOT, VENV, Host, SshdImage, fresh_clone, project_wheel
from support.pythons import pyenv_version, required
from support.standins import (
    build_jetson_torch_wheel,
    build_tensorrt_tarball,
    stage_container_runtime,
)

from jetson_env import collection, matrix, roles

pytestmark = pytest.mark.hosts

README = (REPO_ROOT / "README.md").read_text()
TRT_VERSION = "10.3.0"
PYTHON36 = pyenv_version("3.6.15")
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def readme_provisioning_install() -> str:
    """The first command of the README's Provisioning section: the documented install."""
    section = README[README.index("## Provisioning") :]
    block = section[section.index("```sh\n") + len("```sh\n") :]
    return block.splitlines()[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_sshd(host: Host, home: Path) -> int:
    """Debian's sshd (the host is of SshdImage) started on a free loopback port; HOME's key is
    authorised and the host's key is in HOME's known_hosts (verified, as users have it).
    Returns the port."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, parents=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh_dir / "id_ed25519")],
        check=True,
    )
    host.exec(["mkdir", "-p", "-m", "700", "/root/.ssh", "/run/sshd"])
    host.copy_in(ssh_dir / "id_ed25519.pub", "/root/.ssh/authorized_keys")
    host.exec(["chown", "root:root", "/root/.ssh/authorized_keys"])
    port = free_port()
    subprocess.run(
        ["docker", "exec", "--detach", host.container, "/usr/sbin/sshd", "-D", "-p", str(port),
         "-o", "ListenAddress=127.0.0.1", "-o", "PasswordAuthentication=no"],
        check=True, capture_output=True,
    )  # fmt: skip
    key = host.exec(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).stdout.split()
    (ssh_dir / "known_hosts").write_text(f"[127.0.0.1]:{port} {key[0]} {key[1]}\n")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return port
        time.sleep(0.2)
    raise AssertionError(f"sshd in {host.name} did not listen on port {port}")


@pytest.fixture(scope="module")
def newcomer_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The newcomer's HOME: empty (no controller cache, no ~/.ansible)."""
    return tmp_path_factory.mktemp("newcomer-home")


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory, newcomer_home: Path) -> Path:
    """The README's provisioning install, verbatim, in a fresh clone: the venv it makes (in
    the newcomer's HOME, outside any checkout)."""
    work = tmp_path_factory.mktemp("newcomer")
    clone = fresh_clone(work / "jetson-env")
    command = readme_provisioning_install()
    assert "pip install" in command and "'.[provision]'" in command, command
    env = {k: v for k, v in newcomer_env(newcomer_home).items() if k != "PIP_FIND_LINKS"}
    subprocess.run(["bash", "-c", command], cwd=clone, env=env, check=True, timeout=900)
    venv = newcomer_home / "jetson-env"
    assert (venv / "bin" / "jetson-env").is_file(), sorted(newcomer_home.iterdir())
    return venv


def newcomer_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(HOME=str(home), SSH_AUTH_SOCK="", ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture(scope="module")
def newcomer_host(newcomer_home: Path) -> Iterator[tuple[Host, Path, int]]:
    host = start_playbook_host("x86-debian12", "newcomer", image=SshdImage("x86-debian12").ensure())
    try:
        yield host, newcomer_home, start_sshd(host, newcomer_home)
    finally:
        remove_host(host)


def newcomer_runs(venv: Path, home: Path, where: Path, *args: str):
    """`jetson-env ARGS` of the newcomer's venv, run from `where`, HOME=home."""
    return subprocess.run(
        [str(venv / "bin" / "jetson-env"), *args], cwd=where, env=newcomer_env(home),
        capture_output=True, text=True, timeout=PLAYBOOK_TIMEOUT_S, check=False,
    )  # fmt: skip


def newcomer_provision(venv: Path, home: Path, where: Path, inventory: Path, *args: str):
    """`jetson-env provision -i INVENTORY` (Ansible's default output) and its recap."""
    result = newcomer_runs(venv, home, where, "provision", "-i", str(inventory), *args)
    fields = ("ok", "changed", "unreachable", "failed")
    recap = {
        m[0]: dict(zip(fields, map(int, m[1:]), strict=True)) for m in RECAP.findall(result.stdout)
    }
    return result, recap


def test_newcomer_provisions_an_x86_host_over_ssh_from_the_readme_alone(
    newcomer: Path, newcomer_host: tuple[Host, Path, int], tmp_path: Path
):
    host, home, port = newcomer_host
    ansible_version = subprocess.run(
        [str(newcomer / "bin" / "ansible"), "--version"], capture_output=True, text=True
    ).stdout
    elsewhere = tmp_path / "elsewhere"  # a folder of the user's that has nothing of ours
    elsewhere.mkdir()
    trt = build_tensorrt_tarball(TRT_VERSION, "cp311", tmp_path / "trt")
    vision = source_archive(TORCHVISION_FIXTURE, "vision-0.28.0", tmp_path)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"newcomer": {
        "ansible_host": "127.0.0.1", "ansible_port": port, "ansible_user": "root",
        # ssh finds ~/.ssh through the passwd entry, not HOME: name the test HOME's files.
        # Host keys are still verified (StrictHostKeyChecking stays at its default).
        "ansible_ssh_private_key_file": str(home / ".ssh" / "id_ed25519"),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={home / '.ssh' / 'known_hosts'}",
        "ansible_python_interpreter": "/usr/bin/python3",
        # What cannot be had here, given as the documented variables for offline hosts:
        # TensorRT's tarball (behind NVIDIA's login) and torchvision's source (GitHub).
        "tensorrt_tarball": str(trt),
        "torchvision_source_archive": str(vision),
        "torchvision_source_sha256": hashlib.sha256(vision.read_bytes()).hexdigest(),
        # The matrix's x86 torch (a CUDA 13 build, with about 5 GB of CUDA wheels) on a host
        # without a GPU: the CPU build of the previous release, from the same index.
        "torch_version": "2.13.0",
        "torch2trt_enabled": False,
        # A container: no systemd or Docker daemon, no sudo (we log in as root).
        "docker_runtime_container_build": True, "docker_runtime_install_packages": False,
        "ansible_become": False,
    }}}}))  # fmt: skip
    cache = home / ".cache" / "jetson-env"

    check, check_recap = newcomer_provision(newcomer, home, elsewhere, inventory, "--check")

    assert check.returncode == 0, check.stdout[-4000:] + check.stderr
    assert check_recap["newcomer"]["failed"] == 0
    assert (
        "--check: the torch wheel for newcomer would be downloaded from pip's configured index"
        in (" ".join(check.stdout.split()))
    )
    assert not cache.exists(), sorted(cache.rglob("*"))

    run, recap = newcomer_provision(newcomer, home, elsewhere, inventory)

    assert run.returncode == 0, run.stdout[-6000:] + run.stderr
    assert recap["newcomer"]["changed"] > 0
    assert "[DEPRECATION WARNING]" not in run.stdout + run.stderr, ansible_version
    # torch came from the index, a manylinux_2_28 wheel for a glibc 2.36 host.
    (wheel,) = (cache / "torch" / "index").glob("*/torch-2.13.0*.whl")
    assert "manylinux_2_28_x86_64" in wheel.name
    assert host.exec(
        ["python3", "-c", "import torch; print(torch.__version__)"]
    ).stdout.strip() == ("2.13.0+cpu")

    again, again_recap = newcomer_provision(newcomer, home, elsewhere, inventory)
    assert again.returncode == 0, again.stdout[-4000:]
    assert again_recap["newcomer"]["changed"] == 0, again.stdout[-4000:]
    # The lock file of first-download sha256 is the inventory's; the folder run from is untouched.
    assert "torch-2.13.0" in (tmp_path / "jetson-env.lock.yml").read_text()
    assert list(elsewhere.iterdir()) == []

    target = ["--host", f"root@127.0.0.1:{port}", "--python", "/usr/bin/python3"]
    doctor = newcomer_runs(
        newcomer, home, elsewhere, "doctor", "--json", "--no-smoke", *target,
        "--check", "termcolor", "--check", "torch", "--check", "torchvision",
        "--check", "libnvinfer", "--check", "tensorrt-python",
    )  # fmt: skip
    report = json.loads(doctor.stdout)
    findings = {f["check"]: f for f in report["findings"]}
    statuses = {name: finding["status"] for name, finding in findings.items()}
    # All ok but torch: the CPU wheel on a host without a GPU is a warning, not a failure.
    expected = {"termcolor": "ok", "torch": "warn", "torchvision": "ok",
                "libnvinfer": "ok", "tensorrt-python": "ok"}  # fmt: skip
    assert statuses == expected, report["findings"]
    assert findings["torch"]["summary"].startswith("torch 2.13.0+cpu is a CPU-only build")
    assert doctor.returncode == 0, doctor.stderr  # warnings only: healthy (docs/doctor.md)

    # A breakage, repaired from the same unrelated folder with only the installed package.
    host.exec(["python3", "-m", "pip", "uninstall", "--yes", "--quiet",
               "--break-system-packages", "termcolor"])  # fmt: skip
    fixed = newcomer_runs(
        newcomer, home, elsewhere, "doctor", "--fix", "--yes", "--no-smoke", *target,
        "--check", "termcolor", "--identity", str(home / ".ssh" / "id_ed25519"),
    )  # fmt: skip
    assert fixed.returncode == 0, fixed.stdout[-4000:] + fixed.stderr[-4000:]
    assert "termcolor: fail -> ok" in fixed.stdout
    assert host.exec(["python3", "-c", "import termcolor"], check=False).returncode == 0
    assert list(elsewhere.iterdir()) == []


@pytest.fixture
def jetpack4_host() -> Iterator[Host]:
    """x86 stand-in for a JetPack 4 device: a Nano's release files, a real Python 3.6."""
    required("3.6.15")
    host = start_x86_with_files_of("nano-r32.4.3", "jetpack4-py36")
    try:
        host.exec(["mkdir", "-p", str(PYTHON36.parent)])
        host.copy_in(PYTHON36, str(PYTHON36))
        yield host
    finally:
        remove_host(host)


# torch: a STAND-IN of NVIDIA's wheel for the row (its name, version and PyTorch 1.6's
# Requires-Dist, tagged x86_64: NVIDIA's aarch64 wheel can be neither fetched nor run here);
# docker_runtime with STAND-INs of nvidia-docker2's runtime and JetPack's CSV mount lists. Off:
# NVIDIA's repository (jetpack_apt; JetPack's TensorRT, whose bindings are the system
# Python's), Ubuntu 18.04's package names, a torch with C++ to build torchvision and torch2trt
# against, CUDA's cuda.h and libcuda for pycuda's build (no cuda-python for 3.6).
JETPACK4_ROLES = {
    "jetpack_apt_enabled": False,
    "python_base_matrix_apt_packages": False,
    "torchvision_enabled": False,
    "pycuda_enabled": False,
    "tensorrt_enabled": False,
    "torch2trt_enabled": False,
    "docker_runtime_install_packages": False,
    "docker_runtime_container_build": True,
}
JETPACK4_CSV_DIR = roles.default("docker_runtime", "csv_dir")


def jetpack4_torch(work: Path) -> dict:
    filename = matrix.load().release("32.4.3").torch.filename
    wheel = build_jetson_torch_wheel(filename, work / "torch-standin")
    return {
        "torch_wheel_file": str(wheel),
        "torch_lock_file": str(work / "jetson-env.lock.yml"),
        "torch_controller_cache": str(work / "cache" / "torch"),
    }


def test_jetpack4_python36_target_from_oldest_to_newest_ansible(jetpack4_host: Host, tmp_path):
    python36 = str(PYTHON36 / "bin" / "python3.6")
    torch_vars = jetpack4_torch(tmp_path)
    inventory = write_inventory(
        tmp_path / "jp4.yml",
        {"jp4": {"ansible_host": jetpack4_host.container, "ansible_python_interpreter": python36}},
        {**JETPACK4_ROLES, **torch_vars, "jetson_facts_python": python36},
    )
    stage_container_runtime(jetpack4_host)
    jetpack4_host.exec(["mkdir", "-p", JETPACK4_CSV_DIR])  # STAND-IN lists, as JetPack's are
    jetpack4_host.exec(["touch", *(f"{JETPACK4_CSV_DIR}/{name}" for name in
                                   roles.default("docker_runtime", "csv_files"))])  # fmt: skip
    marker = "/var/tmp/jetson-env-test-marker"
    jetpack4_host.exec(["sh", "-c", f"touch {marker} && sleep 1"])

    newest = run_playbook(ANSIBLE_ENDS["newest"].ensure(), inventory)

    assert newest.rc != 0
    assert "runs Ansible's modules with Python 3.6" in newest.messages()
    assert "ansible-core<2.17" in newest.messages()
    assert "Nothing was changed." in newest.messages()
    assert paths_changed_since(jetpack4_host, marker) == set()

    # The limit is the Python Ansible runs modules with, not the one provisioned (issue 33's
    # case 6): modules in the host's Python 3.11 may provision its Python 3.6.
    split = write_inventory(
        tmp_path / "jp4-split.yml",
        {"jp4": {"ansible_host": jetpack4_host.container,
                 "ansible_python_interpreter": "/usr/bin/python3"}},
        {**JETPACK4_ROLES, **torch_vars, "jetson_facts_python": python36},
    )  # fmt: skip
    checked = run_playbook(ANSIBLE_ENDS["newest"], split, check=True)
    assert checked.rc == 0, checked.messages() or checked.stderr
    report = checked.task_result("Report the host's platform", "jp4")["msg"]
    assert f"Python 3.6.15 ({python36}: the Python provisioned)" in report, report

    oldest = run_playbook(ANSIBLE_ENDS["oldest"].ensure(), inventory)

    assert oldest.rc == 0, oldest.messages() or oldest.stderr
    report = oldest.task_result("Report the host's platform", "jp4")["msg"]
    assert "L4T R32.4.3 (JetPack 4.4)" in report and "Python 3.6.15" in report, report
    installed = jetpack4_host.exec(
        [python36, "-c", "import termcolor, numpy; print(numpy.__version__)"]
    )
    assert installed.stdout.startswith("1.19."), installed.stdout
    torch = jetpack4_host.exec([python36, "-c", "import torch, future; print(torch.__doc__)"])
    assert torch.stdout.startswith("STAND-IN for NVIDIA's torch-1.6.0-cp36-cp36m"), torch.stdout
    daemon = json.loads(
        jetpack4_host.exec(["cat", roles.default("docker_runtime", "daemon_json")]).stdout
    )
    assert "nvidia" in daemon["runtimes"], daemon
    profile = jetpack4_host.exec(["cat", roles.default("cuda_env", "profile_file")]).stdout
    assert "/usr/local/cuda-10.2/bin" in profile or "/usr/local/cuda/bin" in profile

    again = run_playbook(ANSIBLE_ENDS["oldest"], inventory)
    assert again.rc == 0 and again.changed("jp4") == 0, again.changed_tasks("jp4")
    # --check after it: this 3.6's pip (before 22.2) has no dry run, so pip's installs
    # are what it cannot rule out, and it says so; nothing else would change.
    checked = run_playbook(ANSIBLE_ENDS["oldest"], inventory, check=True)
    assert checked.rc == 0, checked.messages() or checked.stderr
    assert checked.changed_tasks("jp4") == {"Say what pip would install (--check)"}
    said = checked.task_result("Say what pip would install (--check)", "jp4")["msg"]
    assert "pip cannot tell before a real run: this pip is older than 22.2" in said, said

    # The probes, for real in that Python 3.6.
    jetpack4_host.install_project()
    info = jetpack4_host.exec([f"{VENV}/bin/jetson-env", "info", "--json", "--python", python36])
    platform = json.loads(info.stdout)["platform"]
    assert (platform["l4t"], platform["jetpack"], platform["python"]["version"]) == (
        "32.4.3",
        "4.4",
        "3.6.15",
    ), platform
    doctor = jetpack4_host.exec(
        [f"{VENV}/bin/jetson-env", "doctor", "--json", "--no-smoke", "--python", python36,
         "--check", "termcolor", "--check", "platform"],
        check=False,
    )  # fmt: skip
    findings = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert findings["termcolor"]["status"] == "ok", findings
    assert "Traceback" not in doctor.stderr

    # A break, then `doctor -i --fix` from the controller (jetson-env needs Python 3.10+, so
    # it cannot run on a real JetPack 4 device): the installed command, from an unrelated
    # folder, with the inventory whose modules run in the host's 3.11 (the newest ansible-core
    # cannot run them in 3.6: the preflight above). The role installs into the 3.6.
    jetpack4_host.exec([python36, "-m", "pip", "uninstall", "--yes", "--quiet", "termcolor"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fixed = subprocess.run(
        [str(Path(sys.executable).parent / "jetson-env"), "--no-color", "doctor", "-i",
         str(split), "--fix", "--yes", "--check", "termcolor", "--no-smoke"],
        cwd=elsewhere, capture_output=True, text=True, timeout=PLAYBOOK_TIMEOUT_S, check=False,
    )  # fmt: skip
    said = fixed.stdout + fixed.stderr
    assert fixed.returncode == 0, said[-4000:]
    assert "jp4: termcolor: fail -> ok" in said, said[-4000:]
    assert jetpack4_host.exec([python36, "-c", "import termcolor"]).returncode == 0
    assert list(elsewhere.iterdir()) == []


# A host of its own that installs ansible-core and the 190 MB torch wheel: 7.7 minutes on 2
# busy cores. The lived-in host's promise tests (test_lived_in.py) keep the promise in the
# default tier, on a host their module starts anyway.
@pytest.mark.slow
def test_fresh_x86_provision_then_doctor_as_a_user_runs_them(tmp_path: Path):
    """Issue 33's promise on a fresh x86 host: root, Debian 12's externally-managed python3
    the only one on PATH, the installed wheel with exactly the `provision` extra's ansible-core
    (no `ansible` package), from an unrelated folder, no -i, no interpreter variable, no
    ansible.cfg. `jetson-env provision` (torch from the user's local CPU wheel, as the other
    tests; TensorRT from its stand-in tarball and torchvision from the fixture's source, copied
    to the host as a user would; off with -e only what cannot run here: pycuda without a CUDA
    toolkit, torch2trt without a real TensorRT) names the Python it provisions and says it
    overrides PEP 668 there; `jetson-env doctor` with its defaults checks that same Python and
    every finding a role of the run manages is ok (torch: a warning no role manages, a CPU
    build where there is no GPU); termcolor removed, `doctor --fix --yes` repairs it."""
    host = start_playbook_host("x86-debian12", "promise-fresh")
    try:
        host.install_project()
        wheel = project_wheel()
        host.exec([f"{VENV}/bin/pip", "install", "--quiet", f"/tmp/{wheel.name}[provision]"],
                  timeout=900)  # fmt: skip
        listed = host.exec([f"{VENV}/bin/pip", "list", "--format=freeze"]).stdout
        assert "ansible-core==" in listed and "\nansible==" not in f"\n{listed}", listed
        host.exec(["mkdir", "-p", "/opt/wheels", "/srv/elsewhere"])
        host.copy_in(TORCH_WHEEL_X86, f"/opt/wheels/{TORCH_WHEEL_X86.name}")
        trt = build_tensorrt_tarball(TRT_VERSION, "cp311", tmp_path / "trt")
        vision = source_archive(TORCHVISION_FIXTURE, "vision-0.28.0", tmp_path)
        for path in (trt, vision):
            host.copy_in(path, f"/opt/wheels/{path.name}")
        roles_off = ("pycuda", "torch2trt")
        settings = {"torch_wheel_file": f"/opt/wheels/{TORCH_WHEEL_X86.name}",
                    "tensorrt_tarball": f"/opt/wheels/{trt.name}",
                    "torchvision_source_archive": f"/opt/wheels/{vision.name}",
                    "torchvision_source_sha256": hashlib.sha256(vision.read_bytes()).hexdigest(),
                    **{f"{role}_enabled": False for role in roles_off}}  # fmt: skip
        jetson_env = f"{VENV}/bin/jetson-env"

        def user_runs(*args: str) -> subprocess.CompletedProcess:
            command = shlex.join([jetson_env, "--no-color", *args])
            return host.exec(["sh", "-c", f"cd /srv/elsewhere && {command}"], check=False,
                             timeout=1800)  # fmt: skip

        run = user_runs("provision", "-e", json.dumps(settings))

        output = run.stdout + run.stderr
        assert run.returncode == 0, output[-4000:]
        for forbidden in ("template error", "deprecat"):
            assert forbidden not in output.lower(), output[-4000:]
        assert "(/usr/bin/python3: the Python provisioned, an externally-managed" in output, output
        assert "is an externally-managed system Python (PEP 668)" in output
        report = json.loads(user_runs("doctor", "--json").stdout)
        assert report["platform"]["python"]["executable"] == "/usr/bin/python3"
        roles_on = set(collection.provision_roles()) - set(roles_off)
        managed = [f for f in report["findings"]
                   if f["playbook"] and f["playbook"]["role"] in roles_on]  # fmt: skip
        assert [f for f in managed if f["status"] != "ok"] == [], report
        statuses = {f["check"]: f["status"] for f in report["findings"]}
        assert (statuses["termcolor"], statuses["torchvision"], statuses["tensorrt-python"],
                statuses["libnvinfer"]) == ("ok", "ok", "ok", "ok"), statuses  # fmt: skip
        (torch,) = [f for f in report["findings"] if f["check"] == "torch"]
        assert torch["status"] == "warn" and torch["playbook"] is None, torch  # no GPU here

        host.exec(["python3", "-m", "pip", "uninstall", "--yes", "--quiet",
                   "--break-system-packages", "termcolor"])  # fmt: skip
        fixed = user_runs("doctor", "--fix", "--yes", "--no-smoke")
        said = fixed.stdout + fixed.stderr
        assert "termcolor: fail -> ok" in said, said[-4000:]
        assert "template error" not in said.lower() and "deprecat" not in said.lower()
        assert host.exec(["ls", "/srv/elsewhere"]).stdout == ""
    finally:
        remove_host(host)
