"""The doctor's checks: one module per check, each a pure function facts -> findings.

A check is registered with a Check (name, area, one-line summary, the probes it
reads). The doctor runs the probes, then the checks in the order of CHECKS, which
is the order findings are printed in. A check whose probe failed is not called: the
doctor reports the probe's error as a `crash` finding in its place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jetson_env.checks.context import Facts
from jetson_env.findings import Finding, Remedy


@dataclass(frozen=True)
class Check:
    name: str
    area: str
    summary: str
    probes: tuple[str, ...]
    run: Callable[[Facts], list[Finding]]
    quick_only: bool = False  # stands in for the framework checks under --quick

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "area": self.area, "summary": self.summary,
                "probes": list(self.probes)}  # fmt: skip

    def finding(
        self, status: str, summary: str, details=(), remedy: str | Remedy | None = None
    ) -> Finding:
        """A finding of this check; a plain-text remedy is one no role applies."""
        if isinstance(remedy, str):
            remedy = Remedy(remedy)
        return Finding(self.name, self.area, status, summary, tuple(details), remedy)


def _registry() -> tuple[Check, ...]:
    from jetson_env.checks import (
        cuda,
        cudnn,
        docker,
        libnvinfer,
        packages,
        platform,
        portability,
        pycuda,
        smoke,
        tensorrt_python,
        termcolor,
        torch,
        torch2trt,
        torchvision,
    )

    modules = (
        platform,
        libnvinfer,
        tensorrt_python,
        cuda,
        cudnn,
        pycuda,
        termcolor,
        torch,
        torchvision,
        torch2trt,
        packages,
        docker,
        portability,
        smoke,
    )
    return tuple(module.CHECK for module in modules)


CHECKS: tuple[Check, ...] = _registry()
BY_NAME = {check.name: check for check in CHECKS}
