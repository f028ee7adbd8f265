"""The probe registry, and how the probes run: the launcher on the target.

One launcher (jetson_env/probes/_runner.py) runs on every target, started by the
target's run_python (here, over SSH, or on a fleet host through Ansible): it starts the
probe processes there and passes their records on. Light probes (files, the loader,
subprocesses such as nvidia-smi) each run in a process of their own, concurrently; on a
target that says `light_probes_together` (a fleet host, where one interpreter start per
host instead of seven is what the fleet's wall time is made of) they share one process,
in order, as the framework ones do. Probes that import frameworks (torch, tensorrt,
pycuda) share ONE process per doctor run, one after another: torch is imported once,
and every probe uses the GPU's primary context, so at most one context is alive at any
time (a 4 GB Nano cannot hold two imports of torch, or two
contexts). The launcher keeps each probe's own timeout inside its process; one that
crashes, hangs or floods is reported as such, and the probes after it run in a fresh
process, all on the target.

A target whose interpreter does not start, is not Python 3.6+, or whose login shell
refuses commands is found when the launcher does not start, and raised as Unusable:
one finding, early, instead of one crash per probe.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jetson_env import probes
from jetson_env.probes._prelude import RECORD, STAGE
from jetson_env.targets import (
    BOOTSTRAP,
    CANCELLATION,
    KILL_WAIT_SECONDS,
    OUTPUT_LIMIT,
    READY,
    RUN_ENV,
    STARTUP_EXPIRED,
    STARTUP_TIMEOUT,
    TOO_OLD,
    Completed,
    Deadline,
    Target,
    Unstarted,
)

STDERR_LINES_KEPT = 40


@dataclass(frozen=True)
class Probe:
    name: str
    timeout: float  # seconds; importing torch takes tens of seconds on a Nano
    framework: bool = False  # imports torch, tensorrt or pycuda: runs in the shared process
    required: tuple[str, ...] = ()  # keys its result must have (read outside the checks)


# Framework probes run torch's first (plan()): its import (seconds) is the longest wait, and
# with the smoke the primary context is made beside it (the prelude's warm_cuda), before
# pycuda's and cuda-python's round trips use it. pycuda's allocation without a context runs
# in a thread of its own, which has none current.
PROBES = (
    Probe("platform", 30, required=("is_jetson", "machine", "l4t", "os", "python")),
    Probe("cuda", 60, required=("version", "root")),
    Probe("tensorrt", 90, required=("files", "loaded")),
    Probe("cudnn", 30, required=("version",)),
    Probe("pymodules", 60, required=("python", "modules")),
    Probe("packages", 30, required=("packages",)),
    Probe("docker", 45, required=("cli", "engine")),
    Probe("kernels", 60, required=("packages", "driver", "loader")),
    Probe("pycuda", 90, framework=True, required=("installed",)),
    Probe("torch", 240, framework=True, required=("torch", "torchvision")),
    Probe("cuda_python", 90, framework=True, required=("installed", "samples")),
    Probe("tensorrt_bindings", 90, framework=True, required=("imported",)),
    Probe("torch2trt", 240, framework=True, required=("installed",)),
    Probe("smoke", 900, framework=True, required=("torch", "conversions", "skipped")),
    # `jetson-env plan`'s probes (read with arguments: ARGUMENTS in the probe's source)
    Probe("native", 60, required=("python", "distributions")),
    Probe("engines", 120, required=("engines", "reader")),
    Probe("apt_upgrade", 240, required=("configured", "holds", "simulation")),
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
    """A probe's file, read beside the package (importlib.resources' import, a tenth of the
    head start's, is not needed for a package installed as files)."""
    with open(
        os.path.join(os.path.dirname(probes.__file__), f"{name}.py"), encoding="utf-8"
    ) as file:
        return file.read()


def functions(name: str) -> str:
    """A probe's functions for a role's `python -c` script (the tensorrt role's read of the
    host's TensorRT): the probes' prelude, then the probe, each as the launcher gets them;
    the role's own lines follow."""
    return f"{source('_prelude')}\n{source(name)}\n"


def with_arguments(text: str, arguments: Any) -> str:
    """A probe's source with a line before it that binds `arguments` (JSON data) to
    ARGUMENTS: data, never code (json.dumps, read back with json.loads)."""
    if arguments is None:
        return text
    return f"ARGUMENTS = __import__('json').loads({json.dumps(json.dumps(arguments))})\n" + text


def launcher_script(
    groups: list[list[str]],
    timeouts: dict[str, float],
    arguments: dict[str, Any] | None = None,
) -> str:
    """What run_python sends: the launcher and its request (the probes' sources, the
    groups, one process each, and each probe's timeout); `arguments`: probe name -> the
    data its ARGUMENTS holds."""
    arguments = arguments or {}
    request = {
        "bootstrap": BOOTSTRAP,
        "prelude": source("_prelude"),
        "probes": {
            name: with_arguments(source(name), arguments.get(name))
            for group in groups
            for name in group
        },
        "groups": groups,
        "timeouts": {name: timeouts[name] for group in groups for name in group},
        "record": RECORD,
        "stage": STAGE,
        "ready": READY,
        "run_env": RUN_ENV,
        "startup": STARTUP_TIMEOUT,
        "output_limit": OUTPUT_LIMIT,
    }
    return source("_runner") + f"\nmain(json.loads({json.dumps(request)!r}))\n"


