"""`jetson-env doctor --inventory`: the doctor on every host of an Ansible inventory.

Ansible reaches the hosts (the inventory's connection settings, become, forks, SSH
multiplexing and host key checking: what users already run their fleet with) and runs
the probe launcher that `doctor --host` and a local run use (jetson_env/probes/_runner.py,
under targets.launch_command) in each host's interpreter, through the jetson_env.jetson.probe
action (the collection's plugins/action): one command per host. On a host the light probes
share one process (one interpreter start per host, not seven), the framework ones another;
a probe that crashes or hangs leaves the probes after it to a fresh process, there. The
launcher's output comes back whole and is read here exactly as a local or SSH run is read
(RecordedTarget replays it), so the same checks judge it.

A host that is unreachable, refuses its host key or fails the task (a timeout, a broken
interpreter) is one row with Ansible's message; the others go on.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jetson_env import (
    check_catalogue,
    collection,
    fixing,
    host_keys,
    installed,
    lifeline,
    playbook_runs,
    target_python,
)
from jetson_env import doctor as doctor_mod
from jetson_env.checks import Check
from jetson_env.exit_codes import EXIT_USAGE
from jetson_env.findings import Remedy
from jetson_env.fleet.report import FleetReport
from jetson_env.matrix import Matrix
from jetson_env.probing import (
    launch_budget,
    launcher_script,
    plan,
    process_groups,
    startup_timeout,
)
from jetson_env.targets import (
    Completed,
    Deadline,
    ExitStatus,
    StreamCollector,
    framed,
    launch_command,
)

if TYPE_CHECKING:
    from jetson_env.terminal import Terminal

# Ansible's own work around the probes on a host: connecting, interpreter discovery.
TASK_SLACK_SECONDS = 60
# The jetson_env_probe action puts the host's interpreter (shell-quoted) in its place.
PYTHON_PLACEHOLDER = "__JETSON_ENV_PYTHON__"
# What the jetson_env_probe action says of the controller's Ansible and the host's modules.
ANSIBLE_KEYS = ("ansible_core", "module_python", "module_python_version")
# ansible-playbook's grace after SIGTERM (the doctor interrupted) before SIGKILL.
ANSIBLE_STOP_SECONDS = 5
INTERPRETER_REMEDY = (
    "set ansible_python_interpreter for the host in the inventory to a Python 3.6 or newer"
)


class FleetError(Exception):
    """Ansible could not run, or said nothing about any host; `hint` says what to do."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Recording:
    """The launcher's run on a host, as the jetson_env_probe action returned it."""

    stdout: str
    stderr: str


class RecordedTarget:
    """A host's launcher run, already done by Ansible, replayed line by line."""

    remote = True
    light_probes_together = True

    def __init__(self, host: str, python: str, recording: Recording,
                 ansible: dict[str, str] | None = None):  # fmt: skip
        self.description = host
        self.python = python
        self.recording = recording
        # The controller's ansible-core and the Python it runs modules with on the host.
        self.ansible = ansible or {}

    def unmanaged(self, matrix: Matrix, platform: dict[str, Any] | None) -> str:
        """Why the controller's ansible-core cannot provision or fix this host (its modules'
        Python is older than the ansible-core supports), with the way out; "" when it can.
        The modules' Python is the probed one unless the inventory runs modules elsewhere."""
        version = self.module_python_version(platform)
        core = self.ansible.get("ansible_core", "")
        if not core or not version:
            return ""
        return matrix.ansible_core.refusal(core, version, self.description)

    def module_python_version(self, platform: dict[str, Any] | None) -> str:
        """The version of the Python Ansible runs modules with on this host, as it said it
        ("" when not known): the probed one's unless the inventory runs modules elsewhere."""
        version = self.ansible.get("module_python_version", "")
        if not version and self.ansible.get("module_python", "") == self.python:
            version = ((platform or {}).get("python") or {}).get("version", "")
        return version if isinstance(version, str) else ""

    def run_python(self, source, deadline: Deadline, on_line, budget: float = 0) -> Completed:
        """The recording of `source`: fleet.run sent the launcher script that probe_all
        builds for this target (the same probes, timeouts and groups)."""
        status = ExitStatus(on_line)
        collectors = [StreamCollector(name, status.on_line) for name in ("stdout", "stderr")]
        for collector, text in zip(collectors, (self.recording.stdout, self.recording.stderr),
                                   strict=True):  # fmt: skip
            collector.feed(text.encode("utf-8", "surrogateescape"))
            collector.finish()
        overflow = next((c.name for c in collectors if c.overflow), None)
        return status.completed(collectors[0].text, collectors[1].text, overflow)


