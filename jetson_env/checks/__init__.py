"""The doctor's checks: one module per check, each a pure function facts -> findings.

A check is registered with a Check (name, area, one-line summary, what it does); the probes
it reads, the order and when it runs are the catalogue's (jetson_env.check_catalogue). The
doctor runs the probes, then the checks in the order of CHECKS, which is the order findings
are printed in. A check whose probe failed is not called: the doctor reports the probe's
error as a `crash` finding in its place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from jetson_env.check_catalogue import CATALOGUE
from jetson_env.checks.context import Facts
from jetson_env.collection import role_fixing
from jetson_env.findings import Finding, Remedy


@dataclass(frozen=True)
class Check:
    """`role`: the playbook role that applies this check's remedies (a plain-text remedy is
    that role's, with `variables`), the one the role registry says fixes it
    (collection.role_fixing); `manual`: why a remedy of this check that no role applies has
    none. A check has at least one of them; a remedy of another kind is built as a Remedy."""

    name: str
    area: str
    summary: str
    run: Callable[[Facts], list[Finding]]
    manual: str = ""
    # What a plain-text remedy asks its role for: the finding's part (a package set).
    variables: tuple[tuple[str, Any], ...] = ()
    role: str | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "role", role_fixing(self.name))
        if not (self.role or self.manual):
            raise ValueError(
                f"check {self.name}: name it in the fixes of its role in the role registry "
                "(the collection's meta/roles.yml), or say why no role fixes it (manual)"
            )

    @property
    def probes(self) -> tuple[str, ...]:
        return CATALOGUE[self.name]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "area": self.area, "summary": self.summary,
                "probes": list(self.probes), "role": self.role}  # fmt: skip

    def as_remedy(self, remedy: str | Remedy) -> Remedy:
        """A plain-text remedy is the check's role's, with `variables`, else one no role
        applies, for the check's reason; a Remedy keeps its own."""
        if isinstance(remedy, Remedy):
            return remedy
        if self.role:
            return Remedy(remedy, self.role, self.variables)
        return Remedy(remedy, why=self.manual)

    def gpu_only(self, remedy: str | Remedy | None) -> Remedy | None:
        """The remedy as the check gives it (as_remedy), marked of use only with a GPU."""
        return replace(self.as_remedy(remedy), gpu=True) if remedy is not None else None

    def finding(
        self, status: str, summary: str, details=(), remedy: str | Remedy | None = None
    ) -> Finding:
        """A finding of this check; a plain-text remedy as the check gives it (as_remedy)."""
        if isinstance(remedy, str):
            remedy = self.as_remedy(remedy)
        return Finding(self.name, self.area, status, summary, tuple(details), remedy)


def _registry() -> tuple[Check, ...]:
    """Every check module's CHECK, in the catalogue's order."""
    from jetson_env.checks import (
        cuda,
        cuda_python,
        cudnn,
        docker,
        engines,
        kernels,
        libnvinfer,
        libraries,
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

    modules = (cuda, cuda_python, cudnn, docker, engines, kernels, libnvinfer, libraries,
               packages, platform, portability, pycuda, smoke, tensorrt_python, termcolor,
               torch, torch2trt, torchvision)  # fmt: skip
    checks = {module.CHECK.name: module.CHECK for module in modules}
    if set(checks) != set(CATALOGUE):
        raise ValueError(
            "the checks and the catalogue (jetson_env/check_catalogue.py) differ: "
            f"{', '.join(sorted(set(checks) ^ set(CATALOGUE)))}"
        )
    return tuple(checks[name] for name in CATALOGUE)


CHECKS: tuple[Check, ...] = _registry()
BY_NAME = {check.name: check for check in CHECKS}
