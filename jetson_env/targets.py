"""Where probes run: the target's Python interpreter, here or over SSH.

The probe launcher (jetson_env/probes/_runner.py) is sent on stdin to `python -c
BOOTSTRAP`, so nothing is installed on the target and every kind of target (this
machine, an SSH host, a fleet host reached through Ansible) runs the same code: the
launcher starts the probe processes there, with the same BOOTSTRAP. BOOTSTRAP (Python 2
parses it, so an old interpreter is named rather than crashing) checks for Python 3.6+,
reads the script, and keeps stdin open as a lifeline: when it closes (the doctor
finished, was interrupted or killed, or the SSH connection dropped), the process's
whole group is killed, here and on a remote host alike. On a remote shell the launcher
runs under launch_command(): the lifeline and the deadlines hold even for an
interpreter that never reaches BOOTSTRAP.

Everything a target prints is untrusted: output is capped, decoded tolerantly, and
only ever reaches the caller as text (the terminal sanitises it before showing it).
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from jetson_env.probes._prelude import RECORD, STAGE
from jetson_env.probes._runner import (
    become_subreaper,
    children,
    end_strays,
    kill,
    kill_marked,
    start_process,
)

# Each stream of a probe process keeps at most this much; a process past it is killed.
OUTPUT_LIMIT = 4 * 2**20
# The interpreter must print READY this soon, before any probe's own timeout applies.
STARTUP_TIMEOUT = 30
# The launcher's records and the smoke's stage lines start with this; nothing else on
# stdout is read (an import's chatter).
RECORD_PREFIX = os.path.commonprefix([RECORD, STAGE]).encode()  # noqa: RUF071 (b"@@")
READY = f"{RECORD} ready"
TOO_OLD = f"{RECORD} too-old"
EXIT_RECORD = f"{RECORD} exit"  # launch_command's: how the interpreter ended
STARTUP_EXPIRED = f"{RECORD} startup-expired"  # launch_command's: it never reached BOOTSTRAP
TOO_OLD_EXIT = 97
POLL_SECONDS = 0.01
KILL_WAIT_SECONDS = 5
# Marks every process the doctor starts here, so that what escaped its process group
# (a daemon an import started) can still be found and ended.
RUN_ENV = "JETSON_ENV_PROBE_RUN"
# launch_command's startup watchdog, which BOOTSTRAP ends once it runs.
WATCHDOG_ENV = "JETSON_ENV_WATCHDOG"
# "none": BOOTSTRAP keeps no lifeline on stdin (Ansible closes it after the payload).
LIFELINE_ENV = "JETSON_ENV_LIFELINE"
# The target interpreter where none is given (target_python.DEFAULT; here, where
# jetson_env.head_start reads it before the rest of jetson-env is imported).
DEFAULT_PYTHON = "python3"
# launch_command's mark (":GROUP:") on everything it starts, so that what left its process
# group (a wrapper's `setsid` child) is still found and ended with it.
LAUNCH_ENV = "JETSON_ENV_LAUNCH"

BOOTSTRAP = (
    """\
import os, sys
if sys.version_info < (3, 6):
    sys.stderr.write("\\n%s %d.%d.%d\\n" % (("TOO_OLD",) + tuple(sys.version_info[:3])))
    sys.exit(TOO_OLD_EXIT)
import signal, threading
watchdog = os.environ.pop("WATCHDOG_ENV", "")
if watchdog.isdigit():
    try:
        os.kill(int(watchdog), signal.SIGKILL)
    except OSError:
        pass
lifeline = os.dup(0)
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
header = b""
while not header.endswith(b"\\n"):
    byte = os.read(lifeline, 1)
    if not byte or len(header) > 20:
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
hooks = []
def watch():
    while os.read(lifeline, 65536):
        pass
    for hook in hooks:
        try:
            hook()
        except Exception:
            pass
    os.killpg(os.getpgid(0), signal.SIGKILL)
if os.environ.pop("LIFELINE_ENV", "stdin") != "none":
    threading.Thread(target=watch, daemon=True).start()
