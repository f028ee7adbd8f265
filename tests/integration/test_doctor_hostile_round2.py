"""Hostile environments, round 2 (issue 27): the same promises as test_doctor_hostile (the
real CLI, no traceback, bounded time, the documented exit code, a finding that says what to
do, nothing left running), for what the first round did not hold: SSH servers that stall
after accepting (a real paramiko server on loopback), files that never end, fleet hosts
whose interpreter hangs (real Ansible, local connection), daemons with a cleared
environment, records nested past the parser's depth, and text from the target that must
stay text in a pasted fix.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from test_doctor_hostile import (
    Listener,
    Run,
    closed_port,
    doctor,
    findings,
    home,  # noqa: F401 (a fixture)
    leftovers,
    one_finding,
    ssh_doctor,
    stage,
    stand_in,
    venv_python,  # noqa: F401 (a fixture)
)

# ---- SSH servers that accept, then stall: every phase of the exec has a deadline --------


class StallingServer(paramiko.ServerInterface):
    """Accepts any user without a password (auth "none"), then stalls where told to."""

    def __init__(self, stall: str):
        self.stall = stall

    def get_allowed_auths(self, username):
        return "none,publickey"

    def check_auth_none(self, username):
        return paramiko.AUTH_SUCCESSFUL

    def check_auth_publickey(self, username, key):
        return paramiko.AUTH_SUCCESSFUL

    def check_channel_request(self, kind, chanid):
        if self.stall == "open":
            time.sleep(120)  # the transport's thread: no answer to the open request
        return paramiko.OPEN_SUCCEEDED

    def check_channel_exec_request(self, channel, command):
        if self.stall == "exec":
            time.sleep(120)  # no answer to the exec request
        return True  # "silent": accepted, then nothing is ever printed


class SSHServer(Listener):
    """A real SSH server on loopback (paramiko's server side), with a host key of its own."""

    def __init__(self, stall: str):
        self.key = _server_key()
        self.stall = stall
        super().__init__(b"")

    def handle(self, conn: socket.socket) -> None:
        transport = paramiko.Transport(conn)
        self.held.append(transport)
        transport.add_server_key(self.key)
        try:
            transport.start_server(server=StallingServer(self.stall))
        except (EOFError, paramiko.SSHException):  # the client gave up during the handshake
            transport.close()

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.key.get_name()} {self.key.get_base64()}\n"


@functools.cache
def _server_key() -> paramiko.PKey:
    """The servers' host key, made in memory (nothing left on disk)."""
    return paramiko.ECDSAKey.generate()


@pytest.fixture
def server(request) -> Iterator[SSHServer]:
    server = SSHServer(request.param)
    yield server
    server.close()


def known(folder: Path, server: SSHServer) -> Path:
    """folder (a HOME) with the server's key in known_hosts and a key of the user's own."""
    (folder / ".ssh" / "known_hosts").write_text(server.known_hosts_line())
    key = folder / ".ssh" / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return folder


@pytest.mark.parametrize(
    "server, said",
    [
        ("open", "SSH server did not open a session"),
        ("exec", "SSH server did not answer the exec request within 3s"),
        ("silent", "did not start within 3s"),
    ],
    indirect=["server"],
    ids=["stalls-at-open", "stalls-after-exec", "silent-after-exec"],
)
def test_an_ssh_server_that_stalls_is_bounded_by_the_timeout(home, server, said):  # noqa: F811
    started = time.monotonic()
    run = ssh_doctor(known(home, server), f"u@127.0.0.1:{server.port}", "--timeout", "3")
    assert time.monotonic() - started < 30
    finding = one_finding(run)
    assert said in finding["summary"]
    # a stalling server is the connection's fault, not the interpreter's
    assert finding["check"] == ("interpreter" if said.startswith("did not start") else "connection")


@pytest.mark.parametrize("server", ["silent"], indirect=True)
def test_an_unknown_key_with_known_hosts_a_folder_says_to_make_it_a_file(
    home,  # noqa: F811
    server,
):
    (home / ".ssh" / "known_hosts").mkdir()
    finding = one_finding(ssh_doctor(home, f"u@127.0.0.1:{server.port}"))
    assert "is not in known_hosts" in finding["summary"]
    assert "known_hosts is not a regular file: make it a file" in finding["remedy"]


