"""Hostile environments and input: `jetson-env doctor` as a user runs it, against broken
interpreters, modules that misbehave at import, corrupt SSH files, listeners that are no
sshd, bad arguments and signals.

Every case asserts the same promises: no traceback, a bounded time (the subprocess
timeout: a hang fails the test) and memory, a finding or usage error that says what to
do, the documented exit code, no process left running (every process the doctor
starts inherits CASE_ENV, looked for in /proc afterwards), nothing changed on the
target (the stand-ins' folders are compared before and after).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import venv
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from support.bounds import cli_with_bound
from support.pythons import interpreter, required
from support.signals import sigint_as_in_a_terminal

from jetson_env.probes._prelude import LISTING_FILES, LISTING_LIMIT
from jetson_env.probes._runner import children

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "docs" / "doctor-report.schema.json").read_text())
PYTHON27 = interpreter("2.7.18")
CASE_ENV = "JETSON_ENV_HOSTILE_CASE"
RUN_LIMIT = 60  # seconds: far above any case; a hang fails instead of blocking
RSS_LIMIT_MB = 300


def leftovers(case: str) -> list[str]:
    """Processes still running that a case's doctor started (they inherit CASE_ENV)."""
    marker = f"{CASE_ENV}={case}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if marker in environ and "State:\tZ" not in status:
            found.append(Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return found


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under folder (bytecode caches aside) with its size and mtime."""
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def tree(pid: int) -> list[int]:
    """pid and every process below it (from /proc)."""
    found, queue = [], [pid]
    while queue:
        found.append(queue.pop())
        queue.extend(children(found[-1]))
    return found


def high_water_kib(pid: int) -> int:
    """A process's peak RSS so far (VmHWM, KiB); 0 for one gone or a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines()
                 if line.startswith("VmHWM:")), 0)  # fmt: skip


