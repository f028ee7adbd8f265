"""`jetson-env doctor --fix`: the doctor's findings -> the roles (tags) of playbooks/jetson.yml
that fix them -> ansible-playbook, first with --check --diff (the plan), then for real.

The doctor changes nothing itself: every change is the playbook's, so a fixed host is a
host the playbook would have made. Findings without a role (a download behind NVIDIA's
login, hardware, a user's own files) are listed and left alone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jetson_env.doctor import SCHEMA, Report
from jetson_env.findings import Finding, worst_of

PROVISION_INSTALL = "pip install '.[provision]' (README, \"Provisioning\")"
# The checkout's playbook: where the command runs (the README runs it from the checkout),
# else beside the package (an editable install).
PLAYBOOK_PLACES = (Path("playbooks") / "jetson.yml",
                   Path(__file__).resolve().parent.parent / "playbooks" / "jetson.yml")  # fmt: skip
RECAP = re.compile(r"^(?P<host>\S+)\s*:\s*ok=\d+\s+changed=(?P<changed>\d+)", re.MULTILINE)


class FixError(Exception):
    """--fix cannot start (no playbook, no ansible-playbook, an unknown role): nothing changed."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def find_playbook() -> Path:
    for place in PLAYBOOK_PLACES:
        if place.is_file():
            return place.resolve()
    raise FixError(
        "--fix runs playbooks/jetson.yml, which is not here",
        hint="run it from the jetson-env checkout (where `ansible-playbook playbooks/jetson.yml` "
        "runs)",
    )


def find_ansible_playbook() -> str:
    """ansible-playbook of this interpreter's environment (the provision extra), else PATH's."""
    beside = Path(sys.executable).parent / "ansible-playbook"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("ansible-playbook")
    if found is None:
        raise FixError(
            "--fix needs Ansible (ansible-playbook), which is not installed",
            hint=f"install it: {PROVISION_INSTALL}; nothing was changed",
        )
    return found


def playbook_roles(playbook: Path) -> list[str]:
    """The tags --fix may run, in the playbook's order (every role's own tag)."""
    plays = yaml.safe_load(playbook.read_text())
    return [
        entry["role"]
        for play in plays
        for entry in play.get("roles", [])
        if entry["role"] in entry.get("tags", [])
    ]


@dataclass(frozen=True)
class Setup:
    """What every --fix needs, checked before the doctor runs: bad input changes nothing."""

    playbook: Path
    known_roles: list[str]
    only: list[str] | None  # the roles given to --fix, if any
    ansible_playbook: str
    variables: dict[str, Any]  # --playbook-vars


def setup(fix: list[str], playbook_vars: str | None) -> Setup:
    playbook = find_playbook()
    known = playbook_roles(playbook)
    only = [role for part in fix for role in part.split(",") if role] or None
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise FixError(
            f"no role {', '.join(unknown)} in {playbook.name}",
            hint="--fix takes the playbook's roles (tags): " + ", ".join(known),
        )
    ansible_playbook = find_ansible_playbook()
    try:
        variables = json.loads(playbook_vars) if playbook_vars else {}
    except json.JSONDecodeError as exc:
        raise FixError(f"--playbook-vars is not JSON: {exc}") from None
    if not isinstance(variables, dict):
        raise FixError("--playbook-vars must be a JSON object")
    return Setup(playbook, known, only, ansible_playbook, variables)


@dataclass
class Plan:
    roles: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    fixed_by: dict[str, list[str]] = field(default_factory=dict)  # role -> checks
    manual: list[Finding] = field(default_factory=list)  # no role fixes these


def plan(report: Report, known_roles: list[str], only: list[str] | None = None) -> Plan:
    """The roles that fix the report's findings, in the playbook's order, and what is left."""
    result = Plan()
    for finding in report.findings:
        remedy = finding.remedy
        if remedy is None:
            continue
        if remedy.role is None or (only is not None and remedy.role not in only):
            result.manual.append(finding)
            continue
        result.fixed_by.setdefault(remedy.role, [])
        if finding.check not in result.fixed_by[remedy.role]:
            result.fixed_by[remedy.role].append(finding.check)
        for name, value in remedy.variables:
            if isinstance(value, list):
                merged = result.variables.setdefault(name, [])
                merged.extend(v for v in value if v not in merged)
            else:
                result.variables[name] = value
    result.roles = [role for role in known_roles if role in result.fixed_by]
    return result


