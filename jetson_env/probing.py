"""The probe registry, and how a set of probes runs in one target process.

Light probes (files, the loader, subprocesses such as nvidia-smi) each run in a process
of their own, concurrently; on a target that says `light_probes_together` (a fleet host,
where one interpreter start per host instead of seven is what the fleet's wall time is
made of) they share one process, in order, as the framework ones do. Probes that import
frameworks (torch, tensorrt, pycuda) share ONE process per doctor run, one after another:
torch is imported once, and pycuda's CUDA context is destroyed before torch makes its
own, so at most one context is alive at any time (a 4 GB Nano cannot hold two imports of
torch, or two contexts).
Each probe keeps its own timeout inside the shared process; one that crashes or hangs
is reported as such, and the probes after it run in a fresh process.

A target whose interpreter does not start, is not Python 3.6+, or whose login shell
refuses commands is found by the first process that tries, and raised as Unusable:
one finding, early, instead of one crash per probe.
"""

from __future__ import annotations

import json
import shlex
import signal
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from jetson_env.targets import (
    CANCELLATION,
    READY,
    STARTUP_TIMEOUT,
    TOO_OLD,
    Completed,
    Deadline,
    Target,
    Unstarted,
    cancel_all,
)

RECORD = "@@jetson-env "
STAGE = "@@stage "
STDERR_LINES_KEPT = 40


@dataclass(frozen=True)
class Probe:
    name: str
    timeout: float  # seconds; importing torch takes tens of seconds on a Nano
    framework: bool = False  # imports torch, tensorrt or pycuda: runs in the shared process
    required: tuple[str, ...] = ()  # keys its result must have (read outside the checks)


# Framework probes run in this order: pycuda's context is gone before torch starts one.
PROBES = (
    Probe("platform", 30, required=("is_jetson", "machine", "l4t", "os", "python")),
    Probe("cuda", 60, required=("version", "root")),
    Probe("tensorrt", 90, required=("files", "loaded")),
    Probe("cudnn", 30, required=("version",)),
    Probe("pymodules", 60, required=("python", "modules")),
    Probe("packages", 30, required=("packages",)),
    Probe("docker", 45, required=("cli", "engine")),
    Probe("pycuda", 90, framework=True, required=("installed",)),
    Probe("torch", 240, framework=True, required=("torch", "torchvision")),
    Probe("tensorrt_bindings", 90, framework=True, required=("imported",)),
    Probe("torch2trt", 240, framework=True, required=("installed",)),
    Probe("smoke", 900, framework=True, required=("torch", "conversions", "skipped")),
)
BY_NAME = {probe.name: probe for probe in PROBES}


class Unusable(Exception):
    """The target's interpreter cannot run probes at all; `remedy` says what to do."""

    def __init__(self, message: str, remedy: str | None = None):
        super().__init__(message)
        self.remedy = remedy


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


def source(name: str) -> str:
    return (resources.files("jetson_env.probes") / f"{name}.py").read_text(encoding="utf-8")


def script(names: Iterable[str]) -> str:
    """The shared helpers, once, then the named probes and the call that runs them. Only
    with the smoke do probes run on the GPU (a CUDA context, made while torch imports)."""
    probes = [(name, source(name)) for name in names]
    gpu_work = "smoke" in names
    return source("_prelude") + f"\nrun_probes({probes!r}, gpu_work={gpu_work!r})\n"


def run_probes(
    target: Target,
    names: list[str],
    timeouts: dict[str, float],
    on_stage: Callable[[str], None] = lambda _text: None,
) -> dict[str, ProbeResult]:
    """Run `names` in order in one process; after a crash or hang, the rest in a fresh one."""
    results: dict[str, ProbeResult] = {}
    while pending := [name for name in names if name not in results]:
        found = _ProcessRun(target, pending, timeouts, on_stage).run()
        if not found:  # the process ended without a word about the first probe
            found = {pending[0]: ProbeResult(pending[0], None, "the probe did not run", 0.0)}
        results.update(found)
    return results