@pytest.fixture
def locked_key(tmp_path) -> Path:
    path = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", str(path)],
                   check=True)  # fmt: skip
    return path


def test_a_key_with_a_passphrase_against_a_closed_port(home, locked_key):  # noqa: F811
    port = closed_port()
    run = ssh_doctor(home, f"u@127.0.0.1:{port}", "--identity", str(locked_key))
    assert one_finding(run)["summary"] == f"cannot reach u@127.0.0.1:{port}: Connection refused"


@pytest.mark.parametrize("server", ["silent"], indirect=True)
def test_a_key_with_a_passphrase_the_agent_does_not_hold(home, server, locked_key):  # noqa: F811
    """paramiko/cryptography raise TypeError for it: the user is told to use ssh-agent."""
    (home / ".ssh" / "known_hosts").write_text(server.known_hosts_line())
    # the server takes publickey only for this test: auth "none" is refused
    StallingServer.check_auth_none = lambda self, username: paramiko.AUTH_FAILED
    try:
        run = ssh_doctor(home, f"u@127.0.0.1:{server.port}", "--identity", str(locked_key))
    finally:
        StallingServer.check_auth_none = lambda self, username: paramiko.AUTH_SUCCESSFUL
    finding = one_finding(run)
    assert "needs a passphrase" in finding["summary"]
    assert finding["remedy"].startswith("load it into ssh-agent (`ssh-add ")


def test_known_hosts_that_is_a_fifo_does_not_block(home):  # noqa: F811
    os.mkfifo(home / ".ssh" / "known_hosts")
    port = closed_port()
    run = ssh_doctor(home, f"u@127.0.0.1:{port}")
    assert one_finding(run)["summary"] == f"cannot reach u@127.0.0.1:{port}: Connection refused"


BANNER_BOUND_S = 3  # jetson_env.remote's CONNECT_TIMEOUT, 15 s for users (support.bounds)


def test_a_listener_that_says_nothing_is_named_as_such(home):  # noqa: F811
    listener = Listener(b"", hold=True)
    bound = ("jetson_env.remote", "CONNECT_TIMEOUT", BANNER_BOUND_S)
    finding = one_finding(ssh_doctor(home, f"u@127.0.0.1:{listener.port}", bound=bound))
    assert (f"accepted the connection but sent no SSH banner within {BANNER_BOUND_S}s: no SSH "
            "server answers there") in finding["summary"]  # fmt: skip
    assert "No existing session" not in finding["summary"]


def test_a_long_garbage_banner_is_cut(home):  # noqa: F811
    # paramiko quotes the 100th line that is not a banner, whatever its length
    listener = Listener(b"garbage\r\n" * 99 + b"x" * 8192 + b"\r\n", hold=True)
    finding = one_finding(ssh_doctor(home, f"u@127.0.0.1:{listener.port}"))
    assert len(finding["summary"]) < 400, finding["summary"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--host", "u@h", "--identity", "/dev/null"], "is not a regular file"),
        (["--timeout", "1e-300"], "must be at least 1 seconds"),
        (["--timeout", "0.5"], "must be at least 1 seconds"),
    ],
)
def test_more_bad_input_is_a_usage_error(args, message):
    run = doctor(*args, exit_code=2)
    assert message in run.stderr and run.stdout == ""


# ---- what the target prints or holds: bounded, named, never a traceback ----------------


