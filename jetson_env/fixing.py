"""`jetson-env doctor --fix`: the doctor's findings -> the roles (tags) of the collection's
provision playbook that fix them -> ansible-playbook, role by role: first each role's plan
(--check --diff), then, once asked, each role whose plan passed, for real.

The doctor changes nothing itself: every change is the playbook's, so a fixed host is a
host the playbook would have made. Findings without a role (a download behind NVIDIA's
login, hardware, a user's own files) are listed and left alone; a role whose plan or run
fails is reported with Ansible's error and the other roles still apply. The summary says
per finding: fixed, failed (why), left out by the user's role filter, or no automatic fix.

Interpreters: the roles install into `jetson_facts_python`, the Python the doctor probed
(jetson_env.target_python's rule: `python3` on PATH or `--python`; on a fleet the host's
jetson_facts_python, else its module interpreter). On this machine Ansible runs its
modules with that Python too; elsewhere it keeps its own (discovered, or the
inventory's). apt's system tasks always run with the system Python.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jetson_env import collection, target_python
from jetson_env import roles as role_defaults
from jetson_env.doctor import SCHEMA, Report
from jetson_env.exit_codes import EXIT_FAILED, EXIT_UNREACHABLE, EXIT_USAGE
from jetson_env.findings import CRASH, FAIL, SEVERITY, WARN, Finding
from jetson_env.playbook_runs import (
    Connection,
    InventoryHost,
    PlaybookRun,
    command,
    run_playbook,
    variables_file,
)

if TYPE_CHECKING:
    from jetson_env.bundle.preflight import Provisioning
    from jetson_env.terminal import Terminal

PROBLEMS = (CRASH, FAIL, WARN)

# The verdicts of the summary, per finding (docs/doctor.md, "--fix").
FIXED, FAILED, LEFT_OUT, NO_AUTOMATIC_FIX, NOT_APPLIED = (
    "fixed", "failed", "left out", "no automatic fix", "not applied")  # fmt: skip


class FixError(Exception):
    """--fix cannot start (no ansible-playbook, an unknown role, bad variables): nothing
    changed."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class FixRequest:
    """What every --fix needs, checked before the doctor runs: bad input changes nothing."""

    known_roles: list[str]
    only: list[str] | None  # the roles given to --fix, if any
    ansible_playbook: str
    variables: dict[str, Any]  # --playbook-vars: the user's own, which Ansible may template
    bundle: Provisioning | None = None  # --bundle: only the roles it serves run


def fix_request(fix: list[str], playbook_vars: str | None,
                bundle: Provisioning | None = None) -> FixRequest:  # fmt: skip
    known = collection.provision_roles()
    only = [role for part in fix for role in part.split(",") if role] or None
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise FixError(
            f"no role {', '.join(unknown)} in {collection.PROVISION}",
            hint="--fix takes the playbook's roles (tags): " + ", ".join(known),
        )
    try:
        variables = collection.playbook_vars(playbook_vars)
    except collection.BadVariables as exc:
        raise FixError(str(exc), hint="nothing was changed") from None
    try:
        ansible_playbook = collection.ansible_command()
    except collection.AnsibleMissing as exc:
        hint = f"{exc.hint}; nothing was changed"
        raise FixError(f"--fix needs Ansible: {exc}", hint=hint) from None
    return FixRequest(known, only, ansible_playbook, variables, bundle)