@dataclass(frozen=True)
class Connection:
    """How ansible-playbook reaches the target: this machine, or USER@HOST[:PORT] over ssh,
    its host key checked against the known_hosts the doctor's SSH used ($HOME's, where
    ssh alone would read the passwd entry's home)."""

    host: str | None = None
    identity: str | None = None

    def arguments(self) -> list[str]:
        if self.host is None:
            return ["-i", "localhost,", "-l", "localhost", "-c", "local"]
        user, _, address = self.host.rpartition("@")
        name, _, port = address.partition(":")
        known_hosts = shlex.quote(str(Path.home() / ".ssh" / "known_hosts"))
        args = ["-i", f"{name},", "-l", name, "-c", "ssh",
                "--ssh-common-args", f"-o UserKnownHostsFile={known_hosts}"]  # fmt: skip
        if user:
            args += ["-u", user]
        if port:
            args += ["-e", json.dumps({"ansible_port": int(port)})]
        if self.identity:
            args += ["--private-key", self.identity]
        return args


@dataclass(frozen=True)
class InventoryHost:
    """One host of the user's inventory (`doctor -i INVENTORY --fix`): its connection, become
    and interpreter are the inventory's, as for `ansible-playbook -i INVENTORY --limit HOST`."""

    inventory: str
    host: str

    def arguments(self) -> list[str]:
        return ["-i", self.inventory, "--limit", self.host]


def command(
    ansible_playbook: str,
    playbook: Path,
    connection: Connection | InventoryHost,
    the_plan: Plan,
    variables: dict[str, Any],
    *,
    check: bool,
    ask_become_pass: bool,
) -> list[str]:
    cmd = [ansible_playbook, str(playbook), *connection.arguments(),
           "--tags", ",".join(the_plan.roles), "-e", json.dumps(variables)]  # fmt: skip
    if ask_become_pass:
        cmd.append("--ask-become-pass")
    if check:
        cmd += ["--check", "--diff"]
    return cmd


def run_playbook(cmd: list[str], playbook: Path) -> tuple[int, int | None]:
    """Run it with the checkout's ansible.cfg, its output on stderr (diagnostics); the exit
    code and the recap's changed count (None when there is no recap)."""
    checkout = playbook.parent.parent
    env = {**os.environ, "ANSIBLE_CONFIG": str(checkout / "ansible.cfg")}
    process = subprocess.Popen(
        cmd, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=sys.stderr, text=True
    )
    output = []
    assert process.stdout is not None
    for line in process.stdout:
        sys.stderr.write(line)
        output.append(line)
    code = process.wait()
    recap = RECAP.findall("".join(output))
    return code, sum(int(changed) for _host, changed in recap) if recap else None


def before_after(before: Report, after: Report) -> list[tuple[str, str, str]]:
    """(check, worst status before, worst status after) for every check whose status moved."""

    def worst_by_check(report: Report) -> dict[str, str]:
        statuses: dict[str, list[str]] = {}
        for finding in report.findings:
            statuses.setdefault(finding.check, []).append(finding.status)
        return {check: worst_of(found) for check, found in statuses.items()}

    old, new = worst_by_check(before), worst_by_check(after)
    return [
        (check, old.get(check, "-"), new.get(check, "-"))
        for check in dict.fromkeys([*old, *new])
        if old.get(check) != new.get(check)
    ]


@dataclass
class Outcome:
    """What one --fix did, for `--fix --json` (docs/json.md): set as it goes."""

    host: str
    before: Report | None = None
    plan: Plan | None = None
    applied: bool = False  # the playbook ran for real
    changed: int | None = None  # the recap's changed count
    after: Report | None = None

    def as_dict(self, exit_code: int) -> dict[str, Any]:
        plan = self.plan
        return {
            "schema": SCHEMA,
            "kind": "fix",
            "host": self.host,
            "exit_code": exit_code,
            "plan": None if plan is None else {
                "roles": plan.roles,
                "fixes": plan.fixed_by,
                "vars": plan.variables,
                "manual": [{"check": f.check, "summary": f.summary} for f in plan.manual],
            },
            "applied": self.applied,
            "changed": self.changed,
            "moved": [
                {"check": check, "before": old, "after": new}
                for check, old, new in before_after(self.before, self.after)
            ] if self.before and self.after else [],
            "before": self.before.as_dict() if self.before else None,
            "after": self.after.as_dict() if self.after else None,
        }  # fmt: skip