def _payload(script: str, budget: float, startup: float) -> bytes:
    """What the jetson_env_probe action reads: the command (one line of JSON, the host's
    interpreter in PYTHON_PLACEHOLDER's place), then what it sends on the command's stdin."""
    header = {"command": launch_command(PYTHON_PLACEHOLDER, budget, startup, lifeline=False),
              "placeholder": PYTHON_PLACEHOLDER}  # fmt: skip
    return json.dumps(header).encode("utf-8") + b"\n" + framed(script)


def run_playbook(
    inventory: str, limit: str | None, payload: bytes, budget: float, forks: int | None
) -> tuple[dict[str, dict[str, Any]], str]:
    """ansible-playbook with the probe playbook: per host, its outcome and result; and
    what Ansible said on stderr (warnings: an inventory it could not parse ...). When the
    doctor is interrupted, Ansible is stopped (its workers and connections with it)."""
    try:
        ansible_playbook = collection.ansible_command()
        collection.inventory_hosts(inventory)  # parsed whole, or no host is run
    except (collection.AnsibleMissing, collection.BadInventory) as exc:
        raise FleetError(str(exc), hint=exc.hint) from None
    env = {**collection.environment(ansible_playbook), **collection.STRICT_INVENTORY}
    env.update({
        "ANSIBLE_STDOUT_CALLBACK": f"{collection.FQCN}.fleet",
        "ANSIBLE_RETRY_FILES_ENABLED": "false",
    })  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="jetson-env-fleet-") as tmp:
        payload_file = Path(tmp) / "payload"
        payload_file.write_bytes(payload)
        variables = {
            "jetson_env_probe_payload": str(payload_file),
            "jetson_env_probe_timeout": int(budget + TASK_SLACK_SECONDS),
        }
        vars_file = Path(tmp) / "vars.json"
        vars_file.write_text(json.dumps(variables), encoding="utf-8")
        command = [ansible_playbook, "-i", inventory, collection.DOCTOR,
                   "-e", f"@{vars_file}"]  # fmt: skip
        if limit:
            command += ["--limit", limit]
        if forks:
            command += ["--forks", str(forks)]
        done = run_ansible(command, env)
    found = next(
        (line for line in reversed(done.stdout.splitlines()) if line.startswith('{"hosts"')), None
    )
    if found is None:
        said = done.stderr.strip().splitlines()[-5:] or done.stdout.strip().splitlines()[-5:]
        raise FleetError(
            f"ansible-playbook exited {done.returncode} without a result: " + " / ".join(said)
        )
    return json.loads(found)["hosts"], done.stderr