def run_probes(
    target: Target,
    names: list[str],
    timeouts: dict[str, float],
    on_stage: Callable[[str], None] = lambda _text: None,
) -> dict[str, ProbeResult]:
    """Run `names` in order in one probe process; after a crash or hang, the rest in a
    fresh one."""
    return _Launch(target, [names], timeouts, on_stage).run()


class _Launch:
    """The launcher on the target, read record by record as it runs."""

    def __init__(self, target, groups, timeouts, on_stage, arguments=None):
        self.target = target
        self.arguments = arguments
        self.groups = groups
        self.names = [name for group in groups for name in group]
        self.timeouts = timeouts
        self.on_stage = on_stage
        self.startup = startup_timeout(timeouts)
        self.deadline = Deadline(self.startup)
        self.ready = False
        self.began: dict[str, float] = {}
        self.said: dict[str, tuple[str, Any]] = {}  # name -> (kind, payload) before its end
        self.results: dict[str, ProbeResult] = {}
        self.stderr: list[str] = []
        self.startup_expired = False

    def run(self) -> dict[str, ProbeResult]:
        budget = launch_budget(self.groups, self.timeouts)
        script = launcher_script(self.groups, self.timeouts, self.arguments)
        try:
            done = self.target.run_python(script, self.deadline, self.on_line, budget)
        except Unstarted as exc:
            raise Unusable(
                f"cannot start {self.target.python}: {exc}", remedy=interpreter_remedy(self.target)
            ) from None
        except TimeoutError as exc:
            if not self.ready:
                raise self.did_not_start() from None
            self.unfinished(f"the probe launcher {exc}")
            return self.results
        if not self.ready:
            if self.startup_expired:
                raise self.did_not_start()
            raise not_started(self.target, done)
        self.unfinished(f"the probe launcher {exit_reason(done)}")
        return self.results

    def did_not_start(self) -> Unusable:
        return Unusable(
            f"{self.target.python} did not start within {self.startup:g}s",
            remedy=interpreter_remedy(self.target),
        )

    def unfinished(self, why: str) -> None:
        for name in self.names:
            if name not in self.results:
                self.results[name] = ProbeResult(name, None, f"probe '{name}': {why}", 0.0)

    def on_line(self, stream: str, line: str) -> None:
        if stream == "stderr":
            if line.startswith(STARTUP_EXPIRED):
                self.startup_expired = True
            elif line.strip():
                self.stderr = [*self.stderr[-STDERR_LINES_KEPT:], line]
            return
        if line.startswith(STAGE + " "):
            self.on_stage(line[len(STAGE) + 1 :])
            return
        if line == READY:
            self.ready = True
            self.deadline.reset(launch_budget(self.groups, self.timeouts))
            return
        if not line.startswith(RECORD + " ") or not self.ready:
            return
        kind, _, rest = line[len(RECORD) + 1 :].partition(" ")
        name, _, payload = rest.partition(" ")
        if kind == "done":
            self.deadline.finish()
            return
        if name not in self.names or name in self.results:
            return
        if kind == "begin":
            self.began[name] = time.monotonic()
        elif kind in ("result", "error", "crash") and name not in self.said:
            self.said[name] = (kind, payload)
        elif kind == "end" and name in self.said:
            self.end(name, *self.said[name], parse(payload))

    def end(self, name: str, kind: str, payload: str, end: Any) -> None:
        end = end if isinstance(end, dict) else {}
        stderr = end.get("stderr") if isinstance(end.get("stderr"), str) else ""
        seconds = end.get("seconds") if isinstance(end.get("seconds"), (int, float)) else 0.0
        data = parse(payload)
        error = None
        if kind == "crash":
            error = f"probe '{name}' {crash_reason(data, stderr)}"
        elif kind == "error" and isinstance(data, dict):
            stderr = data.get("traceback") if isinstance(data.get("traceback"), str) else stderr
            error = f"probe '{name}' raised {data.get('error')}"
        elif data is _UNREADABLE:
            error = f"probe '{name}' printed a record that is not JSON (or nests too deep)"
        elif not isinstance(data, dict):
            error = f"probe '{name}' printed {type(data).__name__}, not an object"
        elif missing := [key for key in BY_NAME[name].required if key not in data]:
            error = f"probe '{name}' printed an object without {missing[0]!r}"
        self.results[name] = ProbeResult(
            name, None if error else data, error, float(seconds), stderr
        )