class Run:
    """One doctor process; `finish()` asserts the promises every case shares."""

    def __init__(
        self,
        args,
        env=None,
        stdin=subprocess.DEVNULL,
        target: Path | None = None,
        memory: int | None = None,
        bound: tuple[str, str, int] | None = None,
    ):
        """`memory`: the address space (bytes) the command and what it starts may use;
        `bound`: (module, attribute, seconds), one of the CLI's bounds lowered for this
        command (support.bounds)."""
        self.case = uuid.uuid4().hex
        self.target = target
        self.before = snapshot(target) if target else None
        command = cli_with_bound(*bound) if bound else [sys.executable, "-m", "jetson_env.cli"]
        self.proc = subprocess.Popen(
            [*command, "--no-color", *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "100", **(env or {}), CASE_ENV: self.case},
            preexec_fn=lambda: capped(memory),
        )

    def finish(self, exit_code: int, timeout: float = RUN_LIMIT):
        stdout, stderr, peak_kib = self.reap(timeout)
        self.stdout = stdout.decode("utf-8", errors="replace")
        self.stderr = stderr.decode("utf-8", errors="replace")
        assert "Traceback" not in self.stderr + self.stdout, self.stderr
        assert self.proc.returncode == exit_code, (self.stdout, self.stderr)
        deadline = time.monotonic() + 5  # SIGKILLed processes take a moment to go
        while (left := leftovers(self.case)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, left
        if self.target is not None:
            assert snapshot(self.target) == self.before
        assert peak_kib < RSS_LIMIT_MB * 1024, f"peak RSS {peak_kib} KiB"
        return self

    def reap(self, timeout: float) -> tuple[bytes, bytes, int]:
        """Popen.communicate, and the peak RSS (KiB) of this case's doctor and the processes
        it started: the largest VmHWM read from /proc while they run (each is exact for a
        process seen alive). Not rusage's ru_maxrss: a forked child's counts the RSS of the
        process it was forked from (this pytest worker's, past 300 MB after a long run), which
        exec keeps."""
        output: dict[str, bytes] = {}
        readers = [
            threading.Thread(target=lambda n=name, s=stream: output.__setitem__(n, s.read()))
            for name, stream in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr))
        ]
        for reader in readers:
            reader.start()
        deadline = time.monotonic() + timeout
        peak_kib = 0
        while True:
            peak_kib = max(peak_kib, *(high_water_kib(p) for p in tree(self.proc.pid)))
            pid, status = os.waitpid(self.proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                raise subprocess.TimeoutExpired(self.proc.args, timeout)
            time.sleep(0.02)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        for reader in readers:
            reader.join(max(deadline - time.monotonic(), 1))
        assert set(output) == {"stdout", "stderr"}, "a process the doctor left holds its output"
        return output["stdout"], output["stderr"], peak_kib

    @property
    def report(self) -> dict:
        report = json.loads(self.stdout)
        jsonschema.validate(report, SCHEMA)
        return report


def capped(memory: int | None) -> None:
    sigint_as_in_a_terminal()
    if memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def doctor(*args, exit_code: int, env=None, target: Path | None = None, **kwargs) -> Run:
    return Run(["doctor", *args], env=env, target=target, **kwargs).finish(exit_code)


def stand_in(folder: Path, body: str, name: str = "python3") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def one_finding(run: Run) -> dict:
    (finding,) = run.report["findings"]
    assert finding["remedy"], finding
    return finding


# ---- interpreters that cannot run the probes: one finding, exit 3 --------------------


@pytest.mark.parametrize(
    "make, summary",
    [
        (lambda d: str(d / "missing"), "cannot start {python}: No such file or directory"),
        (lambda d: str(d), "cannot start {python}: Permission denied"),
        (lambda d: not_executable(d), "cannot start {python}: Permission denied"),
        (lambda d: str(PYTHON27), "{python} is Python 2.7.18: the probes need Python 3.6"),
        (lambda d: stand_in(d, "exec yes"), "printed more than 4 MiB without running the probes"),
        (lambda d: stand_in(d, "echo '{\"x\": 1}'"), 'it exited 0: {"x": 1}'),
        (lambda d: stand_in(d, "exit 0"), "it exited 0, printing nothing"),
        (lambda d: stand_in(d, "kill -SEGV $$"), "it was killed by SIGSEGV"),
        (lambda d: stand_in(d, "exec sleep 600"), "{python} did not start within 3s"),
        (lambda d: stand_in(d, "(sleep 600 &) ; exit 1"), "it exited 1, printing nothing"),
    ],
    ids=[
        "missing",
        "directory",
        "not-executable",
        "python2.7",
        "yes",
        "json-not-ours",
        "silent",
        "segfault",
        "hang",
        "daemon-then-exit",
    ],
)
def test_an_interpreter_that_cannot_run_probes_is_one_finding(tmp_path, make, summary):
    folder = tmp_path / "target"
    folder.mkdir()
    python = make(folder)
    if python == str(PYTHON27):
        required("2.7.18")
    run = doctor("--json", "--python", python, "--timeout", "3", exit_code=3, target=folder)
    finding = one_finding(run)
    assert finding["check"] == "interpreter"
    assert summary.replace("{python}", python) in finding["summary"]
    assert "--python" in finding["remedy"]
    assert run.report["probes"] == {}


def not_executable(folder: Path) -> str:
    path = folder / "plain"
    path.write_text("x")
    return str(path)


def test_a_non_ascii_interpreter_path_under_an_ascii_locale(tmp_path):
    run = doctor("--python", str(tmp_path / "pythön"), exit_code=3,
                 env={"PYTHONIOENCODING": "ascii", "LC_ALL": "C"})  # fmt: skip
    assert "cannot start" in run.stdout
    assert "pyth\\xf6n" in run.stdout


# ---- modules that misbehave at import: one crash per root cause, the rest report -------


@pytest.fixture
def venv_python(tmp_path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "venv"
    venv.create(root, with_pip=False)
    python = str(root / "bin" / "python")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    yield python, site


def stage(site: Path, package: str, body: str) -> None:
    (site / package).mkdir(exist_ok=True)
    (site / package / "__init__.py").write_text(body)


def findings(run: Run, check: str) -> list[dict]:
    return [f for f in run.report["findings"] if f["check"] == check]


# --timeout is every probe's: the hang's must outlast the light probes on a loaded machine (the
# docker probe timed out at 3 s under load 15), the others' need not be short at all.
@pytest.mark.parametrize(
    "body, timeout, summary",
    [
        ("import time\ntime.sleep(600)\n", 20, "probe 'torch' timed out after 20s"),
        ("import os\nos.kill(os.getpid(), 11)\n", 300, "probe 'torch' was killed by SIGSEGV"),
        ("import os\nos._exit(0)\n", 300, "probe 'torch' exited 0: no output"),
        (
            "import sys\nsys.stdout.write('x' * (8 << 20))\n",
            300,
            "probe 'torch' printed more than 4 MiB on stdout and was stopped",
        ),
    ],
    ids=["hang", "segfault", "os-exit", "floods-stdout"],
)
def test_a_torch_that_breaks_the_process_is_one_crash(venv_python, body, timeout, summary):
    python, site = venv_python
    stage(site, "torch", body)
    run = doctor("--json", "--no-smoke", "--timeout", str(timeout), "--python", python,
                 exit_code=1, target=site)  # fmt: skip
    (torch,) = findings(run, "torch")
    assert torch["status"] == "crash"
    assert torch["summary"] == summary
    (vision,) = findings(run, "torchvision")
    assert vision == {
        **vision,
        "status": "skip",
        "summary": "not checked: see torch (probe 'torch')",
    }
    assert run.report["counts"]["crash"] == 1
    (termcolor,) = findings(run, "termcolor")  # a light probe: still checked
    assert termcolor["status"] == "fail"
    pycuda = findings(run, "pycuda")  # after torch's crash, in a fresh process
    assert pycuda[0]["status"] == "warn"


def test_a_banner_and_bytes_that_are_not_utf8_do_not_hide_the_result(venv_python):
    python, site = venv_python
    stage(site, "torch", "import sys\nprint('Welcome to torch!')\n"
          "sys.stdout.buffer.write(b'\\xff\\xfe\\n'); sys.stdout.flush()\n"
          "sys.stderr.buffer.write(b'\\xc3(\\n')\n__version__ = '2.5.0'\n"
          "class version:\n    cuda = None\n"
          "class cuda:\n    is_available = staticmethod(lambda: False)\n")  # fmt: skip
    run = doctor("--json", "--check", "torch", "--python", python, exit_code=0, target=site)
    (torch,) = findings(run, "torch")
    assert torch["status"] != "crash", torch
    assert "2.5.0" in torch["summary"]


def test_escape_sequences_from_the_target_never_reach_the_terminal_raw(venv_python):
    python, site = venv_python
    stage(site, "torch", "import os\nos.write(2, b'\\x1b[2J\\x1b]0;owned\\x07')\nos._exit(3)\n")
    run = doctor("--check", "torch", "-v", "--python", python, exit_code=1, target=site)
    assert "\x1b" not in run.stdout + run.stderr
    assert "\\x1b[2J" in run.stdout


def test_a_forged_record_is_a_crash_finding_not_a_traceback(venv_python):
    """An import that prints what looks like the probe's own result, of another shape."""
    python, site = venv_python
    stage(
        site, "torch", "print('\\n@@jetson-env result torch {\"x\": 1}')\nimport os\nos._exit(0)\n"
    )
    run = doctor("--json", "--check", "torch", "--check", "torchvision", "--python", python,
                 exit_code=1, target=site)  # fmt: skip
    statuses = {f["check"]: (f["status"], f["summary"]) for f in run.report["findings"]}
    assert statuses == {
        "torch": ("crash", "probe 'torch' printed an object without 'torch'"),
        "torchvision": ("skip", "not checked: see torch (probe 'torch')"),
    }


def test_file_lists_past_the_bounds_are_named_not_read_whole(venv_python):
    """A RECORD of 4 GiB (sparse) and one of 1.4 million short lines (14 MB, under the byte
    bound): each costs the probe at most LISTING_LIMIT bytes and LISTING_FILES paths (the
    doctor stays under RSS_LIMIT_MB), and the libraries check names both as not read; an
    egg-info without a file list (a Debian package's) is none of its business."""
    python, site = venv_python
    for name in ("huge", "many"):
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    with open(site / "huge-1.0.dist-info" / "RECORD", "wb") as record:
        record.truncate(4 << 30)
    many = "".join(f"{i:x}.so\n" for i in range(1_400_000))
    assert LISTING_LIMIT > len(many) > 1 << 20
    (site / "many-1.0.dist-info" / "RECORD").write_text(many)
    (site / "debian-1.0.egg-info").mkdir()  # a Debian package's: no file list, dpkg has it
    (site / "debian-1.0.egg-info" / "PKG-INFO").write_text("Name: debian\nVersion: 1.0\n")
    run = doctor("--json", "--check", "libraries", "--python", python, exit_code=0, target=site)
    (libraries,) = findings(run, "libraries")
    assert libraries["status"] == "warn" and libraries["summary"].startswith(
        "not every package file of"
    )
    assert set(libraries["details"]) == {
        f"{site}/huge-1.0.dist-info: [Errno 27] larger than {LISTING_LIMIT} bytes (not read)",
        f"{site}/many-1.0.dist-info: [Errno 27] lists more than {LISTING_FILES} files (not read)",
    }


def test_an_import_that_starts_a_daemon_holding_stdout(venv_python):
    """The daemon leaves the process group (setsid) and keeps stdout: the report still comes
    at once, and the daemon is ended."""
    python, site = venv_python
    stage(site, "torch", "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
          "    time.sleep(600)\n    os._exit(0)\nraise ImportError('no torch here')\n")  # fmt: skip
    run = doctor("--json", "--check", "torch", "--python", python, exit_code=1, target=site)
    (torch,) = findings(run, "torch")
    assert "no torch here" in torch["summary"] + " ".join(torch["details"])


def test_a_tensorrt_that_segfaults_is_reported_under_tensorrt_python(venv_python):
    python, site = venv_python
    stage(site, "tensorrt", "import os\nos.kill(os.getpid(), 11)\n")
    run = doctor("--json", "--no-smoke", "--python", python, exit_code=1, target=site)
    (bindings,) = findings(run, "tensorrt-python")
    assert bindings["summary"] == "probe 'tensorrt_bindings' was killed by SIGSEGV"
    assert run.report["counts"]["crash"] == 1
    assert findings(run, "torch")[0]["status"] == "fail"  # ran in the fresh process


def test_quick_imports_no_framework(venv_python):
    """A torch whose import would hang: --quick reads its version from metadata only."""
    python, site = venv_python
    stage(site, "torch", "import time\ntime.sleep(600)\n")
    (site / "torch-2.5.0.dist-info").mkdir()
    (site / "torch-2.5.0.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.5.0\n")
    run = doctor("--json", "--quick", "--python", python, exit_code=1, target=site)
    assert "torch" not in run.report["probes"]
    packages = findings(run, "packages")
    assert packages[0]["summary"] == "torch 2.5.0 (package metadata; not imported (--quick))"
    assert run.report["counts"]["crash"] == 0


# ---- bad input: usage errors, exit 2, nothing run ---------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--timeout", "nan"], "must be a positive number of seconds"),
        (["--timeout", "inf"], "must be a positive number of seconds"),
        (["--timeout", "0"], "must be a positive number of seconds"),
        (["--timeout", "-1"], "must be a positive number of seconds"),
        (["--host", "@"], "is not user@host[:port]"),
        (["--host", "u@"], "is not a host name"),
        (["--host", "u@a..b"], "is not a host name"),
        (["--host", "u@" + "a" * 64 + ".example"], "is not a host name"),
        (["--host", "u\x1b[2J@host"], "control characters"),
        (["--host", "u@[::zz]"], "is not an IPv6 address"),
        (["--host", "u@h", "--identity", "/nonexistent/key"], "does not exist"),
        (["--host", "u@h", "--identity", "/"], "is a directory"),
        (["--host", "u@h", "--identity", "/etc/hostname"], "is not a private key"),
        (["--quick", "--check", "torch"], "--quick imports no framework"),
    ],
)
def test_bad_input_is_a_usage_error(args, message):
    run = doctor(*args, exit_code=2)
    assert message in run.stderr
    assert run.stdout == ""
    assert "\x1b" not in run.stderr