class _ProcessRun:
    """One target process running `names` in order, read record by record as it runs."""

    def __init__(self, target, names, timeouts, on_stage):
        self.target = target
        self.names = names
        self.timeouts = timeouts
        self.on_stage = on_stage
        self.deadline = Deadline(min(STARTUP_TIMEOUT, timeouts[names[0]]))
        self.ready = False
        self.current: str | None = None
        self.started = time.monotonic()
        self.results: dict[str, ProbeResult] = {}
        self.stderr: list[str] = []

    def run(self) -> dict[str, ProbeResult]:
        budget = process_budget(self.names, self.timeouts)
        try:
            done = self.target.run_python(script(self.names), self.deadline, self.on_line, budget)
        except Unstarted as exc:
            raise Unusable(
                f"cannot start {self.target.python}: {exc}", remedy=interpreter_remedy(self.target)
            ) from None
        except TimeoutError as exc:
            if not self.ready:
                raise Unusable(
                    f"{self.target.python} did not start within {self.deadline.seconds:g}s",
                    remedy=interpreter_remedy(self.target),
                ) from None
            if self.current is not None:
                self.fail(self.current, f"probe '{self.current}' {exc}")
            return self.results
        if not self.ready:
            raise not_started(self.target, done)
        if self.current is not None:
            self.fail(self.current, describe_exit(self.current, done))
        return self.results

    def on_line(self, stream: str, line: str) -> None:
        if stream == "stderr":
            if line.startswith(STAGE):
                self.on_stage(line[len(STAGE) :])
            else:
                self.stderr = [*self.stderr[-STDERR_LINES_KEPT:], line]
            return
        if line == READY:
            self.ready = True
            self.deadline.reset(self.timeouts[self.names[0]])
            return
        if not line.startswith(RECORD) or not self.ready:
            return  # an import's banner: not ours
        kind, _, rest = line[len(RECORD) :].partition(" ")
        name, _, payload = rest.partition(" ")
        if name not in self.names:
            return
        if kind == "begin":
            self.current, self.started, self.stderr = name, time.monotonic(), []
            self.deadline.reset(self.timeouts[name])
        elif kind in ("result", "error") and name == self.current:
            self.current = None
            try:
                data = json.loads(payload)
            except ValueError:
                data = None
            if kind == "error" and isinstance(data, dict):
                self.fail(name, f"probe '{name}' raised {data.get('error')}", data.get("traceback"))
            elif not isinstance(data, dict):
                self.fail(name, f"probe '{name}' printed {type(data).__name__}, not an object")
            elif missing := [key for key in BY_NAME[name].required if key not in data]:
                self.fail(name, f"probe '{name}' printed an object without {missing[0]!r}")
            else:
                self.results[name] = ProbeResult(name, data, None, self.elapsed(), self.details())
            if len(self.results) == len(self.names):
                self.deadline.finish()

    def fail(self, name: str, error: str, details: str | None = None) -> None:
        self.current = None
        stderr = details if isinstance(details, str) else self.details()
        self.results[name] = ProbeResult(name, None, error, self.elapsed(), stderr)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def details(self) -> str:
        return "\n".join(self.stderr)


def describe_exit(name: str, done: Completed) -> str:
    return f"probe '{name}' {exit_reason(done)}"