@dataclass
class RolePlan:
    """The roles that fix a report's findings, their variables, and the findings they leave."""

    roles: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    fixed_by: dict[str, list[str]] = field(default_factory=dict)  # role -> checks
    manual: list[Finding] = field(default_factory=list)  # no role fixes these
    left_out: list[Finding] = field(default_factory=list)  # a role fixes it, not one to run
    only: list[str] | None = None  # the roles given to --fix, if any
    bundle: Provisioning | None = None  # --bundle: the roles it serves
    # --bundle: its roles it cannot serve on this host for want of their files -> why, with
    # where the files go (the playbook's preflight would skip them).
    lacking: dict[str, str] = field(default_factory=dict)

    def why_left_out(self, role: str) -> str:
        if self.bundle is not None and (self.only is None or role in self.only):
            if role in self.lacking:
                return (f"the bundle {self.bundle.directory} lacks role {role}'s files for "
                        f"this host: {self.lacking[role]}")  # fmt: skip
            return (f"the bundle {self.bundle.directory} does not serve role {role} (it "
                    f"serves {','.join(self.bundle.roles)})")  # fmt: skip
        return f"--fix {','.join(self.only or [])} leaves out role {role}"


def plan(report: Report, known_roles: list[str], only: list[str] | None = None,
         bundle: Provisioning | None = None) -> RolePlan:  # fmt: skip
    """The roles that fix the report's findings, in the playbook's order, and what is left
    (a role the user's --fix ROLES or the --bundle leaves out, or one whose files the bundle
    lacks for this host)."""
    result = RolePlan(only=only, bundle=bundle)
    asked: dict[str, list[set[str]]] = {}  # role -> the variables each of its remedies names
    if bundle is not None:
        from jetson_env.bundle.doctor_advice import roles_left_out

        wanted = {f.remedy.role for f in report.findings if f.remedy and f.remedy.role}
        served = [role for role in bundle.roles if role in wanted]
        result.lacking = roles_left_out(bundle.directory, report.as_dict(), served)
    for finding in report.findings:
        remedy = finding.remedy
        if remedy is None:
            continue
        if remedy.role is None:
            result.manual.append(finding)
            continue
        unserved = bundle is not None and (
            remedy.role not in bundle.roles or remedy.role in result.lacking
        )
        if (only is not None and remedy.role not in only) or unserved:
            result.left_out.append(finding)
            continue
        result.fixed_by.setdefault(remedy.role, [])
        asked.setdefault(remedy.role, []).append({name for name, _ in remedy.variables})
        if finding.check not in result.fixed_by[remedy.role]:
            result.fixed_by[remedy.role].append(finding.check)
        for name, value in remedy.variables:
            if isinstance(value, list):
                merged = result.variables.setdefault(name, [])
                merged.extend(v for v in value if v not in merged)
            else:
                result.variables[name] = value
    # A remedy that names none of its role's package sets (ROLE_sets) asks for the whole role:
    # another remedy's narrower sets (tensorrt_sets: [onnx]) must not drop the rest.
    for role, names in asked.items():
        sets = f"{role}_sets"
        if sets in result.variables and any(sets not in named for named in names):
            merged = result.variables[sets]
            merged.extend(v for v in role_defaults.default(role, "sets") if v not in merged)
    result.roles = [role for role in known_roles if role in result.fixed_by]
    return result


def probed_python(report: Report, default: str) -> str:
    """The interpreter the doctor's probes ran in (sys.executable, a venv's own path): the
    one the roles must install into (`jetson_facts_python`)."""
    platform = report.results.get("platform")
    data = platform.data if platform is not None and platform.data else {}
    return (data.get("python") or {}).get("executable") or default


def host_variables(report: Report, python: str, the_plan: RolePlan, request: FixRequest,
                   connection_is_root: bool | None = None,
                   local: bool = False) -> dict[str, Any]:  # fmt: skip
    """The playbook's variables for one host: the Python to provision (the probed one), no
    sudo for a root login, the roles' variables, then the user's (--playbook-vars), which win,
    and --bundle's. This machine (`local`): Ansible runs its modules with that Python too, as
    `jetson-env provision` does (jetson_env.target_python); elsewhere Ansible's own
    (discovered, or the inventory's) runs the modules and apt's tasks.

    What the target said (its Python's path, the remedies' values) and the bundle's folder
    are data (collection.Data), which Ansible never templates; the Python's path is checked
    as a path first (NoPython)."""
    probed = probed_python(report, python)
    variables: dict[str, Any] = (
        target_python.local_variables(probed) if local
        else {"jetson_facts_python": target_python.checked(probed)}
    )  # fmt: skip
    if connection_is_root:
        variables["ansible_become"] = False
    found = collection.data(the_plan.variables)
    if "jetson_facts_python" in found:
        target_python.checked(found["jetson_facts_python"])
    bundle = collection.data(request.bundle.variables) if request.bundle else {}
    return {**collection.data(variables), **found, **request.variables, **bundle}


