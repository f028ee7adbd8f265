"""`jetson-env doctor --host` over SSH against an sshd this test starts on loopback.

The sshd runs in a container of the x86 test host's image with Debian's openssh-server
(SshdImage, --network host, 127.0.0.1 on a free port). The doctor runs here,
on the controller, with HOME in a temporary directory: its own key, its own
known_hosts. The remote interpreter is the host image's venv, which exists only
in the container, so a report about it can only have come over SSH.
"""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.hosts import CONTAINER_PREFIX, VENV, SshdImage, free_port, wait_for_port
from support.signals import sigint_as_in_a_terminal

from jetson_env.probing import not_started
from jetson_env.remote import SSHTarget
from jetson_env.ssh_address import parse_address
from jetson_env.targets import Deadline

pytestmark = pytest.mark.hosts

CONTAINER = CONTAINER_PREFIX + "sshd"
REMOTE_PYTHON = f"{VENV}/bin/python"


@dataclass(frozen=True)
class SSHHost:
    port: int
    host_key: str  # "ssh-ed25519 AAAA..."
    fingerprint: str  # "SHA256:..." as ssh-keygen -lf prints it

    @property
    def address(self) -> str:
        return f"root@127.0.0.1:{self.port}"


def docker(*args: str, timeout: float = 600) -> str:
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {result.stderr}")
    return result.stdout


@pytest.fixture(scope="module")
def sshd() -> Iterator[SSHHost]:
    image = SshdImage("x86-debian12").ensure()
    docker("rm", "--force", CONTAINER)
    docker("run", "--detach", "--network", "host", "--name", CONTAINER, image, "sleep", "1d")
    try:
        port = free_port()
        docker("exec", CONTAINER, "mkdir", "-p", "/run/sshd", "/root/.ssh")
        docker("exec", "--detach", CONTAINER, "/usr/sbin/sshd", "-D", "-p", str(port),
               "-o", "ListenAddress=127.0.0.1", "-o", "PasswordAuthentication=no")  # fmt: skip
        key = docker("exec", CONTAINER, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").split()
        fingerprint = docker(
            "exec", CONTAINER, "ssh-keygen", "-lf", "/etc/ssh/ssh_host_ed25519_key.pub"
        ).split()[1]
        wait_for_port(port)
        yield SSHHost(port, f"{key[0]} {key[1]}", fingerprint)
    finally:
        docker("rm", "--force", CONTAINER)


@pytest.fixture
def home(sshd: SSHHost) -> Iterator[Path]:
    """A HOME with a fresh key that the sshd container authorises, and no known_hosts.
    Short, as a user's is: Ansible's ssh ControlPath (~/.ansible/cp/...) must fit a Unix
    socket's 108 bytes, which pytest's tmp_path under xdist (popen-gwN/<test name>) does not."""
    tmp_path = Path(tempfile.mkdtemp(prefix="je-home-"))
    ssh_dir = tmp_path / ".ssh"
    ssh_dir.mkdir(mode=0o700)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh_dir / "id_ed25519")],
        check=True,
    )
    public = (ssh_dir / "id_ed25519.pub").read_text()
    docker("exec", CONTAINER, "sh", "-c", f"echo '{public.strip()}' > /root/.ssh/authorized_keys")
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)


def doctor(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "doctor", "--json", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home), "SSH_AUTH_SOCK": ""},
        timeout=300,
    )


def test_known_host_key_runs_the_probes_remotely(home: Path, sshd: SSHHost):
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {sshd.host_key}\n")

    proc = doctor(home, "--host", sshd.address, "--python", REMOTE_PYTHON,
                  "--check", "platform", "--check", "termcolor")  # fmt: skip

    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert report["target"] == f"{sshd.address} ({REMOTE_PYTHON})"
    assert report["platform"]["python"]["executable"] == REMOTE_PYTHON
    assert not Path(REMOTE_PYTHON).exists()  # not this machine's interpreter
    termcolor = next(f for f in report["findings"] if f["check"] == "termcolor")
    assert termcolor["remedy"] == f"{REMOTE_PYTHON} -m pip install termcolor"
    assert proc.returncode == report["exit_code"] == 1


def test_unknown_host_key_is_refused_with_its_fingerprint(home: Path, sshd: SSHHost):
    proc = doctor(home, "--host", sshd.address, "--check", "platform")

    assert proc.returncode == 3
    (finding,) = json.loads(proc.stdout)["findings"]
    assert finding["status"] == "fail"
    assert f"ssh-ed25519 {sshd.fingerprint}" in finding["summary"]
    assert "not in known_hosts" in finding["summary"]
    assert "--accept-new-host-key" in finding["remedy"]
    assert not (home / ".ssh" / "known_hosts").exists()


