"""`jetson-env doctor --inventory`: the doctor on every host of an Ansible inventory.

Ansible reaches the hosts (the inventory's connection settings, become, forks, SSH
multiplexing and host key checking: what users already run their fleet with) and runs
the same probe scripts as `doctor --host` in each host's interpreter, through the
jetson_env.jetson.probe action (the collection's plugins/action): one command per host, the
probe runner (jetson_env/ansible/probe_runner.py) and its jobs on stdin. On a host the
light probes share one process (one interpreter start per host, not seven), the
framework ones another. Their output comes back whole and is read here exactly as a
local or SSH run is read (RecordedTarget replays it), so the same checks judge it. A
probe that crashes or hangs leaves the probes after it to a fresh process: those
scripts are run in one more pass, on the hosts that need them only.

A host that is unreachable, refuses its host key or fails the task (a timeout, a broken
interpreter) is one row with Ansible's message; the others go on.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jetson_env import collection, fixing
from jetson_env import doctor as doctor_mod
from jetson_env.checks import Check
from jetson_env.findings import CRASH, FAIL, OK, WARN
from jetson_env.matrix import Matrix
from jetson_env.probing import RECORD, last_line, plan, process_budget, process_groups, script
from jetson_env.targets import (
    BOOTSTRAP,
    OUTPUT_LIMIT,
    READY,
    STARTUP_TIMEOUT,
    Completed,
    Deadline,
    StreamCollector,
    framed,
)

if TYPE_CHECKING:
    from jetson_env.terminal import Terminal

SCHEMA = 1
UNREACHABLE = "unreachable"
RUNS_MARKER = "@@jetson-env runs "
HOST_STATUSES = (UNREACHABLE, CRASH, FAIL, WARN, OK)  # worst first
# Ansible's own work around the probes on a host: connecting, interpreter discovery.
TASK_SLACK_SECONDS = 60
INTERPRETER_REMEDY = (
    "set ansible_python_interpreter for the host in the inventory to a Python 3.6 or newer"
)


class FleetError(Exception):
    """Ansible could not run, or said nothing about any host; `hint` says what to do."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class NotRecorded(Exception):
    """A probe script that the hosts have not run yet (the rest after a crashed probe)."""

    def __init__(self, source: str):
        super().__init__("probe script not run on the host yet")
        self.source = source


@dataclass(frozen=True)
class Recording:
    """How one probe process ended on a host, as the probe runner returned it."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    overflow: str | None


class RecordedTarget:
    """A host's probe processes, already run by Ansible, replayed line by line."""

    remote = True
    light_probes_together = True

    def __init__(self, host: str, python: str, runs: dict[str, Recording]):
        self.description = host
        self.python = python
        self.runs = runs

    def run_python(self, source, deadline: Deadline, on_line, budget: float = 0) -> Completed:
        recording = self.runs.get(source)
        if recording is None:
            raise NotRecorded(source)
        for name in ("stdout", "stderr"):
            collector = StreamCollector(name, on_line)
            collector.feed(getattr(recording, name).encode("utf-8", "surrogateescape"))
            collector.finish()
        if recording.timed_out:
            raise TimeoutError(f"timed out after {deadline.seconds:g}s")
        return Completed(recording.returncode, recording.stdout, recording.stderr,
                         recording.overflow)  # fmt: skip


def host_status(report: doctor_mod.Report) -> str:
    return UNREACHABLE if not report.reached else report.status


def platform_label(platform: dict[str, Any] | None) -> str:
    """'L4T R36.4.3 / JetPack 6.2', 'x86_64', or '' when the platform is not known."""
    if not platform:
        return ""
    if platform["is_jetson"]:
        return f"L4T R{platform['l4t'] or '?'} / JetPack {platform['jetpack'] or '?'}"
    return str(platform["machine"])


@dataclass(frozen=True)
class FleetReport:
    inventory: str
    limit: str | None
    reports: dict[str, doctor_mod.Report]  # by inventory host name

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
                    f["check"] for f in data["findings"] if f["status"] in (FAIL, CRASH))),
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
            "hosts": hosts,
        }


def _job(names: list[str], timeouts: dict[str, float]) -> dict[str, Any]:
    source = script(names)
    return {"id": hashlib.sha256(source.encode("utf-8")).hexdigest()[:16], "script": source,
            "names": names, "timeouts": {name: timeouts[name] for name in names}}  # fmt: skip


def _payload(jobs: list[dict[str, Any]]) -> bytes:
    """What the jetson_env_probe action sends on stdin: the runner, framed, then its request."""
    runner = (resources.files("jetson_env") / "ansible" / "probe_runner.py").read_text("utf-8")
    request = {"bootstrap": BOOTSTRAP, "ready": READY, "record": RECORD,
               "startup": STARTUP_TIMEOUT, "output_limit": OUTPUT_LIMIT, "marker": RUNS_MARKER,
               "jobs": jobs}  # fmt: skip
    return framed(runner) + json.dumps(request).encode("utf-8")