_UNREADABLE = object()
# What facts of another shape than a reader expects raise where they are read (a list for a
# dict, a number for a text): the doctor and the plan guard their readers with these, and
# say it with wrong_shape(), so one host's odd facts stop only that host.
WRONG_SHAPE = (KeyError, TypeError, AttributeError, ValueError, IndexError, OverflowError)


def wrong_shape(exc: Exception, probe: str | None = None) -> str:
    who = f"probe '{probe}'" if probe else "a probe"
    return f"{who} printed facts of the wrong shape ({type(exc).__name__}: {exc})"


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e400
        raise ValueError(f"{text[:40]} is no finite number")
    return number


def parse(payload: str) -> Any:
    """A record's JSON; _UNREADABLE for what is not JSON (NaN, Infinity and numbers past a
    float's range such as 1e400 included: no reader expects them) or nests past the
    parser's depth."""
    try:
        return json.loads(payload, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError):
        return _UNREADABLE


def crash_reason(facts: Any, stderr: str) -> str:
    """How the launcher saw a probe process end: 'timed out after 3s', 'was killed by
    SIGSEGV', 'exited 1: ImportError: ...', 'printed more than 4 MiB on stdout ...'."""
    facts = facts if isinstance(facts, dict) else {}
    if isinstance(facts.get("timed_out"), (int, float)):
        return f"timed out after {facts['timed_out']:g}s"
    code = facts.get("returncode")
    return exit_reason(Completed(code if isinstance(code, int) else -signal.SIGKILL, "", stderr,
                                 facts.get("overflow") if isinstance(facts.get("overflow"), str)
                                 else None))  # fmt: skip


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
    """The last line said, cut to 300 characters (the launcher's own records left out)."""
    lines = [line.strip() for line in text.strip().splitlines()
             if line.strip() and not line.startswith(RECORD)]  # fmt: skip
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
    login = getattr(target, "login_shell", False)  # a login shell runs the command (SSH)
    if login and done.returncode in (1, 126) and (not said or "not available" in said):
        quoted = f" ({said!r})" if said else " and printed nothing"
        return Unusable(
            f"the login shell of {user or 'the user'} on {target.description} refuses commands: "
            f"it exited {done.returncode}{quoted}, as /bin/false and nologin do",
            remedy="on the host, give the user a shell that runs commands: "
            + shlex.join(["sudo", "usermod", "--shell", "/bin/bash", user or "USER"]),
        )
    if done.returncode == 127 and not done.overflow:  # the shell's "command not found"
        reason = "not found" if not said or said.endswith("not found") else said
        return Unusable(f"cannot start {python}: {reason}", remedy)
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
    framework = [p.name for p in wanted if p.framework]
    if "torch" in framework:  # nothing must run before it
        framework.remove("torch")
        framework.insert(0, "torch")
    return timeouts, light, framework


def process_groups(light: list[str], framework: list[str], together: bool) -> list[list[str]]:
    """The probe processes a doctor run starts, in the order the launcher starts them: the
    framework probes in one, first (torch's import is the longest wait: the light ones'
    process starts come after it, not before), then each light probe alone (or all of them
    in one process where `together`)."""
    groups = ([light] if light else []) if together else [[name] for name in light]
    return ([framework] if framework else []) + groups


def launch_plan(
    names: Iterable[str], timeout: float | None, together: bool
) -> tuple[dict[str, float], list[list[str]]]:
    """The probes' timeouts and the launcher's process groups (plan, process_groups): what
    probe_all sends, and the head start (jetson_env.head_start) before it."""
    timeouts, light, framework = plan(names, timeout)
    return timeouts, process_groups(light, framework, together)


def startup_timeout(timeouts: dict[str, float]) -> float:
    """How soon the interpreter must run the launcher: STARTUP_TIMEOUT, or less where every
    probe has less (--timeout 3: a hang before Python starts is not waited on for 30 s)."""
    return min(STARTUP_TIMEOUT, *timeouts.values())


def launch_budget(groups: list[list[str]], timeouts: dict[str, float]) -> float:
    """The most the launcher may take once started: its slowest group, each probe's
    timeout and a fresh process's startup and ending per probe (after crashes)."""
    return max(
        sum(timeouts[name] + STARTUP_TIMEOUT + KILL_WAIT_SECONDS for name in group)
        for group in groups
    )


def probe_all(
    target: Target,
    names: Iterable[str],
    timeout: float | None = None,
    progress: Callable[[str], None] = lambda _text: None,
    arguments: dict[str, Any] | None = None,
) -> dict[str, ProbeResult]:
    """Every probe, in the launcher's processes (process_groups), on the target. Raises
    Unusable when the target's interpreter cannot run probes. `arguments`: probe name ->
    its ARGUMENTS (launcher_script)."""
    together = getattr(target, "light_probes_together", False)
    timeouts, groups = launch_plan(names, timeout, together)
    progress(f"probing {target.description}: {', '.join(timeouts)}")
    CANCELLATION.event.clear()
    on_stage = lambda text: progress(f"smoke: {text}")  # noqa: E731
    return _Launch(target, groups, timeouts, on_stage, arguments).run()