@dataclass
class RoleRun:
    """One role on one host: its plan (--check --diff), then its run."""

    role: str
    plan_error: str | None = None  # the plan failed: why
    applied: bool = False
    changed: int | None = None
    error: str | None = None  # the run failed: why

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "plan_error": self.plan_error, "applied": self.applied,
                "changed": self.changed, "error": self.error}  # fmt: skip


@dataclass
class RoleRuns:
    """What --fix did on one host: "nothing", "plan-failed" (every role's plan failed),
    "no-terminal" (no terminal to ask, or its input ended unanswered), "declined" or "applied"
    (at least one role ran for real)."""

    status: str
    runs: list[RoleRun] = field(default_factory=list)

    @property
    def changed(self) -> int | None:
        counts = [run.changed for run in self.runs if run.changed is not None]
        return sum(counts) if counts else None


def fix_host(
    term: Terminal,
    say: Callable[[str], None],
    request: FixRequest,
    connection: Connection | InventoryHost,
    the_plan: RolePlan,
    variables: dict[str, Any],
    host: str,
    *,
    yes: bool,
    ask_become_pass: bool = False,
) -> RoleRuns:
    """--fix's flow on one host: each role's plan (--check --diff, one role at a time), one
    question for the roles whose plan passed (unless --yes), then those roles for real, one
    at a time: a role that fails is reported and the next one still runs."""
    for finding in the_plan.manual:
        say(f"no automatic fix for {finding.check} on {host}: {finding.summary}"
            f" ({finding.remedy.why})")  # fmt: skip
    for finding in the_plan.left_out:
        say(f"left out for {finding.check} on {host}: role {finding.remedy.role} fixes it; "
            f"{the_plan.why_left_out(finding.remedy.role)}")  # fmt: skip
    if not the_plan.roles:
        say(f"--fix: nothing to do on {host} (no finding that a role of the playbook fixes)")
        return RoleRuns("nothing")
    runs = []

    def playbook(role: str, *, check: bool) -> PlaybookRun:
        with variables_file({**connection.variables(), **variables}) as path:
            cmd = command(request.ansible_playbook, connection, [role], path,
                          check=check, ask_become_pass=ask_become_pass)  # fmt: skip
            term.note("running: " + shlex.join(cmd))
            return run_playbook(cmd)

    for role in the_plan.roles:
        say(f"--fix: role {role} on {host} fixes {', '.join(the_plan.fixed_by[role])}")
        run = RoleRun(role)
        result = playbook(role, check=True)
        if result.code != 0:
            run.plan_error = result.error()
            term.error(f"the plan of role {role} for {host} (ansible-playbook --check) failed: "
                       f"{run.plan_error}",
                       hint=f"role {role} will not run; the others still can")  # fmt: skip
        runs.append(run)
    ready = [run for run in runs if run.plan_error is None]
    if not ready:
        term.error(f"no role's plan passed for {host}", hint=f"nothing was changed on {host}")
        return RoleRuns("plan-failed", runs)
    names = ", ".join(run.role for run in ready)
    if not yes:
        if not sys.stdin.isatty():
            term.error("--fix asks before changing anything and there is no terminal to ask",
                       hint="add --yes to apply the plan above; nothing was changed")  # fmt: skip
            return RoleRuns("no-terminal", runs)
        try:
            answer = input(f"Apply roles {names} on {host}? [y/N] ")
        except EOFError:  # the terminal's input ended before an answer
            term.error("no answer: nothing was changed",
                       hint=f"answer y to apply roles {names} on {host}, or add --yes")  # fmt: skip
            return RoleRuns("no-terminal", runs)
        if answer.strip().lower() not in ("y", "yes"):
            say(f"--fix: nothing was changed on {host}")
            return RoleRuns("declined", runs)
    for run in ready:
        result = playbook(run.role, check=False)
        run.applied, run.changed = True, result.changed
        if result.code != 0:
            run.error = result.error()
            term.error(f"role {run.role} failed on {host}: {run.error}",
                       hint="its output is above; the other roles still run")  # fmt: skip
    done = RoleRuns("applied", runs)
    say(f"--fix: {host} changed={done.changed if done.changed is not None else 'unknown'}")
    return done


