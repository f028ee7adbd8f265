"""`jetson-env doctor`: run the probes in the target, then the checks, in order.

The light probes run concurrently, each in a process of its own; the probes that import
frameworks share one process (jetson_env.probing). Every probe has a timeout; one that
crashes, segfaults, hangs or prints garbage becomes one `crash` finding, while the
others finish. A target whose interpreter cannot run probes at all is one finding,
found early (exit code 3). `--quick` imports no framework: versions come from package
metadata.
"""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from jetson_env import check_catalogue, platform_in_matrix
from jetson_env.checks import BY_NAME, Check
from jetson_env.checks import engines as engine_checks
from jetson_env.checks.context import Facts
from jetson_env.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE
from jetson_env.findings import CRASH, FAIL, SKIP, STATUSES, UNHEALTHY, Finding, Remedy, worst
from jetson_env.matrix import Matrix
from jetson_env.probing import WRONG_SHAPE, ProbeResult, Unusable, probe_all, wrong_shape
from jetson_env.targets import Target, Unreachable

SCHEMA = 1


def select(
    names: Iterable[str] | None, smoke: bool = True, quick: bool = False, engines: bool = False
) -> list[Check]:
    """The checks to run, in order: the catalogue's selection (check_catalogue.select)."""
    return [BY_NAME[name] for name in check_catalogue.select(names, smoke, quick, engines)]


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

    @property
    def fixes(self) -> list[str]:
        """Every remedy once, in the order to apply them (the checks' order)."""
        return list(dict.fromkeys(f.remedy.shell for f in self.findings if f.remedy))

    def as_dict(self) -> dict[str, Any]:
        counts = Counter(f.status for f in self.findings)
        fixes = self.fixes
        prose = {f.remedy.shell: f.remedy.prose for f in self.findings if f.remedy}
        notes = {f.remedy.shell: f.remedy.note for f in self.findings if f.remedy}
        return {
            "schema": SCHEMA,
            "target": self.target,
            "status": self.status,
            "exit_code": self.exit_code,
            "counts": {s: counts.get(s, 0) for s in STATUSES},
            "platform": self.platform,
            "findings": [f.as_dict() for f in self.findings],
            "fixes": [
                {
                    "number": number,
                    "checks": list(
                        dict.fromkeys(
                            f.check for f in self.findings if f.remedy and f.remedy.shell == command
                        )
                    ),
                    "command": command,
                    "words": prose[command],
                    "note": notes[command] or None,
                }
                for number, command in enumerate(fixes, 1)
            ],
            "probes": {
                name: {"seconds": round(r.seconds, 3), "error": r.error}
                for name, r in sorted(self.results.items())
            },
            "smoke": self.results["smoke"].data if "smoke" in self.results else None,
            "engines": self.engines,
        }

    @property
    def engines(self) -> list[dict[str, Any]] | None:
        """`doctor --engines`: each engine file's verdict here, worst first (None without)."""
        result = self.results.get("engines")
        if result is None or not result.ok:
            return None
        tensorrt = self.results.get("tensorrt")
        tensorrt = engine_checks.host_tensorrt(tensorrt.data if tensorrt is not None else None)
        capability = (self.platform or {}).get("compute_capability")
        return engine_checks.rows(result.data, tensorrt, capability)


UNANSWERED = "the host must answer before a role can run there"


def not_reached(target: str, check: str, summary: str, remedy: str | Remedy | None) -> Report:
    """The report for a target that could not be reached or cannot run probes (exit code 3)."""
    fix = Remedy(remedy, why=UNANSWERED) if isinstance(remedy, str) and remedy else remedy or None
    finding = Finding(check, "target", FAIL, summary, (), fix)
    return Report(target, None, [finding], {}, reached=False)


CONNECTION = "connection"  # the finding of a target that was not reached


def unreachable(target: str, error: str, remedy: str | Remedy | None) -> Report:
    return not_reached(target, CONNECTION, f"cannot reach {target}: {error}", remedy)


def crash_finding(check: Check, result: ProbeResult) -> Finding:
    details = tuple(result.stderr.strip().splitlines()[-20:]) if result.stderr else ()
    return Finding(check.name, check.area, CRASH, result.error or "probe failed", details)


def run_checks(checks: list[Check], facts: Facts) -> list[Finding]:
    """Each check on the facts; a failed probe is one crash finding, under the first check
    that reads it: the later ones say where it is reported."""
    findings: list[Finding] = []
    reported: dict[str, str] = {}  # failed probe -> the check its crash is reported under
    for check in checks:
        failed = [p for p in check.probes if not facts.results[p].ok]
        if failed:
            probe = failed[0]
            if probe in reported:
                findings.append(
                    check.finding(SKIP, f"not checked: see {reported[probe]} (probe '{probe}')")
                )
            else:
                reported[probe] = check.name
                findings.append(crash_finding(check, facts.results[probe]))
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
    arguments: dict[str, Any] | None = None,
) -> Report:
    """Probes (`arguments`: probe name -> its arguments, the engine folders), then checks;
    findings in CHECKS order. Cancelled (Ctrl-C) propagates."""
    probes = check_catalogue.needed_probes(check.name for check in checks)
    try:
        results = probe_all(target, probes, timeout, progress, arguments)
    except Unusable as exc:
        return not_reached(target.description, "interpreter", str(exc), exc.remedy)
    except Unreachable as exc:
        return unreachable(target.description, str(exc), exc.remedy)
    platform = None
    if results["platform"].ok:
        cuda = results["cuda"].data if results["cuda"].ok else {}
        try:
            platform = platform_in_matrix.describe(results["platform"].data, cuda, matrix)
        except WRONG_SHAPE as exc:
            error = wrong_shape(exc, "platform")
            results["platform"] = ProbeResult("platform", None, error, results["platform"].seconds)
    facts = Facts(results, matrix, platform)
    return Report(target.description, platform, without_gpu(run_checks(checks, facts), facts),
                  results)  # fmt: skip


LEFT_OUT_WITHOUT_A_GPU = Remedy(
    "left out: what these fixes install (TensorRT, torch's CUDA build, cuDNN, the nvidia "
    "container runtime, ...) is of use only with an NVIDIA GPU, and this host has none (see "
    "platform); run the doctor again once `nvidia-smi` lists one",
    why="the doctor found no NVIDIA GPU on this host",
    prose=True,
)


def without_gpu(findings: list[Finding], facts: Facts) -> list[Finding]:
    """The platform's no-GPU verdict applied to the fixes: where it found no GPU, each one of
    use only with a GPU (Remedy.gpu) is left out, all of them under one step that says why
    once (the findings keep their status: what is missing is still missing)."""
    if not facts.without_gpu:
        return findings
    return [
        replace(f, remedy=LEFT_OUT_WITHOUT_A_GPU) if f.remedy is not None and f.remedy.gpu else f
        for f in findings
    ]
