"""The doctor's result model: a Finding per thing checked, with a frozen set of states.

JSON names are part of the documented schema (docs/json.md): add fields, never rename.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OK, WARN, FAIL, SKIP, CRASH = "ok", "warn", "fail", "skip", "crash"
STATUSES = (OK, WARN, FAIL, SKIP, CRASH)
# Statuses that make the doctor exit non-zero.
UNHEALTHY = frozenset({FAIL, CRASH})


@dataclass(frozen=True)
class Finding:
    """One thing the doctor looked at.

    summary: what was seen, one line. details: supporting lines (paths, versions, the
    raw error). remedy: the exact command(s) that fix it on this platform, for every
    warn/fail; None when there is nothing to do.
    """

    check: str
    area: str
    status: str
    summary: str
    details: tuple[str, ...] = ()
    remedy: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; one of {STATUSES}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "area": self.area,
            "status": self.status,
            "summary": self.summary,
            "details": list(self.details),
            "remedy": self.remedy,
        }


def worst(findings: list[Finding]) -> str:
    """The overall status: crash > fail > warn > ok > skip (skip alone counts as ok)."""
    order = (CRASH, FAIL, WARN, OK)
    statuses = {f.status for f in findings}
    return next((s for s in order if s in statuses), OK)