def worst_by_check(report: Report) -> dict[str, Finding]:
    worst: dict[str, Finding] = {}
    for finding in report.findings:
        current = worst.get(finding.check)
        if current is None or SEVERITY.index(finding.status) < SEVERITY.index(current.status):
            worst[finding.check] = finding
    return worst


def before_after(before: Report, after: Report) -> list[tuple[str, str, str]]:
    """(check, worst status before, worst status after) for every check whose status moved."""
    old = {check: f.status for check, f in worst_by_check(before).items()}
    new = {check: f.status for check, f in worst_by_check(after).items()}
    return [
        (check, old.get(check, "-"), new.get(check, "-"))
        for check in dict.fromkeys([*old, *new])
        if old.get(check) != new.get(check)
    ]


def verdicts(
    before: Report, the_plan: RolePlan, fixed: RoleRuns | None, after: Report | None
) -> list[dict[str, Any]]:
    """Per finding that has a remedy: fixed, failed (why), left out (the user's role filter),
    no automatic fix, or not applied (declined, no terminal)."""
    runs = {run.role: run for run in (fixed.runs if fixed else [])}
    # After the fix: the problems each role still has to answer for, per check (a check's
    # other findings, e.g. one no role fixes, do not make this finding's role fail).
    remaining: dict[tuple[str, str | None], Finding] = {}
    for found in after.findings if after is not None else []:
        if found.status in PROBLEMS:
            role = found.remedy.role if found.remedy else None
            remaining.setdefault((found.check, role), found)
    left_out = {id(f) for f in the_plan.left_out}
    rows = []
    for finding in before.findings:
        remedy = finding.remedy
        if remedy is None:
            continue
        row = {"check": finding.check, "summary": finding.summary, "role": remedy.role,
               "why": None}  # fmt: skip
        run = runs.get(remedy.role or "")
        still = remaining.get((finding.check, remedy.role))
        if remedy.role is None:
            row["verdict"], row["why"] = NO_AUTOMATIC_FIX, remedy.why
        elif id(finding) in left_out:
            row["verdict"] = LEFT_OUT
            row["why"] = the_plan.why_left_out(remedy.role)
        elif run is not None and run.plan_error:
            row["verdict"], row["why"] = FAILED, f"the plan of role {remedy.role}: {run.plan_error}"
        elif run is None or not run.applied:
            row["verdict"] = NOT_APPLIED
        elif run.error:
            row["verdict"], row["why"] = FAILED, f"role {remedy.role}: {run.error}"
        elif still is None:
            row["verdict"] = FIXED
        else:
            row["verdict"] = FAILED
            row["why"] = f"still {still.status} after role {remedy.role}: {still.summary}"
        rows.append(row)
    return rows


