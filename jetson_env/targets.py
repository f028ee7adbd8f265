"""Where probes run: the target's Python interpreter, here or over SSH.

A probe script is sent on stdin to `python -c BOOTSTRAP`, so nothing is installed on
the target and local and remote runs are the same code path. BOOTSTRAP (Python 2
parses it, so an old interpreter is named rather than crashing) checks for Python
3.6+, reads the script, and keeps stdin open as a lifeline: when it closes (the
doctor finished, was interrupted or killed, or the SSH connection dropped), the
probe's whole process group is killed, here and on a remote host alike.

Everything a target prints is untrusted: output is capped, decoded tolerantly, and
only ever reaches the caller as text (the terminal sanitises it before showing it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

# Each stream of a probe process keeps at most this much; a process past it is killed.
OUTPUT_LIMIT = 4 * 2**20
# The interpreter must print READY this soon, before any probe's own timeout applies.
STARTUP_TIMEOUT = 30
RECORD_PREFIX = b"@@"  # READY, the probes' records (probes/_prelude.py), remote exit status
READY = "@@jetson-env ready"
TOO_OLD = "@@jetson-env too-old"
TOO_OLD_EXIT = 97
POLL_SECONDS = 0.01
KILL_WAIT_SECONDS = 5
# Marks every process the doctor starts here, so that what escaped its process group
# (a daemon an import started) can still be found and ended.
RUN_ENV = "JETSON_ENV_PROBE_RUN"

BOOTSTRAP = (
    """\
import os, sys
if sys.version_info < (3, 6):
    sys.stderr.write("\\n%s %d.%d.%d\\n" % (("TOO_OLD",) + tuple(sys.version_info[:3])))
    sys.exit(TOO_OLD_EXIT)
import signal, threading
lifeline = os.dup(0)
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
header = b""
while not header.endswith(b"\\n"):
    byte = os.read(lifeline, 1)
    if not byte:
        sys.exit(1)
    header += byte
size = int(header)
chunks = []
while size > 0:
    chunk = os.read(lifeline, min(size, 65536))
    if not chunk:
        sys.exit(1)
    chunks.append(chunk)
    size -= len(chunk)
def watch():
    while os.read(lifeline, 65536):
        pass
    os.killpg(os.getpgid(0), signal.SIGKILL)
threading.Thread(target=watch, daemon=True).start()
sys.stdout.write("\\nREADY\\n")
sys.stdout.flush()
exec(compile(b"".join(chunks).decode("utf-8"), "<jetson-env>", "exec"), {"__name__": "__main__"})
""".replace("TOO_OLD_EXIT", str(TOO_OLD_EXIT))
    .replace("TOO_OLD", TOO_OLD)
    .replace("READY", READY)
)

LineCallback = Callable[[str, str], None]  # (stream, line): stream is "stdout" or "stderr"


class Cancelled(Exception):
    """The run was cancelled (Ctrl-C, SIGTERM) while a probe ran; its processes are ended."""


class Unstarted(OSError):
    """The interpreter could not be started at all (no such file, not executable)."""


@dataclass(frozen=True)
class Completed:
    """How a probe process ended. returncode < 0: killed by that signal."""

    returncode: int
    stdout: str
    stderr: str
    overflow: str | None = None  # "stdout" or "stderr" when that stream passed OUTPUT_LIMIT


class Deadline:
    """A timeout that can be restarted (each probe in a shared process gets its own), and
    a flag for output that is complete: the process is then ended without waiting for its
    exit (tearing down a CUDA context takes seconds)."""

    def __init__(self, seconds: float):
        self.finished = False
        self.reset(seconds)

    def finish(self) -> None:
        self.finished = True

    def reset(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def expired(self) -> bool:
        return time.monotonic() >= self.at


class _Cancellation:
    """One switch for every probe process of this doctor run, and the local ones to end."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.lock = threading.Lock()
        self.groups: set[int] = set()

    def cancel(self) -> None:
        self.event.set()
        with self.lock:
            groups = list(self.groups)
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)


CANCELLATION = _Cancellation()


def cancel_all() -> None:
    """End every probe process now (Ctrl-C, SIGTERM); the runs raise Cancelled."""
    CANCELLATION.cancel()


def framed(script: str) -> bytes:
    """What BOOTSTRAP reads on stdin: the script's length in bytes, a newline, the script."""
    data = script.encode("utf-8")
    return b"%d\n" % len(data) + data