def test_an_unknown_host_keys_remedy_is_the_exact_command_that_accepts_it(
    home: Path, sshd: SSHHost
):
    """The remedy names where to compare the key (the host's own file of that type) and the
    user's command with --accept-new-host-key; run as printed, it records that key."""
    proc = doctor(home, "--host", sshd.address, "--check", "platform")

    (finding,) = json.loads(proc.stdout)["findings"]
    remedy = finding["remedy"]
    assert "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub" in remedy, remedy
    command = remedy.split("`")[3]
    assert command == (f"jetson-env doctor --json --host {sshd.address} --check platform "
                       "--accept-new-host-key")  # fmt: skip
    accepted = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *shlex.split(command)[1:]],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "HOME": str(home), "SSH_AUTH_SOCK": ""},
    )  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    known = (home / ".ssh" / "known_hosts").read_text()
    assert known == f"[127.0.0.1]:{sshd.port} {sshd.host_key}\n"


def test_accept_new_host_key_records_it_then_it_is_known(home: Path, sshd: SSHHost):
    first = doctor(home, "--host", sshd.address, "--accept-new-host-key", "--check", "platform")
    assert first.returncode == 0, first.stdout
    known = (home / ".ssh" / "known_hosts").read_text()
    assert known == f"[127.0.0.1]:{sshd.port} {sshd.host_key}\n"

    again = doctor(home, "--host", sshd.address, "--check", "platform")
    assert again.returncode == 0, again.stdout


def test_changed_host_key_is_refused_even_with_accept_new(home: Path, sshd: SSHHost):
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / "other")], check=True
    )
    fake = " ".join((home / "other.pub").read_text().split()[:2])
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {fake}\n")

    proc = doctor(home, "--host", sshd.address, "--accept-new-host-key", "--check", "platform")

    assert proc.returncode == 3
    (finding,) = json.loads(proc.stdout)["findings"]
    assert "CHANGED" in finding["summary"]
    assert finding["remedy"].endswith(f"ssh-keygen -R '[127.0.0.1]:{sshd.port}'")


@pytest.fixture
def known(home: Path, sshd: SSHHost) -> Path:
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {sshd.host_key}\n")
    return home