sys.stdout.write("\\nREADY\\n")
sys.stdout.flush()
code = compile(b"".join(chunks).decode("utf-8"), "<jetson-env>", "exec")
exec(code, {"__name__": "__main__", "LIFELINE_HOOKS": hooks})
""".replace("TOO_OLD_EXIT", str(TOO_OLD_EXIT))
    .replace("TOO_OLD", TOO_OLD)
    .replace("READY", READY)
    .replace("WATCHDOG_ENV", WATCHDOG_ENV)
    .replace("LIFELINE_ENV", LIFELINE_ENV)
)


def launch_command(python: str, budget: float, startup: float, lifeline: bool = True) -> str:
    """The shell command that runs `python -c BOOTSTRAP` on a remote shell (SSH, Ansible).

    It runs in a process group of its own (`setsid` where the shell does not lead one: an
    Ansible local connection), ended whole when the interpreter exits, and by two
    watchdogs: one ends an interpreter that has not reached BOOTSTRAP within `startup`
    seconds (STARTUP_EXPIRED on stderr), the other the whole run after `budget`. Ending
    it (`k`) kills first every process marked with LAUNCH_ENV that left the group (a
    wrapper script's `setsid` or daemonised child), then the group (`kill -KILL 0`).
    With `lifeline`, stdin reaches the interpreter through `cat`: when it closes (the
    doctor ended, the connection dropped) the run is ended, even an interpreter (a
    wrapper script) that never reached BOOTSTRAP. Without (Ansible closes stdin once the
    payload is sent) the startup watchdog writes an empty line a second on stdout until
    BOOTSTRAP ends it, and the launcher's heartbeat does after: a write that fails (the
    connection dropped, the doctor was interrupted) ends the run. SIGPIPE is ignored only
    where the command itself writes, so that a closed stream never skips `k`. How the
    interpreter ended is EXIT_RECORD on stderr (a signal N as 128+N), since a channel's
    own exit status is the shell's."""
    run = shlex.join([python, "-c", BOOTSTRAP])
    if not lifeline:
        run = f"{LIFELINE_ENV}=none {run}"
    beat = "" if lifeline else "echo 2>/dev/null || break; "

    def countdown(seconds: float, step: str = "") -> str:  # 1 s steps: killed, no long sleep
        n = max(1, math.ceil(seconds))
        return f"n={n}; while [ $n -gt 0 ]; do sleep 1; {step}n=$((n-1)); done"

    end = f"""s=$?; trap '' PIPE; echo "{EXIT_RECORD} $s" >&2; k"""
    script = (
        "k() {\n"
        '  if [ "$K" != : ]; then\n'
        "    for _ in 1 2; do\n"
        f'      for f in $(grep -lsF "{LAUNCH_ENV}=:$$:" /proc/[0-9]*/environ); do\n'
        "        p=${f#/proc/}; p=${p%/environ}; pg=\n"
        '        read -r _ _ _ _ pg _ </proc/"$p"/stat\n'
        '        [ "$pg" = "$$" ] || kill -KILL "$p"\n'
        "      done\n"
        "    done\n"
        "  fi\n"
        "  $K\n"
        "} 2>/dev/null\n"
        f"{LAUNCH_ENV}=:$$:; export {LAUNCH_ENV}\n"
        f"{{ trap '' PIPE; {countdown(startup, beat)}; echo '{STARTUP_EXPIRED}' >&2; k; }} &\n"
        f"{WATCHDOG_ENV}=$!; export {WATCHDOG_ENV}\n"
        f"{{ {countdown(budget)}; k; }} &\n"
        + (f"{{ cat; k; }} | {{ {run}; {end}; }}\n" if lifeline else f"{run}\n{end}\n")
    )
    own_group = (
        "g=; read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null; K='kill -KILL 0'; export K\n"
        'if [ "$g" != "$$" ]; then\n'
        '  if command -v setsid >/dev/null 2>&1; then exec setsid sh -c "$0" jetson-env; fi\n'
        "  K=:\n"
        "fi\n"
        'exec sh -c "$0" jetson-env\n'
    )
    if not lifeline:
        own_group = _cut(OUTPUT_LIMIT + 1)
    return shlex.join(["sh", "-c", own_group, script])