def test_password_without_a_terminal_or_stdin_is_a_usage_error():
    run = doctor("--host", "u@127.0.0.1", "--password", exit_code=2)
    assert "--password: no terminal to ask on" in run.stderr


def test_an_empty_l4t_is_a_usage_error():
    run = Run(["matrix", "--l4t", ""]).finish(2)
    assert "--l4t needs a release" in run.stderr and run.stdout == ""


def test_an_unknown_image_points_at_the_image_list():
    run = Run(["images", "build", "nosuch"]).finish(2)
    assert "`jetson-env images list`" in run.stderr


def test_columns_zero_still_prints_the_report(tmp_path):
    run = doctor("--check", "termcolor", "--python", sys.executable,
                 env={"COLUMNS": "0"}, exit_code=1)  # fmt: skip
    assert "termcolor" in run.stdout and "(exit code 1)" in run.stdout


# ---- SSH: hostile listeners and files, before any probe runs (exit 3) -------------------


class Listener:
    """A TCP server on loopback that sends `banner` to whoever connects, then hangs up (or,
    with `hold`, keeps the connection open without a word more)."""

    def __init__(self, banner: bytes, hold: bool = False):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.banner = banner
        self.hold = hold
        self.held: list = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.handle(conn)

    def handle(self, conn: socket.socket) -> None:
        conn.sendall(self.banner)
        if not self.hold:
            time.sleep(0.5)
            conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            with contextlib.suppress(OSError):
                conn.close()