def run_ansible(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run an Ansible command in a process group of its own; interrupted (Ctrl-C, SIGTERM),
    the group gets SIGTERM (Ansible ends its workers and connections: the hosts' launchers
    see their stdin close), then SIGKILL."""
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True,
                               preexec_fn=lifeline.ends_with_us())  # fmt: skip
    try:
        stdout, stderr = process.communicate()
    except BaseException:
        stop_group(process)
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def stop_group(process: subprocess.Popen) -> None:
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except OSError:
            return
        try:
            process.wait(timeout=ANSIBLE_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            continue
        if signum == signal.SIGTERM:  # its own workers may still be ending
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        return


def unreachable_remedy(inventory: str, host: str, message: str) -> Remedy:
    """What to run to see why; for a host key ssh refused, the key the host offers (its
    fingerprint) and the command that records it once compared (host_keys): said in words,
    its commands in backticks, for they must not be run before the key is compared."""
    ping = installed.command(
        shlex.join(["ansible", host, "-i", inventory, "-m", "ansible.builtin.ping", "-vvv"])
    )
    if not host_keys.refused(message):
        return Remedy(ping, why=doctor_mod.UNANSWERED,
                      note="shows why Ansible cannot reach the host")  # fmt: skip
    return Remedy(_host_key_steps(inventory, host, message, ping), why=doctor_mod.UNANSWERED,
                  prose=True)  # fmt: skip


def _host_key_steps(inventory: str, host: str, message: str, ping: str) -> str:
    again = installed.command(
        shlex.join(["jetson-env", "doctor", "-i", inventory, "--limit", host])
    )
    endpoint = host_keys.inventory_endpoint(inventory, host)
    said = host_keys.remedy(endpoint, message, f"`{again}`")
    if said is not None:
        return said
    return (
        f"ssh refused {host}'s host key: `{ping}` shows the address and the key; compare the "
        "key with the host's own (on the host: `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`)"
        f" and record it in known_hosts only if they match; then `{again}`"
    )


def _not_run(inventory: str, host: str, outcome: str, result: dict[str, Any]) -> doctor_mod.Report:
    message = str(result.get("msg") or "no message").strip()
    if outcome == "unreachable":
        return doctor_mod.unreachable(host, message, unreachable_remedy(inventory, host, message))
    return doctor_mod.not_reached(host, "interpreter", f"the probes did not run on {host}: "
                                  f"{message}", INTERPRETER_REMEDY)  # fmt: skip


def run(
    inventory: str,
    limit: str | None,
    matrix: Matrix,
    checks: list[Check],
    timeout: float | None = None,
    forks: int | None = None,
    progress: Callable[[str], None] = lambda _text: None,
    arguments: dict[str, Any] | None = None,
) -> FleetReport:
    reports: dict[str, doctor_mod.Report] = {}
    unmanaged: dict[str, str] = {}
    pythons: list[str] = []  # the Pythons Ansible runs modules with, host by host
    names = check_catalogue.needed_probes(check.name for check in checks)
    hosts = recorded(inventory, limit, names, timeout, forks, progress, arguments)
    for host, target in hosts.items():
        if isinstance(target, doctor_mod.Report):
            reports[host] = target
            continue
        report = doctor_mod.run(target, matrix, checks, timeout, arguments=arguments)
        if not report.reached:  # the interpreter: what to set in the inventory
            report = _with_remedy(report, INTERPRETER_REMEDY)
        reports[host] = report
        if why := target.unmanaged(matrix, report.platform):
            unmanaged[host] = why
        pythons.append(target.module_python_version(report.platform))
    return FleetReport(inventory, limit, reports, unmanaged, matrix.ansible_core.split(pythons))


def recorded(
    inventory: str,
    limit: str | None,
    names: set[str],
    timeout: float | None = None,
    forks: int | None = None,
    progress: Callable[[str], None] = lambda _text: None,
    arguments: dict[str, Any] | None = None,
) -> dict[str, RecordedTarget | doctor_mod.Report]:
    """The probes `names` on every host through Ansible: per host, its launcher run to replay
    (probing.probe_all with the same names and arguments), or the report of a host whose
    probes did not run."""
    timeouts, light, framework = plan(names, timeout)
    groups = process_groups(light, framework, together=RecordedTarget.light_probes_together)
    script = launcher_script(groups, timeouts, arguments)
    budget = launch_budget(groups, timeouts)
    progress(f"running the probes through Ansible on {limit or 'every host'}")
    payload = _payload(script, budget, startup_timeout(timeouts))
    results, said = run_playbook(inventory, limit, payload, budget, forks)
    if not results:
        warnings = [line for line in said.splitlines() if line.startswith("[WARNING]")]
        raise FleetError(
            f"no host of {inventory} matches {limit or 'all'}"
            + (f" (Ansible said: {' '.join(warnings)[:1500]})" if warnings else "")
        )
    targets: dict[str, RecordedTarget | doctor_mod.Report] = {}
    for host, entry in sorted(results.items()):
        result = entry["result"]
        if entry["outcome"] != "ok" or not isinstance(result.get("stdout"), str):
            targets[host] = _not_run(inventory, host, entry["outcome"], result)
            continue
        recording = Recording(result["stdout"], str(result.get("stderr", "")))
        ansible = {key: str(result.get(key) or "") for key in ANSIBLE_KEYS}
        targets[host] = RecordedTarget(host, str(result.get("python", "python")), recording,
                                       ansible)  # fmt: skip
    return targets


def fix(
    term: Terminal,
    request: fixing.FixRequest,
    before: FleetReport,
    matrix: Matrix,
    checks: list[Check],
    *,
    yes: bool,
    timeout: float | None = None,
    forks: int | None = None,
) -> FleetReport | int:
    """`doctor -i INVENTORY --fix`: for each reached host that a role can fix, --fix's flow
    for one host (fixing.fix_host: each role's plan, the question, the roles) with the
    inventory's connection, become and Ansible interpreter, the roles installing into the
    Python the probes ran in (jetson_facts_python); hosts not reached are named and left.
    Then the doctor again on the hosts it changed: the fleet after, or an exit code for a
    refusal (which comes before any change)."""
    term.fleet(before.as_dict())  # the split, where no one ansible-core manages the fleet
    applied: dict[str, tuple[fixing.RolePlan, fixing.RoleRuns]] = {}
    for host, report in before.ordered:
        if not report.reached:
            term.line(f"--fix: {host} was not reached, nothing to fix there")
            continue
        if host in before.unmanaged:
            term.line(f"--fix: {host} left out: {before.unmanaged[host]}")
            continue
        the_plan = fixing.plan(report, request.known_roles, request.only, request.bundle)
        try:
            variables = fixing.host_variables(report, "python3", the_plan, request)
        except target_python.NoPython as exc:
            term.error(f"--fix on {host}: {exc}; nothing was changed there",
                       hint=f"set jetson_facts_python for {host} in the inventory to its "
                       "Python's absolute path; the other hosts still run")  # fmt: skip
            continue
        connection = playbook_runs.InventoryHost(before.inventory, host)
        fixed = fixing.fix_host(term, term.line, request, connection, the_plan, variables, host,
                                yes=yes)  # fmt: skip
        if fixed.status == "no-terminal":
            return EXIT_USAGE
        if fixed.status == "applied":
            applied[host] = (the_plan, fixed)
        else:
            fixing.say_verdicts(term.line, host, fixing.verdicts(report, the_plan, fixed, None))
    if not applied:
        return before
    with term.progress() as progress:
        again = run(before.inventory, ",".join(applied), matrix, checks, timeout, forks, progress)
    for host, (the_plan, fixed) in applied.items():
        for check, old, new in fixing.before_after(before.reports[host], again.reports[host]):
            term.line(f"{host}: {check}: {old} -> {new}")
        rows = fixing.verdicts(before.reports[host], the_plan, fixed, again.reports[host])
        fixing.say_verdicts(term.line, host, rows)
    return FleetReport(
        before.inventory,
        before.limit,
        {**before.reports, **again.reports},
        {**before.unmanaged, **again.unmanaged},
        before.split,
    )


def _with_remedy(report: doctor_mod.Report, remedy: str) -> doctor_mod.Report:
    (finding,) = report.findings
    return doctor_mod.not_reached(report.target, finding.check, finding.summary, remedy)
