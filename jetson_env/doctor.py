"""`jetson-env doctor`: run the probes concurrently in the target, then the checks, in order.

Every probe has a timeout; one that crashes, segfaults, hangs or prints garbage becomes
a `crash` finding for the checks that needed it, while the others finish. The smoke
conversion runs after the other probes (it needs the GPU to itself and memory a Nano
does not have twice) and reports its stages as it goes.
"""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from jetson_env import info
from jetson_env.checks import BY_NAME, CHECKS, Check
from jetson_env.checks.context import Facts
from jetson_env.findings import CRASH, FAIL, UNHEALTHY, Finding, worst
from jetson_env.matrix import Matrix
from jetson_env.targets import ProbeResult, Target, run_probe

SCHEMA = 1
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
# Seconds per probe; importing torch takes seconds on a Nano, the smoke builds engines.
PROBE_TIMEOUTS = {
    "platform": 30,
    "cuda": 60,
    "tensorrt": 90,
    "cudnn": 30,
    "pymodules": 60,
    "pycuda": 90,
    "torch": 240,
    "torch2trt": 240,
    "docker": 45,
    "smoke": 900,
}
STAGE_PREFIX = "@@stage "


class UnknownCheck(LookupError):
    """A --check name that is not a check; the message lists the names."""


def select(names: Iterable[str] | None, smoke: bool = True) -> list[Check]:
    names = list(names or [])
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise UnknownCheck(
            f"unknown check {', '.join(map(repr, unknown))}; checks: {', '.join(BY_NAME)}"
        )
    chosen = [c for c in CHECKS if not names or c.name in names]
    if not smoke and not names:
        chosen = [c for c in chosen if c.name != "smoke"]
    return chosen


@dataclass(frozen=True)
class Report:
    target: str
    platform: dict[str, Any] | None
    findings: list[Finding]
    results: dict[str, ProbeResult]
    reached: bool = True

    @property
    def status(self) -> str:
        return worst(self.findings)

    @property
    def exit_code(self) -> int:
        if not self.reached:
            return EXIT_UNREACHABLE
        return EXIT_FAILED if any(f.status in UNHEALTHY for f in self.findings) else EXIT_OK

    def as_dict(self) -> dict[str, Any]:
        counts = Counter(f.status for f in self.findings)
        return {
            "schema": SCHEMA,
            "target": self.target,
            "status": self.status,
            "exit_code": self.exit_code,
            "counts": {s: counts.get(s, 0) for s in ("ok", "warn", "fail", "skip", "crash")},
            "platform": self.platform,
            "findings": [f.as_dict() for f in self.findings],
            "probes": {
                name: {"seconds": round(r.seconds, 3), "error": r.error}
                for name, r in sorted(self.results.items())
            },
            "smoke": self.results["smoke"].data if "smoke" in self.results else None,
        }


def unreachable(target: str, error: str, remedy: str | None) -> Report:
    """The report for a target that could not be reached (exit code 3)."""
    finding = Finding("connection", "target", FAIL, f"cannot reach {target}: {error}", (), remedy)
    return Report(target, None, [finding], {}, reached=False)


def crash_finding(check: Check, result: ProbeResult) -> Finding:
    details = tuple(result.stderr.strip().splitlines()[-20:]) if result.stderr else ()
    return Finding(check.name, check.area, CRASH, result.error or "probe failed", details)


def run_checks(checks: list[Check], facts: Facts) -> list[Finding]:
    findings: list[Finding] = []
    for check in checks:
        failed = [facts.results[p] for p in check.probes if not facts.results[p].ok]
        if failed:
            findings.append(crash_finding(check, failed[0]))
            continue
        try:
            findings.extend(check.run(facts))
        except Exception as exc:
            findings.append(
                Finding(
                    check.name,
                    check.area,
                    CRASH,
                    f"the check raised {type(exc).__name__}: {exc}",
                    tuple(traceback.format_exc().splitlines()),
                )
            )
    return findings


def run(
    target: Target,
    matrix: Matrix,
    checks: list[Check],
    timeout: float | None = None,
    progress: Callable[[str], None] = lambda _text: None,
) -> Report:
    """Probes (concurrently, each with its timeout), then checks; findings in CHECKS order."""
    probes = {"platform", "cuda"} | {p for check in checks for p in check.probes}
    parallel = sorted(probes - {"smoke"})

    def probe(name: str, on_stderr=None) -> ProbeResult:
        limit = timeout if timeout is not None else PROBE_TIMEOUTS[name]
        return run_probe(target, name, limit, on_stderr=on_stderr)

    progress(f"probing {target.description}: {', '.join(parallel)}")
    with ThreadPoolExecutor(max_workers=len(parallel)) as pool:
        results = dict(zip(parallel, pool.map(probe, parallel), strict=True))
    if "smoke" in probes:

        def on_stage(line: str) -> None:
            if line.startswith(STAGE_PREFIX):
                progress("smoke: " + line[len(STAGE_PREFIX) :])

        results["smoke"] = probe("smoke", on_stage)
    platform = None
    if results["platform"].ok:
        cuda = results["cuda"].data if results["cuda"].ok else {}
        platform = info.describe(results["platform"].data, cuda, matrix)
    facts = Facts(results, matrix, platform)
    return Report(target.description, platform, run_checks(checks, facts), results)