@pytest.fixture
def home(tmp_path) -> Path:
    (tmp_path / ".ssh").mkdir(mode=0o700)
    return tmp_path


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ssh_doctor(home: Path, host: str, *args, exit_code=3, **kwargs) -> Run:
    env = {"HOME": str(home), "SSH_AUTH_SOCK": ""}
    return doctor("--json", "--host", host, *args, env=env, exit_code=exit_code, target=home,
                  **kwargs)  # fmt: skip


@pytest.mark.parametrize(
    "banner",
    [b"garbage\r\n" * 3, b"\x1b[2J\x1b]0;pwned\x07SSH-2.0-\x1b[32mall checks ok\x1b[0m\r\n",
     b"\xff\xfe\x00binary\r\n"],
    ids=["garbage", "escape-sequences", "binary"],
)  # fmt: skip
def test_a_listener_that_is_no_sshd_is_unreachable_and_shown_safely(home, banner):
    listener = Listener(banner)
    run = ssh_doctor(home, f"u@127.0.0.1:{listener.port}")
    assert one_finding(run)["check"] == "connection"
    assert "\x1b" not in run.stdout + run.stderr
    table = doctor("--host", f"u@127.0.0.1:{listener.port}", env={"HOME": str(home)},
                   exit_code=3, target=home)  # fmt: skip
    assert "cannot reach" in table.stdout
    assert "\x1b" not in table.stdout + table.stderr