def test_a_record_nested_past_the_parsers_depth_is_a_crash_finding(venv_python):  # noqa: F811
    python, site = venv_python
    deep = "[" * 200_000 + "]" * 200_000
    stage(site, "torch", f"print('\\n@@jetson-env result torch {deep}')\nimport os\nos._exit(0)\n")
    run = doctor("--json", "--check", "torch", "--python", python, exit_code=1, target=site)
    (torch,) = findings(run, "torch")
    assert torch["status"] == "crash"
    assert torch["summary"] == "probe 'torch' printed a record that is not JSON (or nests too deep)"


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda tree: (tree / "model").symlink_to("/dev/zero"), "model: not a regular file"),
        (lambda tree: os.mkfifo(tree / "model"), "model: not a regular file"),
        (lambda tree: (tree / "model").write_bytes(b"x" * (2 << 20)), "model: larger than"),
    ],
    ids=["dev-zero", "fifo", "two-mib"],
)
def test_an_endless_device_tree_file_is_named_not_read(tmp_path, make, said):
    tree = tmp_path / "device-tree"
    tree.mkdir()
    (tree / "compatible").write_bytes(b"x" * (2 << 20))  # a regular file that never ends
    make(tree)
    run = doctor("--json", "--check", "platform", "--python", sys.executable,
                 env={"JETSON_ENV_DEVICE_TREE": str(tree)}, exit_code=0)  # fmt: skip
    unknown = run.report["platform"]["unknown"]
    assert said in unknown["model"] and str(tree) in unknown["model"]
    assert unknown["soc"] == f"{tree}/compatible: larger than 1048576 bytes (not read)"


def test_a_torch_without_a_version_that_does_not_import(venv_python):  # noqa: F811
    python, site = venv_python
    stage(site, "torch", "raise ImportError('broken build')\n")
    run = doctor("--json", "--check", "torch", "--python", python, exit_code=1, target=site)
    (torch,) = findings(run, "torch")
    assert torch["summary"] == "torch does not import"


# ---- nothing left running ---------------------------------------------------------------


def test_a_wrapper_that_starts_a_daemon_with_a_cleared_environment(tmp_path):
    """The daemon leaves the session and drops every variable (the doctor's marker too):
    it is re-parented to the doctor, which ends it."""
    pid_file = tmp_path / "daemon.pid"
    daemon = f"echo $$ > {pid_file}; exec sleep 600"
    python = stand_in(tmp_path / "bin", f"(env -i setsid sh -c {shlex.quote(daemon)} &)\n"
                      f'exec {sys.executable} "$@"')  # fmt: skip
    doctor("--check", "termcolor", "--python", python, exit_code=1)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def fleet_inventory(folder: Path, python: str) -> Path:
    hosts = {"hung": {"ansible_connection": "local", "ansible_python_interpreter": python}}
    path = folder / "fleet.yml"
    path.write_text(json.dumps({"all": {"hosts": hosts}}))
    return path


def test_a_fleet_host_whose_interpreter_hangs(tmp_path):
    """Real Ansible (local connection): the launcher's startup watchdog ends it after
    --timeout; the host was reached, so it is a failed host, not UNREACHABLE."""
    python = stand_in(tmp_path / "bin", "exec sleep 600")
    inventory = fleet_inventory(tmp_path, python)
    started = time.monotonic()
    run = doctor("--json", "-i", str(inventory), "--check", "platform", "--timeout", "3",
                 exit_code=3)  # fmt: skip
    assert time.monotonic() - started < 25  # the startup's 3 s, not the default 30 s
    data = json.loads(run.stdout)
    (host,) = data["hosts"]
    assert host["status"] == "fail"
    (finding,) = host["report"]["findings"]
    assert finding["check"] == "interpreter"
    assert finding["summary"] == f"{python} did not start within 3s"
    assert "ansible_python_interpreter" in finding["remedy"]


def test_sigterm_to_a_fleet_run_ends_ansible_and_the_probes(tmp_path):
    python = stand_in(tmp_path / "bin", "exec sleep 600")
    inventory = fleet_inventory(tmp_path, python)
    run = Run(["doctor", "-i", str(inventory), "--check", "platform"])
    deadline = time.monotonic() + 30
    while not any("sleep 600" in p for p in leftovers(run.case)):
        assert time.monotonic() < deadline, "the host's interpreter never started"
        time.sleep(0.1)
    run.proc.send_signal(signal.SIGTERM)
    run.finish(143, timeout=20)  # asserts that nothing with the case's marker is left