def _cut(size: int) -> str:
    """launch_command's start for Ansible, whose connection keeps all a command prints in
    memory (an interpreter that prints without end grew the doctor and Ansible until they
    were killed): each stream passes `head -c SIZE` on the host, one byte more than a probe
    process's cap, so the doctor sees that cap passed (StreamCollector.overflow) as it does
    over SSH, where it reads the stream itself. The interpreter runs in a group of its own
    (`setsid`) that `k` ends without the two `head`s, which pass on what is left and exit
    with it; without `setsid`, `k` ends only the processes marked with LAUNCH_ENV (the
    `head`s are not). Past the cut the interpreter's writes fail, as the heartbeat's do
    when the connection drops, which ends the run. The heartbeat only finds the dropped
    connection if `head` writes each read at once (it dies of SIGPIPE, then the next beat
    fails): GNU head holds a pipe's output in its stdio buffer until 4 KiB or its end, so
    an interrupted doctor left the whole run on the host until the budget; `stdbuf -o0`
    unbuffers it (where stdbuf is missing the cap still holds, the budget ends the run).
    The subshell's own stderr is /dev/null: the shell says "Killed" there when `k` ends
    the group, which is not the interpreter's output."""
    return (
        "K='kill -KILL 0'; export K; S=setsid; B='stdbuf -o0'\n"
        "command -v setsid >/dev/null 2>&1 || { S=; K=:; }\n"
        "command -v stdbuf >/dev/null 2>&1 || B=\n"
        f'( $S sh -c "$0" jetson-env 2>&1 >&3 3>&- 4>&- | $B head -c {size} >&4 3>&- 4>&- )'
        f" 3>&1 4>&2 2>/dev/null | $B head -c {size}\n"
    )


LineCallback = Callable[[str, str], None]  # (stream, line): stream is "stdout" or "stderr"


class Cancelled(Exception):
    """The run was cancelled (Ctrl-C, SIGTERM) while a probe ran; its processes are ended."""


class Unreachable(Exception):
    """The target stopped answering before the probes could start (an SSH server that
    stalls); `remedy` says what to try."""

    def __init__(self, message: str, remedy: str | None = None):
        super().__init__(message)
        self.remedy = remedy


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


class ExitStatus:
    """launch_command's EXIT_RECORD, taken out of a remote command's stderr: how the
    interpreter ended (a remote channel's own exit status is the shell's)."""

    def __init__(self, on_line: LineCallback):
        self.on_line_after = on_line
        self.codes: list[int] = []

    def on_line(self, stream: str, line: str) -> None:
        if stream == "stderr" and line.startswith(EXIT_RECORD):
            with contextlib.suppress(ValueError):
                self.codes.append(int(line[len(EXIT_RECORD) :].strip() or 0))
            return
        self.on_line_after(stream, line)

    def completed(
        self, stdout: str, stderr: str, overflow: str | None, fallback: int | None = None
    ) -> Completed:
        """What the command printed (without the record), ended as EXIT_RECORD said, else
        `fallback` (else killed: output complete or capped, or the watchdog ended it)."""
        code = self.codes[-1] if self.codes else fallback
        if code is None:
            code = -signal.SIGKILL
        if code > 128:  # the shell reports death by signal N as 128 + N
            code = -(code - 128)
        # After the record only the shell speaks (a "Killed" for the group it ended).
        kept = stderr.split(f"\n{EXIT_RECORD}", 1)[0] if not stderr.startswith(EXIT_RECORD) else ""
        return Completed(code, stdout, kept, overflow)


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


