"""`jetson-env provision`'s run of ansible-playbook: Ansible's output streamed as it comes, then
a summary per host of what each role changed (or would change, --check), read from the
collection's results callback (the play's own results, never its printed text), and one exit
code on the project's scale (docs/playbook.md, "Exit codes").
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from jetson_env import lifeline
from jetson_env.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)
from jetson_env.playbook_runs import with_own_callbacks

# ansible-playbook's own exit codes (ansible.cli's): 1 an error, 2 a host failed (or its
# option parser's usage error), 4 a host unreachable or a parser error, 5 bad options, 99
# interrupted, 250 an unexpected error.
ANSIBLE_BAD_INPUT = (4, 5)
ANSIBLE_BEFORE_ANY_HOST = (1, 2, 4, 5)  # with no results: what it was given, refused
ANSIBLE_INTERRUPTED = 99
END_WAIT_S = 10


def run(cmd: list[str], env: dict[str, str], *, output_to_stderr: bool) -> tuple[int, dict | None]:
    """Run it as the user would (their ansible.cfg, stdout callback and folder; Ansible's
    output on stdout, or stderr where stdout is --json's), with the results callback enabled
    beside the user's callbacks. Returns ansible-playbook's exit code (-N: ended by signal N)
    and the callback's results (None when the run ended before its stats)."""
    with tempfile.TemporaryDirectory(prefix="jetson-env-provision-") as tmp:
        results_file = Path(tmp) / "results.json"
        env = with_own_callbacks(cmd[0], env, results_file)
        stdout = sys.stderr if output_to_stderr else None
        process = subprocess.Popen(cmd, env=env, stdout=stdout,
                                   preexec_fn=lifeline.ends_with_us())  # fmt: skip
        try:
            code = process.wait()
        except KeyboardInterrupt:  # a terminal's Ctrl-C reached ansible-playbook too
            _end(process, signal.SIGINT, grace_s=END_WAIT_S / 2)
            raise
        except BaseException:  # SIGTERM (cli's Terminated): ended with it
            _end(process, signal.SIGTERM, grace_s=0)
            raise
        try:
            results = json.loads(results_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            results = None
    return code, results


def _end(process: subprocess.Popen, sig: int, grace_s: float) -> None:
    """Let ansible-playbook end its run (the same signal once more after `grace_s`), killed
    when it has not ended END_WAIT_S after that."""
    for wait_s, then in ((grace_s, sig), (END_WAIT_S, signal.SIGKILL)):
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            process.send_signal(then)
    process.wait()


def exit_code(ansible_code: int, results: dict | None) -> int:
    """ansible-playbook's exit code on the project's scale: 0 every host ok, 3 a host
    unreachable (the worst), 1 a host failed, 2 bad input Ansible refused before any host
    (an option, the inventory, an -e file: no results, or its 4 or 5 with none unreachable),
    130 interrupted, 128+N ended by signal N."""
    if ansible_code == 0:
        return EXIT_OK
    if ansible_code < 0:
        return 128 - ansible_code
    if ansible_code == ANSIBLE_INTERRUPTED:
        return EXIT_INTERRUPTED
    if results is None and ansible_code in ANSIBLE_BEFORE_ANY_HOST:
        return EXIT_USAGE
    hosts = (results or {}).get("hosts", {}).values()
    if any(stats.get("unreachable") for stats in hosts):
        return EXIT_UNREACHABLE
    if any(stats.get("failures") for stats in hosts):
        return EXIT_FAILED
    if ansible_code in ANSIBLE_BAD_INPUT:
        return EXIT_USAGE
    return EXIT_FAILED


def summary(results: dict, *, check: bool) -> dict[str, Any]:
    """Per host: its status (ok, changed, failed, unreachable), Ansible's counts, what each
    role changed (or would change), in the order the roles ran (`said`: the role's own words,
    "termcolor==3.3.0 installed"; `changed`: the changed tasks no such sentence covers), the
    error that stopped it (the last failed task's, or why it was not reached) and the roles the
    play stopped before."""
    hosts = {}
    for host, stats in results.get("hosts", {}).items():
        failures = [f for f in results.get("failed", []) if f.get("host") == host]
        status = (
            "unreachable" if stats.get("unreachable")
            else "failed" if stats.get("failures")
            else "changed" if stats.get("changed")
            else "ok"
        )  # fmt: skip
        roles = [
            {"role": role, "said": tally.get("said", []), "changed": tally["changed"],
             "failed": tally["failed"] if status in ("failed", "unreachable") else [],
             "ok": tally["ok"], "skipped": tally["skipped"]}
            for role, tally in results.get("roles", {}).get(host, {}).items()
        ]  # fmt: skip
        error = None
        if status in ("failed", "unreachable") and failures:
            last = failures[-1]
            error = f"{last['task']}: {last['msg']}" if last.get("msg") else last["task"]
        never = results.get("never_reached", {}).get(host, [])
        hosts[host] = {"status": status, "stats": stats, "roles": roles, "error": error,
                       "never_reached": never}  # fmt: skip
    return {"check": check, "hosts": hosts}


def lines(summary_: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The summary as (line, style) for the terminal: a line per host, a line per role that
    changed (its own words, then the names of the changed tasks they do not cover), failed (or
    where the host stopped answering) or ran with nothing to change, the error, and the roles
    never reached."""
    changed = "would change" if summary_["check"] else "changed"
    title = "--check: what would change" if summary_["check"] else "what changed"
    out: list[tuple[str, str | None]] = [(f"Summary per host ({title}):", "bold")]
    for host, entry in summary_["hosts"].items():
        status, stats = entry["status"], entry["stats"]
        word = {"changed": f"{stats.get('changed', 0)} task(s) {changed}",
                "ok": f"nothing {'would change' if summary_['check'] else 'changed'}",
                "failed": "FAILED", "unreachable": "UNREACHABLE"}[status]  # fmt: skip
        style = {"failed": "red", "unreachable": "red", "changed": "yellow"}.get(status)
        out.append((f"{host}: {word}", style))
        for role in entry["roles"]:
            name = role["role"] or "(the play's own tasks)"
            what = [*role["said"], *([f"{changed}: {'; '.join(role['changed'])}"]
                                     if role["changed"] else [])]  # fmt: skip
            if role["failed"]:
                stopped = "unreachable" if status == "unreachable" else "failed"
                what.append(f"{stopped} at {', '.join(role['failed'])}")
            elif not what and role["ok"]:
                what.append("nothing to change")
            if what:
                out.append((f"  {name}: {'; '.join(what)}", "red" if role["failed"] else None))
        if entry["error"]:
            out.append((f"  error: {entry['error'][:600]}", "red"))
        if entry["never_reached"]:
            out.append((f"  never reached (the play stopped before them): "
                        f"{', '.join(entry['never_reached'])}", "red"))  # fmt: skip
    return out