# ---- text from the target stays text in a pasted fix ------------------------------------


def test_a_cuda_root_from_the_target_stays_text_in_every_fix(tmp_path):
    """CUDA_HOME='.../c $(touch pwned)': the fixes, pasted into sh, run nothing of it; the
    login script they write, sourced, sets CUDA_HOME to that text. A GPU host (nvidia-smi's
    STAND-IN on PATH), where pycuda's install is prescribed."""
    root = tmp_path / "c $(touch pwned)"
    (root / "bin").mkdir(parents=True)
    (root / "version.json").write_text(json.dumps({"cuda": {"version": "12.6.77"}}))
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    standin = Path(__file__).parents[1] / "fixtures" / "cuda" / "nvidia-smi.standin"
    (gpu / "nvidia-smi").write_bytes(standin.read_bytes())
    (gpu / "nvidia-smi").chmod(0o755)
    env = {"CUDA_HOME": str(root), "PATH": f"{gpu}:/usr/bin:/bin"}
    run = doctor("--json", "--no-smoke", "--check", "cuda", "--check", "pycuda",
                 "--python", sys.executable, env=env, exit_code=0)  # fmt: skip
    fixes = [fix["command"] for fix in run.report["fixes"] if not fix["words"]]
    assert any("CUDA_HOME" in fix for fix in fixes), fixes
    assert any("pip install" in fix for fix in fixes), fixes
    for fix in fixes:  # each simple command's words expanded as sh would, none of them run
        for command in re.split(r" \| | && ", fix):
            subprocess.run(["sh", "-c", f"set -- {command}"], cwd=tmp_path, check=True)
    login = next(fix for fix in fixes if "CUDA_HOME" in fix).split(" | ")[0]
    script = tmp_path / "profile.sh"
    script.write_bytes(subprocess.run(["sh", "-c", login], cwd=tmp_path, check=True,
                                      capture_output=True).stdout)  # fmt: skip
    sourced = subprocess.run(["sh", "-c", f'. {shlex.quote(str(script))}; printf %s "$CUDA_HOME"'],
                             cwd=tmp_path, capture_output=True, text=True, check=True)  # fmt: skip
    assert sourced.stdout == str(root)
    assert not (tmp_path / "pwned").exists()


def test_a_report_that_cannot_be_written_is_refused_before_the_fleet_runs(tmp_path):
    inventory = fleet_inventory(tmp_path, sys.executable)
    (tmp_path / "fleet.html").mkdir()
    run = doctor("-i", str(inventory), "--check", "platform", "--report",
                 str(tmp_path / "fleet.html"), exit_code=2)  # fmt: skip
    assert "fleet.html: is a folder" in run.stderr
    assert "running the probes" not in run.stderr and run.stdout == ""


@pytest.mark.parametrize(
    "body, summary",
    [
        ("import sys\nsys.stderr.write('x' * (8 << 20))\nsys.stderr.flush()\nimport time\n"
         "time.sleep(600)\n", "probe 'torch' printed more than 4 MiB on stderr and was stopped"),
        ("print('\\n@@jetson-env crash torch {\"returncode\": 0}')\n"
         "print('@@jetson-env end torch {}')\nprint('@@jetson-env done')\n"
         "print('@@jetson-env begin smoke')\nimport time\ntime.sleep(600)\n",
         "probe 'torch' timed out after 3s"),
    ],
    ids=["floods-stderr", "forges-the-launchers-records"],
)  # fmt: skip
def test_a_probe_cannot_outrun_or_impersonate_the_launcher(venv_python, body, summary):  # noqa: F811
    """The launcher's own records (crash, end, done) and another probe's begin, printed by
    an import, are not passed on: torch still gets its own timeout and its own ending."""
    python, site = venv_python
    stage(site, "torch", body)
    run = doctor("--json", "--check", "torch", "--timeout", "3", "--python", python,
                 exit_code=1, target=site)  # fmt: skip
    (torch,) = findings(run, "torch")
    assert (torch["status"], torch["summary"]) == ("crash", summary)