class StreamCollector:
    """Collects one stream of a probe process, capped, calling back per decoded line.

    On stdout only the lines that start with RECORD_PREFIX are called back (the rest is an
    import's chatter): a flood of short lines costs a split, not a call per line."""

    def __init__(self, name: str, on_line: LineCallback):
        self.name = name
        self.on_line = on_line
        self.wanted = RECORD_PREFIX if name == "stdout" else b""
        self.kept = bytearray()
        self.pending = b""
        self.overflow = False

    def feed(self, chunk: bytes) -> None:
        room = OUTPUT_LIMIT - len(self.kept)
        if len(chunk) > room:
            chunk = chunk[: max(room, 0)]
            self.overflow = True
        self.kept += chunk
        data = self.pending + chunk
        if self.wanted and self.wanted not in data:
            self.pending = data[data.rfind(b"\n") + 1 :]  # may start a record: "@", then "@..."
            return
        *lines, self.pending = data.split(b"\n")
        for line in lines:
            if line.startswith(self.wanted):
                self.on_line(self.name, line.decode("utf-8", errors="replace"))
        if len(self.pending) > OUTPUT_LIMIT:
            self.pending = b""

    def finish(self) -> None:
        if self.pending:
            self.on_line(self.name, self.pending.decode("utf-8", errors="replace"))
            self.pending = b""

    @property
    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


class Target(Protocol):
    """A place with a Python interpreter that can run a probe script."""

    description: str
    python: str
    remote: bool

    def run_python(
        self, script: str, deadline: Deadline, on_line: LineCallback, budget: float
    ) -> Completed:
        """Run `script` in the interpreter (through BOOTSTRAP).

        on_line is called with each line of stdout and stderr as it arrives. Raises
        TimeoutError when `deadline` expires (it may be reset meanwhile), Cancelled on
        cancel_all(), Unstarted when the interpreter cannot be started. `budget`: the
        most the whole process may take, enforced on the target where it can be.
        """
        ...


class LocalTarget:
    remote = False

    def __init__(self, python: str = "python3", env: dict[str, str] | None = None):
        self.python = python
        self.env = env
        self.description = f"local ({python})"

    def run_python(
        self, script: str, deadline: Deadline, on_line: LineCallback, budget: float = 0
    ) -> Completed:
        run_id = uuid.uuid4().hex
        env = {**(self.env if self.env is not None else os.environ), RUN_ENV: run_id}
        try:
            # A session of its own: ending its process group ends what the probe started.
            proc = subprocess.Popen(
                [self.python, "-c", BOOTSTRAP],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            raise Unstarted(getattr(exc, "strerror", None) or str(exc)) from None
        with CANCELLATION.lock:
            CANCELLATION.groups.add(proc.pid)
        collectors = [StreamCollector("stdout", on_line), StreamCollector("stderr", on_line)]
        overflowed = threading.Event()

        def read(stream, collector: StreamCollector) -> None:
            with contextlib.suppress(OSError, ValueError):  # closed under a holder that escaped
                for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
                    collector.feed(chunk)
                    if collector.overflow:
                        overflowed.set()
                        return

        readers = [
            threading.Thread(target=read, args=(stream, collector), daemon=True)
            for stream, collector in zip((proc.stdout, proc.stderr), collectors, strict=True)
        ]
        for reader in readers:
            reader.start()
        try:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(framed(script))
                proc.stdin.flush()
            # stdin stays open: it is the probe's lifeline (see BOOTSTRAP).
            while proc.poll() is None:
                if CANCELLATION.event.is_set():
                    raise Cancelled()
                if deadline.finished or overflowed.is_set():
                    break
                if deadline.expired():
                    raise TimeoutError(f"timed out after {deadline.seconds:g}s")
                time.sleep(POLL_SECONDS)
        finally:
            _end(proc, run_id)
            for reader in readers:
                reader.join(timeout=1)
            with CANCELLATION.lock:
                CANCELLATION.groups.discard(proc.pid)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    stream.close()
        for collector in collectors:
            collector.finish()
        overflow = next((c.name for c in collectors if c.overflow), None)
        code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        return Completed(code, collectors[0].text, collectors[1].text, overflow)


def _end(proc: subprocess.Popen, run_id: str) -> None:
    """Kill the probe's process group and any process it started that left the group."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    # A process stuck in the kernel (a hung GPU driver) cannot die: report without it.
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_WAIT_SECONDS)
    marker = f"{RUN_ENV}={run_id}".encode()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue
        if marker in environ:
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGKILL)