def run_playbook(
    inventory: str,
    limit: str | None,
    jobs_all: list[dict[str, Any]],
    jobs_by_host: dict[str, list[dict[str, Any]]],
    forks: int | None,
) -> tuple[dict[str, dict[str, Any]], str]:
    """ansible-playbook with the probe playbook: per host, its outcome and result; and
    what Ansible said on stderr (warnings: an inventory it could not parse ...)."""
    every = jobs_all + [job for jobs in jobs_by_host.values() for job in jobs]
    budget = max(process_budget(job["names"], job["timeouts"]) for job in every)
    try:
        ansible_playbook = collection.ansible_command()
    except collection.AnsibleMissing as exc:
        raise FleetError(str(exc), hint=exc.hint) from None
    env = collection.environment(ansible_playbook)
    env.update({
        "ANSIBLE_STDOUT_CALLBACK": f"{collection.FQCN}.fleet",
        "ANSIBLE_RETRY_FILES_ENABLED": "false",
    })  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="jetson-env-fleet-") as tmp:
        paths = {}
        for index, (name, jobs) in enumerate({"": jobs_all, **jobs_by_host}.items()):
            if jobs:
                paths[name] = Path(tmp) / f"payload-{index}"
                paths[name].write_bytes(_payload(jobs))
        variables = {
            "jetson_env_probe_payload": str(paths.get("", "")),
            "jetson_env_probe_payloads": {host: str(paths[host]) for host in jobs_by_host},
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
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = next(
        (line for line in reversed(done.stdout.splitlines()) if line.startswith('{"hosts"')), None
    )
    if found is None:
        said = done.stderr.strip().splitlines()[-5:] or done.stdout.strip().splitlines()[-5:]
        raise FleetError(
            f"ansible-playbook exited {done.returncode} without a result: " + " / ".join(said)
        )
    return json.loads(found)["hosts"], done.stderr


def unreachable_remedy(inventory: str, host: str, message: str) -> str:
    """What to run to see why, and for a refused host key what to check first."""
    ping = shlex.join(["ansible", host, "-i", inventory, "-m", "ansible.builtin.ping", "-vvv"])
    if "host key verification failed" not in message.lower():
        return f"{ping} shows why"
    return (
        f"compare {host}'s host key with the one in known_hosts (`ssh-keygen -F ADDRESS`); "
        "only if it is new or changed for a reason you know, remove the old entry "
        f"(`ssh-keygen -R ADDRESS`) and record the new one; then {ping}"
    )


def _runner_output(result: dict[str, Any]) -> dict[str, Any] | None:
    """The probe runner's document in a host's task result; None where it printed none."""
    lines = str(result.get("stdout", "")).splitlines()
    found = next((line for line in reversed(lines) if line.startswith(RUNS_MARKER)), None)
    return json.loads(found[len(RUNS_MARKER) :]) if found else None


def _not_run(inventory: str, host: str, outcome: str, result: dict[str, Any]) -> doctor_mod.Report:
    message = str(result.get("msg") or "no message").strip()
    if outcome == "ok":  # the task ran, the runner said nothing
        said = last_line(str(result.get("stderr", ""))) or "no output"
        message = f"the probe runner printed no result: {said}"
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
) -> FleetReport:
    timeouts, light, framework = plan(doctor_mod.needed_probes(checks), timeout)
    groups = process_groups(light, framework, together=RecordedTarget.light_probes_together)
    jobs_all = [_job(group, timeouts) for group in groups]
    # After a probe that crashed or hung, the rest of its group: any tail of a group.
    tails = {script(group[i:]): group[i:] for group in groups for i in range(len(group))}
    by_id = {job["id"]: job["script"] for job in jobs_all}
    recorded: dict[str, dict[str, Recording]] = {}
    pythons: dict[str, str] = {}
    reports: dict[str, doctor_mod.Report] = {}
    more: dict[str, list[dict[str, Any]]] = {}
    pass_limit = limit
    for _ in range(len(timeouts) + 1):
        progress(f"running the probes through Ansible on {pass_limit or 'every host'}")
        results, said = run_playbook(
            inventory, pass_limit, jobs_all if not more else [], more, forks
        )
        if not results and not reports:
            warnings = [line for line in said.splitlines() if line.startswith("[WARNING]")]
            raise FleetError(
                f"no host of {inventory} matches {limit or 'all'}"
                + (f" (Ansible said: {' '.join(warnings)[:1500]})" if warnings else "")
            )
        for host, entry in results.items():
            runner = _runner_output(entry["result"]) if entry["outcome"] == "ok" else None
            if runner is None:
                reports[host] = _not_run(inventory, host, entry["outcome"], entry["result"])
                continue
            pythons[host] = runner["python"]
            runs = recorded.setdefault(host, {})
            for job_id, run_ in runner["runs"].items():
                runs[by_id[job_id]] = Recording(**run_)
        more = {}
        for host in sorted(recorded.keys() - reports.keys()):
            target = RecordedTarget(host, pythons[host], recorded[host])
            try:
                reports[host] = doctor_mod.run(target, matrix, checks, timeout)
            except NotRecorded as exc:
                job = _job(tails[exc.source], timeouts)
                by_id[job["id"]] = job["script"]
                more[host] = [job]
        if not more:
            break
        pass_limit = ",".join(more)
    return FleetReport(inventory, limit, reports)


def fix(
    term: Terminal,
    setup: fixing.Setup,
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
    term.fleet(before.as_dict())
    applied: dict[str, tuple[fixing.Plan, fixing.HostFix]] = {}
    for host, report in before.ordered:
        if not report.reached:
            term.line(f"--fix: {host} was not reached, nothing to fix there")
            continue
        the_plan = fixing.plan(report, setup.known_roles, setup.only)
        variables = fixing.host_variables(report, "python3", the_plan, setup)
        connection = fixing.InventoryHost(before.inventory, host)
        fixed = fixing.fix_host(term, term.line, setup, connection, the_plan, variables, host,
                                yes=yes)  # fmt: skip
        if fixed.status == "no-terminal":
            return doctor_mod.EXIT_USAGE
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
    return FleetReport(before.inventory, before.limit, {**before.reports, **again.reports})