@pytest.mark.parametrize(
    "prepare",
    [
        lambda ssh: (ssh / "known_hosts").write_text("127.0.0.1 ssh-ed25519 !!notbase64!!\n"),
        lambda ssh: (ssh / "known_hosts").write_bytes(b"\xff\xfe host ssh-rsa AAAA\n"),
        lambda ssh: (ssh / "known_hosts").mkdir(),
        lambda ssh: ssh.rmdir() or ssh.write_text("not a folder"),
    ],
    ids=["bad-base64", "not-utf8", "known-hosts-directory", "ssh-is-a-file"],
)
def test_broken_ssh_files_do_not_stop_the_doctor(home, prepare):
    prepare(home / ".ssh")
    port = closed_port()
    run = ssh_doctor(home, f"u@127.0.0.1:{port}")
    finding = one_finding(run)
    assert finding["summary"] == f"cannot reach u@127.0.0.1:{port}: Connection refused"


def test_the_connection_fix_is_shell_quoted(home, tmp_path):
    port = closed_port()
    witness = tmp_path / "x"
    user = f"a;touch${{IFS}}{witness}"
    run = ssh_doctor(home, f"{user}@127.0.0.1:{port}")
    remedy = one_finding(run)["remedy"]
    command = remedy.split(": ", 1)[1]
    assert shlex.split(command) == ["ssh", "-p", str(port), f"{user}@127.0.0.1", "true"]
    subprocess.run(["sh", "-c", f"set -- {command}"], check=True)  # expands nothing, runs nothing
    assert not witness.exists()


def test_the_connection_fix_without_a_user_is_what_ssh_takes(home):
    port = closed_port()
    remedy = one_finding(ssh_doctor(home, f"127.0.0.1:{port}"))["remedy"]
    assert remedy.endswith(f": ssh -p {port} 127.0.0.1 true")


# ---- signals: everything the doctor started ends with it -------------------------------


@pytest.fixture
def hanging_torch(venv_python) -> str:
    python, site = venv_python
    stage(site, "torch", "import time\ntime.sleep(600)\n")
    return python


@pytest.mark.parametrize(
    "signum, exit_code",
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -9)],
    ids=["ctrl-c", "sigterm", "sigkill"],
)
def test_a_signal_ends_the_doctor_and_every_probe(hanging_torch, signum, exit_code):
    run = Run(["doctor", "--check", "torch", "--python", hanging_torch])
    deadline = time.monotonic() + 30
    while not any("import os, sys" in p for p in leftovers(run.case)):  # BOOTSTRAP
        assert time.monotonic() < deadline, "the probe never started"
        time.sleep(0.1)
    time.sleep(1)
    run.proc.send_signal(signum)
    run.finish(exit_code, timeout=10)  # the hanging probe's own timeout is 240 s
    if signum != signal.SIGKILL:
        assert "every process it started was ended" in run.stderr


@pytest.mark.parametrize("body", ["echo '{\"x\": 1}'", "exec yes", "exit 1"])
def test_info_on_an_interpreter_that_cannot_run_probes(tmp_path, body):
    folder = tmp_path / "target"
    python = stand_in(folder, body)
    run = Run(["info", "--json", "--python", python, "--timeout", "5"], target=folder).finish(3)
    data = json.loads(run.stdout)
    assert data["platform"] is None
    assert list(data["errors"]) == ["interpreter"]
    assert "--python" in data["remedies"]["interpreter"]
    assert "-m jetson_env.probes" not in run.stderr
