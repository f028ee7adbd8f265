"""Where probes run: the target's Python interpreter, here or over SSH.

A probe is a self-contained script (jetson_env/probes/<name>.py) sent on stdin to
`python -`, so nothing is installed on the target and local and remote runs are
the same code path. A probe that crashes, hangs or prints garbage becomes a
ProbeResult with an error, never an exception for the caller.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

LineCallback = Callable[[str], None]


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class ProbeResult:
    name: str
    data: dict[str, Any] | None
    error: str | None
    seconds: float
    stderr: str = field(default="", repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None


class Target(Protocol):
    """A place with a Python interpreter that can run a script given on stdin."""

    description: str

    def run_python(
        self, source: str, args: list[str], timeout: float, on_stderr: LineCallback | None = None
    ) -> Completed:
        """Run `python - *args` with source on stdin; raises TimeoutError past timeout.

        on_stderr, if given, is called with each line of stderr as it arrives (progress).
        """
        ...


class LocalTarget:
    def __init__(self, python: str = "python3", env: dict[str, str] | None = None):
        self.python = python
        self.env = env
        self.description = f"local ({python})"

    def run_python(
        self, source: str, args: list[str], timeout: float, on_stderr: LineCallback | None = None
    ) -> Completed:
        try:
            # A session of its own, so that a timeout also ends what the probe started.
            proc = subprocess.Popen(
                [self.python, "-", *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            return Completed(127, "", f"cannot start {self.python}: {exc.strerror or exc}")
        stdout: list[str] = []
        stderr: list[str] = []

        def read_stdout() -> None:
            stdout.append(proc.stdout.read())

        def read_stderr() -> None:
            for line in proc.stderr:
                stderr.append(line)
                if on_stderr is not None:
                    on_stderr(line.rstrip("\n"))

        readers = [threading.Thread(target=f, daemon=True) for f in (read_stdout, read_stderr)]
        for reader in readers:
            reader.start()
        try:
            proc.stdin.write(source)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the interpreter exited before reading its script; its exit status says why
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise TimeoutError(f"timed out after {timeout:g}s") from None
        finally:
            for reader in readers:
                reader.join(timeout=5)
        return Completed(proc.returncode, "".join(stdout), "".join(stderr))


def probe_source(name: str) -> str:
    return (resources.files("jetson_env.probes") / f"{name}.py").read_text()


def run_probe(
    target: Target,
    name: str,
    timeout: float = 30,
    args: list[str] | None = None,
    on_stderr: LineCallback | None = None,
) -> ProbeResult:
    """Run one probe on a target; every failure mode comes back as ProbeResult.error."""
    start = time.monotonic()

    def result(data=None, error=None, stderr=""):
        return ProbeResult(name, data, error, time.monotonic() - start, stderr)

    try:
        done = target.run_python(probe_source(name), list(args or []), timeout, on_stderr)
    except TimeoutError as exc:
        return result(error=f"probe '{name}' {exc}")
    except OSError as exc:
        return result(error=f"probe '{name}' could not run on {target.description}: {exc}")
    if done.returncode != 0:
        return result(error=_describe_exit(name, done), stderr=done.stderr)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return result(
            error=f"probe '{name}' printed no JSON: {done.stdout[:200]!r}", stderr=done.stderr
        )
    if not isinstance(data, dict):
        return result(error=f"probe '{name}' printed {type(data).__name__}, not an object")
    return result(data=data, stderr=done.stderr)


def _describe_exit(name: str, done: Completed) -> str:
    if done.returncode < 0:
        try:
            how = signal.Signals(-done.returncode).name
        except ValueError:
            how = f"signal {-done.returncode}"
        return f"probe '{name}' was killed by {how}"
    lines = done.stderr.strip().splitlines()
    last = lines[-1] if lines else "no output"
    return f"probe '{name}' exited {done.returncode}: {last}"