def exit_reason(done: Completed) -> str:
    """'was killed by SIGSEGV', 'exited 1: ImportError: ...', 'printed more than 4 MiB ...'."""
    if done.overflow:
        return f"printed more than 4 MiB on {done.overflow} and was stopped"
    if done.returncode < 0:
        try:
            how = signal.Signals(-done.returncode).name
        except ValueError:
            how = f"signal {-done.returncode}"
        return f"was killed by {how}"
    return f"exited {done.returncode}: {last_line(done.stderr) or 'no output'}"


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def not_started(target: Target, done: Completed) -> Unusable:
    """Why a process never printed READY: too old, not Python, or a shell that refuses."""
    python = target.python
    remedy = interpreter_remedy(target)
    for line in done.stderr.splitlines():
        if line.startswith(TOO_OLD):
            version = line[len(TOO_OLD) :].strip()
            return Unusable(
                f"{python} is Python {version}: the probes need Python 3.6 or newer", remedy
            )
    if done.overflow:
        return Unusable(
            f"{python} printed more than 4 MiB without running the probes: "
            "is it a Python interpreter?",
            remedy,
        )
    said = last_line(done.stderr) or last_line(done.stdout)
    user = getattr(target, "user", None)
    if target.remote and done.returncode in (1, 126) and (not said or "not available" in said):
        quoted = f" ({said!r})" if said else " and printed nothing"
        return Unusable(
            f"the login shell of {user or 'the user'} on {target.description} refuses commands: "
            f"it exited {done.returncode}{quoted}, as /bin/false and nologin do",
            remedy="on the host, give the user a shell that runs commands: "
            + shlex.join(["sudo", "usermod", "--shell", "/bin/bash", user or "USER"]),
        )
    if done.overflow or done.returncode < 0:
        return Unusable(f"{python} did not run the probes: it {exit_reason(done)}", remedy)
    printed = f": {said}" if said else ", printing nothing"
    return Unusable(
        f"{python} did not run the probes: it exited {done.returncode}{printed}", remedy
    )


def interpreter_remedy(target: Target) -> str:
    where = "on the target" if target.remote else "here"
    return (
        f"run again with --python set to a Python 3.6 or newer {where}, "
        "e.g. --python /usr/bin/python3"
    )


def plan(
    names: Iterable[str], timeout: float | None = None
) -> tuple[dict[str, float], list[str], list[str]]:
    """The probes' timeouts (in PROBES order), the light ones (a process each) and the
    framework ones (one shared process, in order)."""
    wanted = [p for p in PROBES if p.name in set(names)]
    timeouts = {p.name: timeout or p.timeout for p in wanted}
    light = [p.name for p in wanted if not p.framework]
    return timeouts, light, [p.name for p in wanted if p.framework]


def process_groups(light: list[str], framework: list[str], together: bool) -> list[list[str]]:
    """The probe processes a doctor run starts: each light probe alone (or all of them in
    one process where `together`), then the framework probes in one."""
    groups = ([light] if light else []) if together else [[name] for name in light]
    return groups + ([framework] if framework else [])


def process_budget(names: Iterable[str], timeouts: dict[str, float]) -> float:
    """The most one process running `names` may take: startup, then each probe's timeout."""
    return STARTUP_TIMEOUT + sum(timeouts[name] for name in names)


def probe_all(
    target: Target,
    names: Iterable[str],
    timeout: float | None = None,
    progress: Callable[[str], None] = lambda _text: None,
) -> dict[str, ProbeResult]:
    """The probe processes (process_groups) at once: light probes each in its own, or
    together on a target that says so, framework probes in one shared process beside them.
    Raises Unusable (after ending every other probe) when the target's interpreter cannot
    run probes."""
    timeouts, light, framework = plan(names, timeout)
    groups = process_groups(light, framework, getattr(target, "light_probes_together", False))
    progress(f"probing {target.description}: {', '.join(timeouts)}")
    CANCELLATION.event.clear()
    pool = ThreadPoolExecutor(max_workers=len(groups))
    try:
        on_stage = lambda text: progress(f"smoke: {text}")  # noqa: E731
        futures = [pool.submit(run_probes, target, group, timeouts, on_stage) for group in groups]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        unusable = next((f.exception() for f in done if isinstance(f.exception(), Unusable)), None)
        if unusable is not None:
            cancel_all()
            wait(futures)
            raise unusable
        results: dict[str, ProbeResult] = {}
        for future in futures:
            results.update(future.result())
        return results
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
