"""The fleet's report (`doctor -i`, its --json: docs/doctor-fleet.schema.json): a row per
host, the worst first, with its platform and failing checks; the fleet's fixes, each command
once with the hosts it is for, and the one `--fix` line for every role some host needs; the
engine grid of `--engines`. Built from the hosts' doctor reports (jetson_env.fleet.inventory)."""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from jetson_env import collection, engine_files, installed
from jetson_env import doctor as doctor_mod
from jetson_env.exit_codes import EXIT_UNREACHABLE
from jetson_env.findings import SEVERITY, SKIP, UNHEALTHY

SCHEMA = 1
UNREACHABLE = "unreachable"
HOST_STATUSES = (UNREACHABLE, *(s for s in SEVERITY if s != SKIP))  # worst first


def host_status(report: doctor_mod.Report) -> str:
    """UNREACHABLE for a host Ansible did not reach; one it reached whose interpreter cannot
    run the probes is a failed host."""
    if not report.reached and report.findings[0].check == doctor_mod.CONNECTION:
        return UNREACHABLE
    return report.status


def platform_label(platform: dict[str, Any] | None) -> str:
    """'L4T R36.4.3 / JetPack 6.2', 'L4T R36.4.9 / R36.4.7's row' (a point release the
    matrix serves with its line's newest row), 'x86_64', or '' when the platform is not known."""
    if not platform:
        return ""
    if platform["is_jetson"]:
        if platform.get("assumed_from"):  # a point release without a row (the row rule)
            return f"L4T R{platform['l4t']} / R{platform['assumed_from']}'s row"
        return f"L4T R{platform['l4t'] or '?'} / JetPack {platform['jetpack'] or '?'}"
    return str(platform["machine"])


@dataclass(frozen=True)
class FleetReport:
    inventory: str
    limit: str | None
    reports: dict[str, doctor_mod.Report]  # by inventory host name
    # Hosts the controller's ansible-core cannot provision or fix -> why, with the way out.
    unmanaged: dict[str, str] = field(default_factory=dict)
    # Why no one ansible-core manages every host's modules' Python, with the controller
    # venvs that do (ansible_core.Support.split); "" when one does.
    split: str = ""

    @property
    def ordered(self) -> list[tuple[str, doctor_mod.Report]]:
        """Worst host first, then by name."""
        return sorted(
            self.reports.items(),
            key=lambda item: (HOST_STATUSES.index(host_status(item[1])), item[0]),
        )

    @property
    def exit_code(self) -> int:
        return max(report.exit_code for report in self.reports.values())

    def as_dict(self) -> dict[str, Any]:
        counts = Counter(host_status(report) for report in self.reports.values())
        hosts = []
        for name, report in self.ordered:
            data = report.as_dict()
            hosts.append({
                "host": name,
                "status": host_status(report),
                "platform_label": platform_label(report.platform),
                "failing": list(dict.fromkeys(
                    f["check"] for f in data["findings"] if f["status"] in UNHEALTHY)),
                "unmanaged": self.unmanaged.get(name) or None,
                "report": data,
            })  # fmt: skip
        return {
            "schema": SCHEMA,
            "kind": "fleet",
            "inventory": self.inventory,
            "limit": self.limit,
            "status": hosts[0]["status"],
            "exit_code": self.exit_code,
            "counts": {status: counts.get(status, 0) for status in HOST_STATUSES},
            "ansible_core_split": self.split or None,
            "hosts": hosts,
            "engines": engine_grid(hosts),
            **fleet_fixes(self.inventory, self.limit, hosts),
        }


def fleet_fixes(inventory: str, limit: str | None, hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """The fleet's fixes, each once: `fix`, the one `doctor -i INVENTORY --fix ROLES` line
    that applies every role some reached host needs (the inventory as the user gave it), or
    None where no role applies; `fixes`, every distinct command with the hosts it is for
    (`where`: "host", run on each of them; "here": run on this machine, for hosts that
    were not reached), in the order of the hosts (worst first) and of their fixes."""
    groups: dict[str, dict[str, Any]] = {}
    roles: dict[str, list[str]] = {}  # role -> the hosts --fix applies it on
    for host in hosts:
        report = host["report"]
        reached = report["exit_code"] != EXIT_UNREACHABLE
        by_command = {f["remedy"]: (f.get("playbook") or {}).get("role")
                      for f in report["findings"] if f["remedy"]}  # fmt: skip
        for fix in report["fixes"]:
            role = by_command.get(fix["command"]) if reached else None
            group = groups.setdefault(fix["command"], {
                "command": fix["command"], "words": bool(fix.get("words")),
                "note": fix.get("note"), "checks": [],
                "hosts": [], "role": role, "where": "host" if reached else "here",
            })  # fmt: skip
            group["checks"] = list(dict.fromkeys([*group["checks"], *fix["checks"]]))
            group["hosts"].append(host["host"])
            if role and not host["unmanaged"]:
                on = roles.setdefault(role, [])
                on += [] if host["host"] in on else [host["host"]]
    order = collection.provision_roles()  # the playbook's order, as --fix applies them
    roles = dict(sorted(roles.items(), key=lambda item: order.index(item[0])
                        if item[0] in order else len(order)))  # fmt: skip
    fix = None
    if roles:
        words = ["jetson-env", "doctor", "-i", inventory, *(["--limit", limit] if limit else []),
                 "--fix", ",".join(roles)]  # fmt: skip
        fix = {"command": installed.command(shlex.join(words)),
               "roles": [{"role": role, "hosts": on} for role, on in roles.items()]}  # fmt: skip
    return {
        "fix": fix,
        "fixes": [{"number": number, **group} for number, group in enumerate(groups.values(), 1)],
    }


def engine_grid(hosts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`doctor -i --engines`: engine file x host (the hosts in the fleet's order, worst
    first), the engine worst anywhere first; a cell is that host's verdict and why, null
    where the host has no such file. None without --engines."""
    if all(host["report"].get("engines") is None for host in hosts):
        return None
    not_read = {"verdict": engine_files.UNKNOWN, "reason": "unknown: this host's engine "
                "files were not read (see its report)"}  # fmt: skip
    by_path: dict[str, list[dict[str, str] | None]] = {}
    for column, host in enumerate(hosts):
        for row in host["report"].get("engines") or []:
            cells = by_path.setdefault(row["path"], [None] * len(hosts))
            cells[column] = {"verdict": row["verdict"], "reason": row["reason"]}
    rows = []
    for path, cells in by_path.items():
        cells = [not_read if host["report"].get("engines") is None else cell
                 for host, cell in zip(hosts, cells, strict=True)]  # fmt: skip
        verdict = engine_files.worst([cell["verdict"] for cell in cells if cell])
        rows.append({"path": path, "verdict": verdict, "cells": cells})
    rows.sort(key=lambda row: (engine_files.VERDICTS.index(row["verdict"]), row["path"]))
    return {"hosts": [host["host"] for host in hosts], "rows": rows}