@pytest.fixture
def remote_torch() -> Iterator[Callable[[str], None]]:
    """Stage a `torch` package in the remote venv whose import does what the test says."""
    site = docker("exec", CONTAINER, REMOTE_PYTHON, "-c",
                  "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()  # fmt: skip

    def stage(body: str) -> None:
        docker("exec", CONTAINER, "mkdir", "-p", f"{site}/torch")
        docker(
            "exec", CONTAINER, "sh", "-c", f"cat > {site}/torch/__init__.py <<'EOF'\n{body}\nEOF"
        )

    yield stage
    docker("exec", CONTAINER, "rm", "-rf", f"{site}/torch")


@pytest.fixture(autouse=True)
def no_probe_left_by_another_test(sshd: SSHHost) -> None:
    """Each test starts on a host without probe processes: one that another test left
    behind is that test's failure (each asserts it leaves none), not this one's."""
    docker("exec", CONTAINER, "sh", "-c", "pkill -KILL -f '[i]mport os, sys|^sleep 613' || true")


def remote_probe_processes() -> list[str]:
    """Probe interpreters still running on the remote host (BOOTSTRAP is on their command line)."""
    found = docker("exec", CONTAINER, "sh", "-c", "pgrep -af 'import os, sys' || true")
    return [line for line in found.splitlines() if "pgrep" not in line]


def test_a_remote_probe_that_segfaults_is_a_segfault(known: Path, sshd: SSHHost, remote_torch):
    """paramiko drops SSH's exit-signal: the shell reports it (it read as 'SIGHUP' before)."""
    remote_torch("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    proc = doctor(known, "--host", sshd.address, "--python", REMOTE_PYTHON, "--check", "torch")
    (finding,) = json.loads(proc.stdout)["findings"]
    assert finding["summary"] == "probe 'torch' was killed by SIGSEGV"
    assert proc.returncode == 1


def test_a_remote_hang_times_out_and_leaves_nothing(known: Path, sshd: SSHHost, remote_torch):
    remote_torch("import time\ntime.sleep(600)")
    proc = doctor(known, "--host", sshd.address, "--python", REMOTE_PYTHON, "--check", "torch",
                  "--timeout", "3")  # fmt: skip
    (finding,) = json.loads(proc.stdout)["findings"]
    assert finding["summary"] == "probe 'torch' timed out after 3s"
    deadline = time.monotonic() + 10  # the lifeline closes with the channel
    while remote_probe_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_probe_processes() == []


def doctor_in_a_hanging_torch(
    known: Path, remote_torch, python_args: list[str], args: list[str]
) -> subprocess.Popen:
    """`doctor --check torch` (this Python with `python_args`, then `args`) started as typed
    in a terminal, returned once the remote probe is inside a torch import that never ends."""
    imported = "/tmp/torch-imported"  # the probe runs: the launcher and its heartbeat do
    docker("exec", CONTAINER, "rm", "-f", imported)
    remote_torch(f"import pathlib, time\npathlib.Path({imported!r}).touch()\ntime.sleep(600)")
    run = subprocess.Popen(
        [sys.executable, *python_args, "doctor", "--json", *args, "--check", "torch"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=known,
        env={**os.environ, "HOME": str(known), "SSH_AUTH_SOCK": ""},
        preexec_fn=sigint_as_in_a_terminal,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while docker("exec", CONTAINER, "sh", "-c", f"ls {imported} || true") == "":
        assert time.monotonic() < deadline, "the remote probe never started"
        time.sleep(0.2)
    return run


@pytest.mark.parametrize("via", ["host", "inventory"])
def test_ctrl_c_ends_the_remote_probes_too(known: Path, sshd: SSHHost, remote_torch, via: str):
    """With `-i` the probes' end comes from the launcher's heartbeat on stdout, which
    reaches the connection through the host's output cap (targets._cut): it left them
    running while that cap held the heartbeat in its buffer."""
    if via == "host":
        args = ["--host", sshd.address, "--python", REMOTE_PYTHON]
    else:
        args = ["-i", str(inventory_for(known, sshd, REMOTE_PYTHON))]
    run = doctor_in_a_hanging_torch(known, remote_torch, ["-m", "jetson_env.cli"], args)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=10)
    assert run.returncode == 130
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while remote_probe_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_probe_processes() == []


# Ctrl-C at paramiko's worst moment, made certain: just after a channel buffer's lock is
# taken by the thread that reads the channel, before the `try` that releases it.
CTRL_C_AFTER_A_LOCK = """
import os, signal, sys, threading
import paramiko
import paramiko.buffered_pipe as pipes
ARMED = sys.argv.pop(1)  # a file: the Ctrl-C comes at the first such moment after it exists

class Tripwire:
    def __init__(self, lock):
        self.lock = lock
    def acquire(self, *args):
        taken = self.lock.acquire(*args)
        reader = not isinstance(threading.current_thread(), paramiko.Transport)
        if taken and reader and os.path.exists(ARMED):
            os.unlink(ARMED)
            signal.raise_signal(signal.SIGINT)  # raised in the main thread at its next step
        return taken
    def release(self):
        self.lock.release()

def init(self, original=pipes.BufferedPipe.__init__):
    original(self)
    self._lock = Tripwire(self._lock)
    self._cv = threading.Condition(self._lock)

pipes.BufferedPipe.__init__ = init
from jetson_env.cli import main
sys.exit(main())
"""


def test_ctrl_c_inside_paramiko_still_ends_the_doctor(known: Path, sshd: SSHHost, remote_torch):
    """A Ctrl-C that lands between one of paramiko's lock acquires and its `try` left that
    lock held: closing the channel then waited on it forever (a flake of the test above
    under load, made certain here). The doctor ends with 130 and the remote probes too."""
    armed = known / "armed"
    tripwire = ["-c", CTRL_C_AFTER_A_LOCK, str(armed)]
    host = ["--host", sshd.address, "--python", REMOTE_PYTHON]
    run = doctor_in_a_hanging_torch(known, remote_torch, tripwire, host)
    armed.touch()
    try:
        _, stderr = run.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        run.kill()
        raise AssertionError("the doctor did not end within 20 s of Ctrl-C") from None
    assert not armed.exists(), "the Ctrl-C never came"
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while remote_probe_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_probe_processes() == []


def test_a_missing_remote_python_is_one_interpreter_finding(known: Path, sshd: SSHHost):
    proc = doctor(known, "--host", sshd.address, "--python", "/nonexistent/python3")
    assert proc.returncode == 3
    (finding,) = json.loads(proc.stdout)["findings"]
    assert finding["check"] == "interpreter"
    assert finding["summary"] == "cannot start /nonexistent/python3: not found"  # no record
    assert "--python" in finding["remedy"]


def add_nologin_user() -> None:
    """nologin-user, whose login shell is /bin/false, with root's authorized key."""
    docker("exec", CONTAINER, "sh", "-c",
           "id nologin-user >/dev/null 2>&1 || useradd --create-home --shell /bin/false "
           "nologin-user; mkdir -p ~nologin-user/.ssh && cp /root/.ssh/authorized_keys "
           "~nologin-user/.ssh/ && chown -R nologin-user ~nologin-user/.ssh")  # fmt: skip


def test_a_login_shell_that_refuses_commands_is_named(known: Path, sshd: SSHHost):
    add_nologin_user()
    proc = doctor(known, "--host", f"nologin-user@127.0.0.1:{sshd.port}", "--check", "platform")
    assert proc.returncode == 3
    (finding,) = json.loads(proc.stdout)["findings"]
    assert finding["check"] == "interpreter"
    assert "the login shell of nologin-user" in finding["summary"]
    assert "refuses commands" in finding["summary"]
    assert finding["remedy"].endswith("sudo usermod --shell /bin/bash nologin-user")


def test_a_shell_that_exits_before_taking_the_probes_is_still_named(known: Path, sshd: SSHHost):
    """The race behind a flake under load: /bin/false exits and sshd closes the channel
    while the probes are still being sent. A script larger than the SSH window (2 MiB)
    makes it certain: what the shell said decides the finding, not the closed channel."""
    add_nologin_user()
    target = SSHTarget(parse_address(f"nologin-user@127.0.0.1:{sshd.port}"), "python3",
                       identity=str(known / ".ssh" / "id_ed25519"),
                       known_hosts=known / ".ssh" / "known_hosts")  # fmt: skip
    target.connect()
    try:
        done = target.run_python("#" * (3 << 20), Deadline(60), lambda line: None, 60)
    finally:
        target.close()

    assert done.returncode == 1
    assert "refuses commands" in not_started(target, done).args[0]


def test_quick_over_ssh_imports_no_framework(known: Path, sshd: SSHHost, remote_torch):
    remote_torch("import time\ntime.sleep(600)")  # importing it would hang
    proc = doctor(known, "--host", sshd.address, "--python", REMOTE_PYTHON, "--quick")
    report = json.loads(proc.stdout)
    assert "torch" not in report["probes"] and "packages" in report["probes"]
    (torch, *_) = [f for f in report["findings"] if f["check"] == "packages"]
    assert torch["summary"] == "torch (version unknown) (package metadata; not imported (--quick))"
    assert report["counts"]["crash"] == 0
    assert remote_probe_processes() == []


HANGING_PYTHON = "/usr/local/bin/python-that-hangs"


def remote_processes(pattern: str) -> list[str]:
    found = docker("exec", CONTAINER, "sh", "-c", f"pgrep -af {pattern!r} || true")
    return [line for line in found.splitlines() if "pgrep" not in line]


def inventory_for(home: Path, sshd: SSHHost, python: str) -> Path:
    """An inventory that reaches the sshd with OpenSSH (Ansible's ssh connection), the
    host key checked against the test's known_hosts (ssh reads ~ from the passwd entry,
    not HOME, so it is named), `python` as the host's interpreter."""
    ssh = home / ".ssh"
    host = {
        "ansible_host": "127.0.0.1",
        "ansible_port": sshd.port,
        "ansible_user": "root",
        "ansible_python_interpreter": python,
        "ansible_ssh_private_key_file": str(ssh / "id_ed25519"),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={ssh / 'known_hosts'}",
    }
    path = home / "inventory.json"
    path.write_text(json.dumps({"all": {"hosts": {"sshd": host}}}))
    return path


@pytest.mark.parametrize("via", ["host", "inventory"])
@pytest.mark.parametrize("how", ["timeout", "sigterm", "ctrl-c"])
def test_a_remote_interpreter_that_never_starts_leaves_nothing(
    known: Path, sshd: SSHHost, how: str, via: str
):
    """A wrapper that hangs before Python starts (it never reads the probes) and starts a
    child that leaves its process group and session (`setsid`): after the startup
    timeout, SIGTERM or Ctrl-C, both are ended on the host within seconds, with
    `--host` (the remote command's stdin lifeline) and with `-i` (Ansible closes stdin:
    the startup watchdog's heartbeat on stdout finds the closed connection). Before, the
    setsid child stayed for its whole sleep, and through Ansible the run's whole tree
    stayed until the budget watchdog (its STARTUP_EXPIRED write died of SIGPIPE)."""
    docker("exec", CONTAINER, "sh", "-c",
           f"printf '#!/bin/sh\\nsetsid sleep 613 &\\nsleep 613\\nexec python3 \"$@\"\\n' "
           f"> {HANGING_PYTHON} && chmod +x {HANGING_PYTHON}")  # fmt: skip
    if via == "host":
        args = ["--host", sshd.address, "--python", HANGING_PYTHON, "--check", "platform"]
    else:
        args = ["-i", str(inventory_for(known, sshd, HANGING_PYTHON)), "--check", "platform"]
    if how == "timeout":
        proc = doctor(known, *args, "--timeout", "3")
        report = json.loads(proc.stdout)
        if via == "inventory":
            (host,) = report["hosts"]
            report = host["report"]
        (finding,) = report["findings"]
        assert finding["summary"] == f"{HANGING_PYTHON} did not start within 3s"
        assert proc.returncode == 3
    else:
        run = subprocess.Popen(
            [sys.executable, "-m", "jetson_env.cli", "doctor", "--json", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=known,
            env={**os.environ, "HOME": str(known), "SSH_AUTH_SOCK": ""},
            preexec_fn=sigint_as_in_a_terminal,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while len(remote_processes("sleep 613")) < 2:
            assert time.monotonic() < deadline, "the wrapper never started"
            time.sleep(0.2)
        run.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        _, stderr = run.communicate(timeout=15)
        assert run.returncode == (143 if how == "sigterm" else 130) and "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while remote_processes("sleep 613|import os, sys") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert remote_processes("sleep 613|import os, sys") == []


def test_engines_are_read_on_the_remote_host(home: Path, sshd: SSHHost):
    """`doctor --host ... --engines DIR`: the folder is the remote host's; its files' headers
    are read there (no TensorRT on it: each read version is "unknown" for want of one)."""
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {sshd.host_key}\n")
    standins = Path(__file__).resolve().parents[1] / "fixtures" / "engines"
    docker("cp", str(standins), f"{CONTAINER}:/srv/remote-models")

    proc = doctor(home, "--host", sshd.address, "--python", REMOTE_PYTHON, "--check",
                  "engine-files", "--engines", "/srv/remote-models")  # fmt: skip

    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    found = {row["path"]: row for row in report["engines"]}
    trt11 = found["/srv/remote-models/standin-trt11.plan"]
    assert (trt11["tensorrt"], trt11["source"]) == ("11.1.0.106", "header")
    assert (
        trt11["reason"]
        == "unknown: built by TensorRT 11.1.0.106; this host's TensorRT was not found"
    )
    assert found["/srv/remote-models/standin-trt10.engine"]["compute_capability"] == "8.7"
    assert not Path("/srv/remote-models").exists()  # not this machine's folder
    assert proc.returncode == report["exit_code"] == 0  # unknowns are warnings


def test_a_folder_the_remote_host_lacks_is_a_failure_of_its_own(home: Path, sshd: SSHHost):
    """Issue 59: `--host ... --engines DIR` where the host has no DIR (here: a folder this
    machine has, and one nobody has) fails with its own finding and remedy, not the engines'
    "unknown" warning and rebuild advice: a typo must not pass a gate on the exit code."""
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {sshd.host_key}\n")

    proc = doctor(home, "--host", sshd.address, "--python", REMOTE_PYTHON, "--check",
                  "engine-files", "--engines", str(home), "--engines", "/gone")  # fmt: skip

    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["status"], f["summary"]) for f in report["findings"]] == [
        ("fail", f"--engines {home}: no such folder on this host"),
        ("fail", "--engines /gone: no such folder on this host"),
    ]
    finding = report["findings"][0]
    assert finding["remedy"] == (
        "give --engines the folder as it is on that host: the path is looked up there, not on "
        "the machine jetson-env runs on (`ls -d DIR` on the host shows whether it is there)"
    )
    assert finding["manual"] == "the folder and its engines are the user's: no role makes them"
    assert [fix["words"] for fix in report["fixes"]] == [True]  # said once, in words
    assert report["engines"] == []  # no engine row for a folder
    assert proc.returncode == report["exit_code"] == 1