def say_verdicts(say: Callable[[str], None], host: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    say(f"--fix summary for {host}:")
    for row in rows:
        role = f" ({row['role']})" if row["role"] else ""
        why = f": {row['why']}" if row["why"] else ""
        say(f"  {row['check']}: {row['verdict']}{role}{why}")


@dataclass
class FixReport:
    """What one --fix did, for `--fix --json` (docs/json.md): set as it goes."""

    host: str
    before: Report | None = None
    plan: RolePlan | None = None
    fixed: RoleRuns | None = None
    after: Report | None = None

    @property
    def applied(self) -> bool:
        return bool(self.fixed and any(run.applied for run in self.fixed.runs))

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
                "manual": [{"check": f.check, "summary": f.summary, "why": f.remedy.why}
                           for f in plan.manual],
                "left_out": [{"check": f.check, "summary": f.summary, "role": f.remedy.role}
                             for f in plan.left_out],
            },
            "roles": [run.as_dict() for run in self.fixed.runs] if self.fixed else [],
            "applied": self.applied,
            "changed": self.fixed.changed if self.fixed else None,
            "findings": verdicts(self.before, plan, self.fixed, self.after)
            if self.before and plan else [],
            "moved": [
                {"check": check, "before": old, "after": new}
                for check, old, new in before_after(self.before, self.after)
            ] if self.before and self.after else [],
            "before": self.before.as_dict() if self.before else None,
            "after": self.after.as_dict() if self.after else None,
        }  # fmt: skip


def target_options(host: str | None, identity: str | None, python: str | None) -> list[str]:
    """The doctor's target as options typed again (--host, --identity, --python unless the
    default): what a printed `jetson-env doctor --fix ROLE` needs to fix the host and the
    Python that were checked, not this machine's python3."""
    options = ["--host", host] if host else []
    options += ["--identity", identity] if identity else []
    return options + (["--python", python] if python and python != target_python.DEFAULT else [])


def fix_one(
    term: Terminal,
    request: FixRequest,
    examine: Callable[[], Report | int],
    *,
    host: str | None,
    identity: str | None,
    python: str,
    yes: bool,
    as_json: bool,
    password: bool = False,
) -> int:
    """`doctor --fix` on this machine or --host: the doctor, the plan and the roles (fix_host),
    the doctor again (before -> after) and the summary per finding. Every refusal comes
    before the first change. With --json the progress goes to stderr and stdout gets one
    document (docs/json.md) at the end. `examine` runs the doctor (an exit code when the
    target cannot be opened)."""
    say = term.note if as_json else term.line
    outcome = FixReport(host=host or "localhost")

    def finish(exit_code: int) -> int:
        if outcome.before is not None and outcome.plan is not None:
            rows = verdicts(outcome.before, outcome.plan, outcome.fixed, outcome.after)
            say_verdicts(say, outcome.host, rows)
        if as_json:
            term.json(outcome.as_dict(exit_code))
        return exit_code

    before = examine()
    if isinstance(before, int):
        return before
    outcome.before = before
    if not as_json:
        term.findings(before.as_dict(), target_options(host, identity, python))
    if not before.reached:
        return finish(before.exit_code)
    the_plan = outcome.plan = plan(before, request.known_roles, request.only, request.bundle)
    platform = before.results.get("platform")
    as_root = bool(platform and platform.data and platform.data.get("uid") == 0)
    try:
        variables = host_variables(before, python, the_plan, request, connection_is_root=as_root,
                                   local=host is None)  # fmt: skip
    except target_python.NoPython as exc:
        term.error(f"--fix on {outcome.host}: {exc}; nothing was changed", hint=exc.hint)
        return finish(EXIT_UNREACHABLE)
    fixed = outcome.fixed = fix_host(
        term, say, request, Connection(host, identity, password), the_plan, variables,
        outcome.host, yes=yes, ask_become_pass=not as_root and sys.stdin.isatty(),
    )  # fmt: skip
    if fixed.status != "applied":
        exit_codes = {"plan-failed": EXIT_FAILED, "no-terminal": EXIT_USAGE}
        return finish(exit_codes.get(fixed.status, before.exit_code))
    after = examine()
    if isinstance(after, int):
        return finish(after)
    outcome.after = after
    if not as_json:
        term.findings(after.as_dict(), target_options(host, identity, python))
    for check, old, new in before_after(before, after):
        say(f"{check}: {old} -> {new}")
    return finish(after.exit_code)
