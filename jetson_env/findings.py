"""The doctor's result model: a Finding per thing checked, with a frozen set of states.

JSON names are part of the documented schema (docs/json.md): add fields, never rename.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

OK, WARN, FAIL, SKIP, CRASH = "ok", "warn", "fail", "skip", "crash"
STATUSES = (OK, WARN, FAIL, SKIP, CRASH)
# Worst first: the one order in which a check's, a host's or a run's statuses are summed up
# and shown.
SEVERITY = (CRASH, FAIL, WARN, OK, SKIP)
# Statuses that make the doctor exit non-zero.
UNHEALTHY = frozenset({FAIL, CRASH})


@dataclass(frozen=True)
class Remedy:
    """How to fix a finding: the shell command for this target and, where the playbook
    applies the same fix, its role (also the role's tag in playbooks/jetson.yml) with the
    variables that make it fix this host. Both are rendered from the same role defaults.
    Where no role applies it, `why` says why (hardware, a download behind a login, the
    user's own files), so --fix can say it too. `prose`: the fix is a step said in words (a
    download page, a setting of the user's), not a command to paste into a shell. `note`:
    words that go with a command (what it does, what to do after it), shown beside it as
    text, so that `shell` holds only what can be pasted. `gpu`: it installs what is of use
    only with an NVIDIA GPU (TensorRT, a CUDA torch, cuDNN, the nvidia container runtime):
    where the doctor finds none, it is not prescribed (jetson_env.doctor, without_gpu).
    """

    shell: str
    role: str | None = None
    variables: tuple[tuple[str, Any], ...] = ()
    why: str = ""
    prose: bool = False  # JSON calls it `words` (docs/doctor-report.schema.json)
    note: str = ""
    gpu: bool = False

    def __post_init__(self) -> None:
        if self.role is None and not self.why:
            raise ValueError(f"a remedy no role applies must say why: {self.shell!r}")

    def as_dict(self) -> dict[str, Any] | None:
        """The playbook part for JSON (`null` where no role applies the fix)."""
        if self.role is None:
            return None
        return {"role": self.role, "tags": [self.role], "vars": dict(self.variables)}


@dataclass(frozen=True)
class Finding:
    """One thing the doctor looked at.

    summary: what was seen, one line. details: supporting lines (paths, versions, the
    raw error). remedy: the exact command(s) that fix it on this platform (and the role that
    does the same), for every warn/fail; None when there is nothing to do.
    """

    check: str
    area: str
    status: str
    summary: str
    details: tuple[str, ...] = ()
    remedy: Remedy | None = None

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
            "remedy": self.remedy.shell if self.remedy else None,
            "playbook": self.remedy.as_dict() if self.remedy else None,
            "manual": (self.remedy.why or None) if self.remedy else None,
            "remedy_note": (self.remedy.note or None) if self.remedy else None,
        }


def worst_of(statuses: Iterable[str]) -> str:
    """The worst of these statuses (SEVERITY); ok when there are none."""
    present = set(statuses)
    return next((s for s in SEVERITY if s in present), OK)


def worst(findings: list[Finding]) -> str:
    """The overall status: crash > fail > warn > ok (skip alone counts as ok)."""
    return worst_of(f.status for f in findings if f.status != SKIP)
