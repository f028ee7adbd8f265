"""`jetson-env doctor --fix`: the doctor's findings -> the roles (tags) of the collection's
provision playbook that fix them -> ansible-playbook, first with --check --diff (the plan),
then for real.

The doctor changes nothing itself: every change is the playbook's, so a fixed host is a
host the playbook would have made. Findings without a role (a download behind NVIDIA's
login, hardware, a user's own files) are listed and left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jetson_env import collection
from jetson_env.doctor import SCHEMA, Report
from jetson_env.findings import Finding, worst_of

RESULTS_CALLBACK = f"{collection.FQCN}.results"


class FixError(Exception):
    """--fix cannot start (no ansible-playbook, an unknown role): nothing changed."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Setup:
    """What every --fix needs, checked before the doctor runs: bad input changes nothing."""

    known_roles: list[str]
    only: list[str] | None  # the roles given to --fix, if any
    ansible_playbook: str
    variables: dict[str, Any]  # --playbook-vars


def setup(fix: list[str], playbook_vars: str | None) -> Setup:
    known = collection.provision_roles()
    only = [role for part in fix for role in part.split(",") if role] or None
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise FixError(
            f"no role {', '.join(unknown)} in {collection.PROVISION}",
            hint="--fix takes the playbook's roles (tags): " + ", ".join(known),
        )
    try:
        ansible_playbook = collection.ansible_command()
    except collection.AnsibleMissing as exc:
        hint = f"{exc.hint}; nothing was changed"
        raise FixError(f"--fix needs Ansible: {exc}", hint=hint) from None

    try:
        variables = json.loads(playbook_vars) if playbook_vars else {}
    except json.JSONDecodeError as exc:
        raise FixError(f"--playbook-vars is not JSON: {exc}") from None
    if not isinstance(variables, dict):
        raise FixError("--playbook-vars must be a JSON object")
    return Setup(known, only, ansible_playbook, variables)


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
        from jetson_env.remote import parse_address  # --host's own rules (IPv6 in brackets)

        address = parse_address(self.host)
        known_hosts = shlex.quote(str(Path.home() / ".ssh" / "known_hosts"))
        args = ["-i", f"{address.host},", "-l", address.host, "-c", "ssh",
                "--ssh-common-args", f"-o UserKnownHostsFile={known_hosts}"]  # fmt: skip
        if address.user:
            args += ["-u", address.user]
        if self.identity:
            args += ["--private-key", self.identity]
        return args

    def variables(self) -> dict[str, Any]:
        """Connection variables that go with the others (the vars file)."""
        if self.host is None:
            return {}
        from jetson_env.remote import DEFAULT_PORT, parse_address

        port = parse_address(self.host).port
        return {} if port == DEFAULT_PORT else {"ansible_port": port}


@dataclass(frozen=True)
class InventoryHost:
    """One host of the user's inventory (`doctor -i INVENTORY --fix`): its connection, become
    and interpreter are the inventory's, as for `ansible-playbook -i INVENTORY --limit HOST`."""

    inventory: str
    host: str

    def arguments(self) -> list[str]:
        return ["-i", self.inventory, "--limit", self.host]

    def variables(self) -> dict[str, Any]:
        return {}


def command(
    ansible_playbook: str,
    connection: Connection | InventoryHost,
    the_plan: Plan,
    variables_file: Path,
    *,
    check: bool,
    ask_become_pass: bool,
) -> list[str]:
    """The ansible-playbook command; its variables are in `variables_file` (variables_file()),
    never on the command line: they may hold a become password."""
    cmd = [ansible_playbook, collection.PROVISION, *connection.arguments(),
           "--tags", ",".join(the_plan.roles), "-e", f"@{variables_file}"]  # fmt: skip
    if ask_become_pass:
        cmd.append("--ask-become-pass")
    if check:
        cmd += ["--check", "--diff"]
    return cmd


@contextlib.contextmanager
def variables_file(variables: dict[str, Any]) -> Iterator[Path]:
    """The playbook's variables as a JSON file only this user can read (mode 0600, as
    mkstemp makes it), removed afterwards."""
    fd, name = tempfile.mkstemp(prefix="jetson-env-fix-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(variables, handle)
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def run_playbook(cmd: list[str]) -> tuple[int, int | None]:
    """Run it as the user would (their ansible.cfg, stdout callback and current directory),
    its output on stderr (diagnostics); the exit code and the hosts' changed count, read
    from the collection's results callback (None when the run ended before its stats)."""
    with tempfile.TemporaryDirectory(prefix="jetson-env-fix-") as tmp:
        results_file = Path(tmp) / "results.json"
        env = collection.environment(cmd[0])
        env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join([*callbacks_enabled(env), RESULTS_CALLBACK])
        env["JETSON_ENV_RESULTS_FILE"] = str(results_file)
        process = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=sys.stderr,
                                   text=True)  # fmt: skip
        assert process.stdout is not None
        for line in process.stdout:
            sys.stderr.write(line)
        code = process.wait()
        try:
            results = json.loads(results_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return code, None
    return code, sum(stats["changed"] for stats in results["hosts"].values())


def callbacks_enabled(env: dict[str, str]) -> list[str]:
    """The callbacks the user's own settings enable (Ansible's config lookup: the
    environment, ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg), so that --fix adds its
    results callback to them instead of replacing them."""
    if env.get("ANSIBLE_CALLBACKS_ENABLED"):
        return [name for name in env["ANSIBLE_CALLBACKS_ENABLED"].split(",") if name.strip()]
    try:
        from ansible.config.manager import ConfigManager
    except ImportError:  # Ansible of another environment: only its environment is known
        return []
    return list(ConfigManager().get_config_value("CALLBACKS_ENABLED") or [])


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