class Launched:
    """`python -c BOOTSTRAP` started here with `script` on stdin, its streams read from the
    start: what it prints before a reader is given (attach) is kept and given first. Kept
    in CANCELLATION's groups until it is ended (end)."""

    def __init__(self, python: str, script: str, env: dict[str, str]):
        self.python = python
        self.script = script
        self.env = env  # without RUN_ENV: what it was started for (LocalTarget.launch)
        self.run_id = uuid.uuid4().hex
        self.proc = start_process([python, "-c", BOOTSTRAP], {**env, RUN_ENV: self.run_id})
        with CANCELLATION.lock:
            CANCELLATION.groups.add(self.proc.pid)
        self.lock = threading.Lock()
        self.said: list[tuple[str, str]] | None = []  # lines before attach(), then None
        self.on_line: LineCallback | None = None
        self.collectors = [StreamCollector("stdout", self.line),
                           StreamCollector("stderr", self.line)]  # fmt: skip
        self.overflowed = threading.Event()
        self.readers = [
            threading.Thread(target=self.read, args=(stream, collector), daemon=True)
            for stream, collector in zip(
                (self.proc.stdout, self.proc.stderr), self.collectors, strict=True
            )
        ]
        for reader in self.readers:
            reader.start()
        # An interpreter that never reads (a wrapper that hangs) must not block the doctor.
        writer = threading.Thread(target=_send, args=(self.proc.stdin, framed(script)),
                                  daemon=True)  # fmt: skip
        writer.start()

    def read(self, stream, collector: StreamCollector) -> None:
        with contextlib.suppress(OSError, ValueError):  # closed under a holder that escaped
            for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
                collector.feed(chunk)
                if collector.overflow:
                    self.overflowed.set()
                    return

    def line(self, stream: str, line: str) -> None:
        with self.lock:
            if self.on_line is None:
                self.said.append((stream, line))
            else:
                self.on_line(stream, line)

    def attach(self, on_line: LineCallback) -> None:
        """From now on each line goes to on_line, those said before first."""
        with self.lock:
            for stream, line in self.said:
                on_line(stream, line)
            self.said, self.on_line = None, on_line

    def end(self) -> Completed:
        """Its process group ended, and what escaped it; how it ended."""
        _end(self.proc, self.run_id)
        for reader in self.readers:
            reader.join(timeout=1)
        with CANCELLATION.lock:
            CANCELLATION.groups.discard(self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        for collector in self.collectors:
            collector.finish()
        overflow = next((c.name for c in self.collectors if c.overflow), None)
        code = self.proc.returncode if self.proc.returncode is not None else -signal.SIGKILL
        return Completed(code, self.collectors[0].text, self.collectors[1].text, overflow)


# The launcher a command started before it knew it would need it (jetson_env.head_start):
# the first run_python asking for the same interpreter, script and environment takes it.
_EARLY: list[Launched] = []


class LocalTarget:
    remote = False

    def __init__(self, python: str = DEFAULT_PYTHON, env: dict[str, str] | None = None):
        self.python = python
        self.env = env
        self.description = f"local ({python})"

    def launch(self, script: str) -> Launched:
        """The launcher of `script`, started now, or the one started early for it."""
        env = dict(self.env if self.env is not None else os.environ)
        early = _EARLY.pop() if _EARLY else None
        if early is not None:
            if (early.python, early.script, early.env) == (self.python, script, env):
                return early
            early.end()  # started for another run than this one
        try:
            return Launched(self.python, script, env)
        except (OSError, ValueError) as exc:
            raise Unstarted(getattr(exc, "strerror", None) or str(exc)) from None

    def run_python(
        self, script: str, deadline: Deadline, on_line: LineCallback, budget: float = 0
    ) -> Completed:
        launched = self.launch(script)
        launched.attach(on_line)
        try:
            # stdin stays open: it is the probe's lifeline (see BOOTSTRAP).
            while launched.proc.poll() is None:
                if CANCELLATION.event.is_set():
                    raise Cancelled()
                if deadline.finished or launched.overflowed.is_set():
                    break
                if deadline.expired():
                    raise TimeoutError(f"timed out after {deadline.seconds:g}s")
                time.sleep(POLL_SECONDS)
        finally:
            done = launched.end()
        return done


def start_early(python: str, script: str) -> None:
    """Start the launcher of `script` in `python` now, for the LocalTarget that will ask
    for it (jetson_env.head_start); nothing where the interpreter does not start."""
    with contextlib.suppress(OSError, ValueError):
        _EARLY.append(Launched(python, script, dict(os.environ)))


def end_early() -> None:
    """End the launcher started early that no run took."""
    while _EARLY:
        _EARLY.pop().end()


def _send(stream, data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
        stream.flush()


def _end(proc: subprocess.Popen, run_id: str) -> None:
    """Kill the probe's process group and any process it started that left the group."""
    kill(proc.pid, group=True)
    # A process stuck in the kernel (a hung GPU driver) cannot die: report without it.
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_WAIT_SECONDS)
    kill_marked(f"{RUN_ENV}={run_id}".encode())


class Strays:
    """Processes the doctor's children left behind, re-parented to the doctor (a
    subreaper: an interpreter wrapper's daemon that cleared its environment and left its
    session, Ansible's workers): ended when the doctor ends (end())."""

    def __init__(self) -> None:
        become_subreaper()
        self.before = set(children(os.getpid()))

    def end(self) -> None:
        end_strays(lambda: self.before)
