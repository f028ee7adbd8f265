"""The one place that writes to the terminal: rich for people, JSON for programs.

Data goes to stdout (so `--json | jq` works); diagnostics and progress to stderr.
Commands build plain data and hand it here; they never print themselves. Text can come
from a target (a hostile one too): control characters, escape sequences included, are
shown as escapes, never sent to the terminal raw.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from jetson_env import installed
from jetson_env.findings import CRASH, FAIL, OK, SEVERITY, SKIP, WARN

STATUS_LABELS = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip", "crash": "CRASH"}
STATUS_STYLES = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim", "crash": "bold red"}
HOST_LABELS = {"unreachable": "UNREACHABLE", "crash": "CRASH", "fail": "FAIL", "warn": "warn",
               "ok": "ok"}  # fmt: skip
HOST_STYLES = {**STATUS_STYLES, "unreachable": "bold red"}
PLAN_STYLES = {"survives": "green", "unknown": "dim", "reinstall": "yellow", "rebuild": "yellow",
               "blocked": "red", "refused": "bold red", "unreachable": "bold red"}  # fmt: skip
ENGINE_STYLES = {"loads": "green", "unknown": "yellow", "rebuild": "red"}
MIN_WIDTH = 40
# C0 and C1 control characters (ESC starts every escape sequence), DEL, the bidi
# overrides that reorder what a terminal shows, and lone surrogates (bytes a target sent
# that are not UTF-8, which no UTF-8 file or terminal can hold); tab is shown as a space.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
SUMMARY_WORDS = {CRASH: "crashed", FAIL: "failed", WARN: "warnings", OK: "ok", SKIP: "skipped"}


def clean(text: object) -> str:
    """Text safe for a terminal: control characters as visible escapes (\\x1b), tab a space."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), str(text)).replace(
        "\t", " "
    )


def _locale_has_boxes() -> bool:
    """Whether the locale's character set is UTF-8 (Python's own UTF-8 mode, which it takes
    under the C locale, says nothing of what the terminal shows)."""
    import locale

    return locale.nl_langinfo(locale.CODESET).replace("-", "").lower() == "utf8"


def _width() -> int | None:
    """COLUMNS when it is a usable number; a fixed, wide layout when piped (tables don't fold
    at rich's default 80); otherwise the terminal's own."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return max(int(columns), MIN_WIDTH)
    return None if sys.stdout.isatty() else 120


def fleet_fix_heading(item: dict[str, Any]) -> str:
    """'on devbox, jetson3: termcolor (the role python_base)', or 'here, for down:
    connection' for hosts that were not reached (docs/doctor.md, Fleets)."""
    hosts = clean(", ".join(item["hosts"]))
    where = f"on {hosts}" if item["where"] == "host" else f"here, for {hosts}"
    role = f" (the role {item['role']})" if item["role"] else ""
    return f"{where}: {clean(', '.join(item['checks']))}{role}"


def checked(report: dict[str, Any]) -> str:
    """What the doctor checked: the target as asked ("local (python3)") and, where the
    platform probe answered, the interpreter that ran there, by its path and version."""
    python = (report.get("platform") or {}).get("python") or {}
    if not python.get("executable"):
        return report["target"]
    version = f", Python {python['version']}" if python.get("version") else ""
    return f"{report['target']}: {python['executable']}{version}"


def role_fixes(report: dict[str, Any], target: Sequence[str] = ()) -> dict[str, tuple[str, str]]:
    """Each fix a playbook role applies too (command -> (role, the `doctor --fix ROLE` line
    that runs it on the same `target`, fixing.target_options, by this jetson-env's path)):
    the terminal and the one-host page print it under the fix."""
    roles = {f["remedy"]: f["playbook"]["role"] for f in report["findings"] if f.get("playbook")}
    return {command: (role, installed.command(shlex.join(["jetson-env", "doctor", *target,
                                                          "--fix", role])))
            for command, role in roles.items()}  # fmt: skip


class Terminal:
    def __init__(self, *, as_json: bool = False, verbosity: int = 0):
        # NO_COLOR (no-color.org; --no-color sets it): plain text as a pipe gets it, no
        # escape sequence at all (no bold, no spinner), not only no colour.
        plain = {"force_terminal": False} if os.environ.get("NO_COLOR") else {}
        self.as_json = as_json
        self.verbosity = verbosity
        self.printed_json = False  # --json: one document, printed once (cli.main's promise)
        self.last_error: tuple[str, str | None] | None = None
        width = _width()
        # Box drawing and the braille spinner where the locale has them; ASCII where it does
        # not (LC_ALL=C, a Jetson's serial console), though Python writes UTF-8 there too.
        boxes = _locale_has_boxes()
        self.box, self.spinner = (box.HEAVY_HEAD, "dots") if boxes else (box.ASCII2, "line")
        self.out = Console(markup=False, highlight=False, width=width, **plain)
        self.err = Console(stderr=True, markup=False, highlight=False, width=width, **plain)

    def json(self, data: Any) -> None:
        self.printed_json = True
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")

    def table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        title: str | None = None,
        styles: Sequence[str | None] | None = None,
    ) -> None:
        table = Table(box=self.box, title=title, title_justify="left", show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for index, row in enumerate(rows):
            style = styles[index] if styles else None
            table.add_row(*("" if cell is None else clean(cell) for cell in row), style=style)
        self.out.print(table)

    def line(self, text: str = "", style: str | None = None) -> None:
        self.out.print(clean(text), style=style, soft_wrap=True)

    def status(self, text: str):
        """A spinner on stderr while long work runs (silent when stderr is not a terminal,
        and at -q)."""
        if self.verbosity < 0:
            return contextlib.nullcontext(_Unshown())
        return self.err.status(clean(text), spinner=self.spinner)

    def progress(self):
        """A context giving a callable that shows progress on stderr: a spinner on a terminal,
        plain lines elsewhere (CI logs; a counter's at most every few seconds), nothing at
        -q."""
        return _Progress(self)

    def findings(
        self,
        report: dict[str, Any],
        target: Sequence[str] = (),
        bundle: dict[str, Any] | None = None,
    ) -> None:
        """The doctor's report: findings grouped by area with short statuses, then every fix
        whole, numbered in the order to apply them (no borders: nothing to type is split),
        then what `bundle` (`doctor --bundle`'s advice) can fix, then the verdict.
        `target`: the options that name the host and Python checked, for `doctor --fix`."""
        title = f"jetson-env doctor: {clean(checked(report))}"
        table = Table(box=self.box, title=title, title_justify="left")
        for column in ("Area", "Check", "Status", "Finding", "Fix"):
            table.add_column(column, overflow="fold")
        numbers = {fix["command"]: str(fix["number"]) for fix in report["fixes"]}
        area = None
        for finding in report["findings"]:
            if area is not None and finding["area"] != area:
                table.add_section()
            table.add_row(
                finding["area"] if finding["area"] != area else "",
                finding["check"],
                STATUS_LABELS[finding["status"]],
                clean(finding["summary"]),
                numbers.get(finding["remedy"], ""),
                style=STATUS_STYLES[finding["status"]],
            )
            area = finding["area"]
            if self.verbosity > 0:
                for line in finding["details"]:
                    if line:
                        table.add_row("", "", "", f"  {clean(line)}", "", style="dim")
        self.out.print(table)
        if report["fixes"]:
            self.fixes("Fixes, in the order to apply them:", report["fixes"],
                       role_fixes(report, target))  # fmt: skip
        if bundle is not None:
            self.bundle_advice(bundle)
        counts = report["counts"]
        parts = [f"{counts[s]} {SUMMARY_WORDS[s]}" for s in SEVERITY if counts[s]]
        self.out.print(
            f"{report['status'].upper()}: {', '.join(parts)} (exit code {report['exit_code']})",
            style=STATUS_STYLES[report["status"]],
        )

    def fixes(
        self,
        title: str,
        fixes: list[dict[str, Any]],
        roles: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        """Each fix whole, numbered, after the checks it fixes (nothing to type is split);
        where a role applies the same fix (`roles`: role_fixes), the `doctor --fix` line that
        runs it."""
        self.out.print(title, style="bold")
        for fix in fixes:
            self.out.print(f"{fix['number']}. {', '.join(fix['checks'])}:", soft_wrap=True)
            style = "" if fix.get("words") else "bold"  # a step in words is not for pasting
            self.out.print(clean(fix["command"]), soft_wrap=True, style=style)
            if fix.get("note"):  # words that go with the command, apart from it
                self.out.print(f"   {clean(fix['note'])}", soft_wrap=True)
            if fix["command"] in (roles or {}):
                role, again = roles[fix["command"]]
                self.out.print(f"   or the playbook's role {role}: {again}", soft_wrap=True,
                               style="dim")  # fmt: skip

    def bundle_advice(self, offline: dict[str, Any]) -> None:
        """`doctor --bundle`, under its heading: each verdict once, with the roles it is about
        and the checks they fix; the roles the bundle was not made with for this host in one
        line, with the one `bundle --roles` line that adds them all; then the offline fix."""
        self.out.print(f"From the bundle {clean(offline['directory'])}, with no network:",
                       style="bold", soft_wrap=True)  # fmt: skip
        absent = (offline.get("add") or {}).get("roles") or []
        # (applies, why) -> role -> its checks; the roles not in the bundle under one key
        rows: dict[tuple[bool, str], dict[str, dict[str, None]]] = {}
        for fix in offline["fixes"]:
            key = (False, "") if fix["role"] in absent else (fix["applies"], fix["why"])
            rows.setdefault(key, {}).setdefault(fix["role"], {})[fix["check"]] = None
        for (applies, why), roles in rows.items():
            named = clean(
                ", ".join(f"{role} ({', '.join(checks)})" for role, checks in roles.items())
            )
            if not why:
                add = offline["add"]["command"]
                line = f"not in the bundle for this host: {named}; add them with: {add}"
            else:
                verdict = "the bundle can apply it" if applies else "not from the bundle"
                line = f"{named}: {verdict}: {why}"
            self.out.print(f"  {clean(line)}", style="green" if applies else "yellow",
                           soft_wrap=True)  # fmt: skip
        if offline["command"]:
            self.out.print(f"  offline fix: {clean(offline['command'])}", soft_wrap=True)

    def fleet(self, fleet: dict[str, Any]) -> None:
        """`doctor --inventory`: one row per host, worst first, then each host's fixes."""
        table = Table(box=self.box, title=f"jetson-env doctor: {clean(fleet['inventory'])}",
                      title_justify="left")  # fmt: skip
        for column in ("Host", "Platform", "Status", "Failing"):
            table.add_column(column, overflow="fold")
        for host in fleet["hosts"]:
            report = host["report"]
            if host["status"] == "unreachable":
                failing = report["findings"][0]["summary"]
            else:
                failing = ", ".join(host["failing"])
            table.add_row(clean(host["host"]), clean(host["platform_label"]),
                          HOST_LABELS[host["status"]], clean(failing),
                          style=HOST_STYLES[host["status"]])  # fmt: skip
        self.out.print(table)
        if fleet.get("ansible_core_split"):
            self.out.print(clean(fleet["ansible_core_split"]), soft_wrap=True, style="bold")
        if fleet.get("engines"):
            self.engine_grid(fleet["engines"])
        for host in fleet["hosts"]:
            if host["unmanaged"]:
                self.out.print(f"Not provisioned or fixed from here: {clean(host['unmanaged'])}")
        self.fleet_fixes(fleet)
        counts = fleet["counts"]
        parts = [f"{count} {status}" for status, count in counts.items() if count]  # worst first
        self.out.print(
            f"{fleet['status'].upper()}: {len(fleet['hosts'])} hosts, {', '.join(parts)} "
            f"(exit code {fleet['exit_code']})",
            style=HOST_STYLES[fleet["status"]],
        )

    def fleet_fixes(self, fleet: dict[str, Any]) -> None:
        """The fleet's fixes: first the one --fix line for every role some host needs, then
        each distinct command once, with the hosts to run it on (or "here", on this
        machine, for hosts that were not reached)."""
        fix = fleet.get("fix")
        if fix:
            self.out.print("Fix the fleet with the playbook's roles:", style="bold")
            self.out.print(clean(fix["command"]), soft_wrap=True, style="bold")
            for role in fix["roles"]:
                self.out.print(f"   {clean(role['role'])} on {clean(', '.join(role['hosts']))}",
                               soft_wrap=True, style="dim")  # fmt: skip
        if not fleet.get("fixes"):
            return
        self.out.print("Or by hand, each fix once, where to run it:" if fix
                       else "Fixes, each once, where to run it:", style="bold")  # fmt: skip
        for item in fleet["fixes"]:
            self.out.print(f"{item['number']}. {fleet_fix_heading(item)}:", soft_wrap=True)
            self.out.print(clean(item["command"]), soft_wrap=True,
                           style="" if item["words"] else "bold")  # fmt: skip

    def engine_grid(self, grid: dict[str, Any]) -> None:
        """`doctor -i --engines`: engine file x host, the worst first; then why, per cell
        that is not "loads"."""
        table = Table(box=self.box, title="Engine files", title_justify="left")
        for column in ("Engine", *grid["hosts"]):
            table.add_column(clean(column), overflow="fold")
        for row in grid["rows"]:
            cells = [cell["verdict"] if cell else "-" for cell in row["cells"]]
            table.add_row(clean(row["path"]), *cells, style=ENGINE_STYLES[row["verdict"]])
        self.out.print(table)
        for row in grid["rows"]:
            for host, cell in zip(grid["hosts"], row["cells"], strict=True):
                if cell and cell["verdict"] != "loads":
                    line = f"{clean(host)}: {clean(row['path'])}: {clean(cell['reason'])}"
                    self.out.print(line, style=ENGINE_STYLES[cell["verdict"]], soft_wrap=True)

    def plan(self, plan: dict[str, Any]) -> None:
        """`jetson-env plan`: per host its parts, worst first, with the reasons; then the
        commands whole (nothing to type is split), before and after the upgrade."""
        after = plan["after"]
        if plan.get("ansible_core_split"):
            self.out.print(clean(plan["ansible_core_split"]), soft_wrap=True, style="bold")
        for host in plan["hosts"]:
            now = host["now"]
            moving = (f"R{now['l4t']} (JetPack {now['jetpack']}) -> {plan['to']} (JetPack "
                      f"{after['jetpack']}), {host['kind']}" if now else plan["to"])  # fmt: skip
            table = Table(box=self.box, title=f"jetson-env plan: {clean(host['host'])}: {moving}",
                          title_justify="left")  # fmt: skip
            for column in ("Verdict", "Part", "Now", "After", "Why"):
                table.add_column(column, overflow="fold")
            for part in host["parts"]:
                table.add_row(part["verdict"], clean(part["name"]), clean(part["now"]),
                              clean(part["after"]), clean(part["reason"]),
                              style=PLAN_STYLES[part["verdict"]])  # fmt: skip
            if host["parts"]:
                self.out.print(table)
            else:
                self.out.print(f"{clean(host['host'])}: {host['status']}: "
                               f"{clean(host['refused'] or host['error'] or '')}",
                               style=PLAN_STYLES[host["status"]], soft_wrap=True)  # fmt: skip
            if host["unmanaged"]:
                self.out.print(f"Not provisioned from here after the upgrade: "
                               f"{clean(host['unmanaged'])}", soft_wrap=True)  # fmt: skip
            for route in host.get("not_offered", []):
                self.out.print(f"{clean(host['host'])}: not offered: {clean(route['route'])}: "
                               f"{clean(route['reason'])}", soft_wrap=True)  # fmt: skip
        for when, title in (("before", "Before the upgrade, while the network is there:"),
                            ("after", "After the upgrade or OTA, with no network:")):  # fmt: skip
            if plan["commands"][when]:
                self.out.print(title, style="bold")
                for command in plan["commands"][when]:
                    self.out.print(clean(command), soft_wrap=True, style="bold")
        counts = ", ".join(f"{n} {s}" for s, n in plan["counts"].items() if n)
        self.out.print(f"{plan['status'].upper()}: {len(plan['hosts'])} host(s) to {plan['to']}"
                       f", {counts} (exit code {plan['exit_code']})",
                       style=PLAN_STYLES[plan["status"]])  # fmt: skip

    def error(self, message: str, hint: str | None = None) -> None:
        self.last_error = (clean(message), clean(hint) if hint else None)
        self.err.print(f"error: {clean(message)}", style="bold red", soft_wrap=True)
        if hint:
            self.err.print(f"  -> {clean(hint)}", soft_wrap=True)

    def note(self, message: str) -> None:
        if self.verbosity >= 0:
            self.err.print(clean(message), style="dim", soft_wrap=True)


class _Unshown:
    """Terminal.status at -q: updates go nowhere."""

    def update(self, *_args: Any, **_kwargs: Any) -> None:
        return None


PIPE_EVERY_S = 5.0  # a pipe (a CI log) gets an update of the same line at most this often
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?: (?:B|KiB|MiB|GiB|TiB)\b)?")  # a count, a size


class _Progress:
    """Terminal.progress: a spinner's line on a terminal; in a pipe each step a line, and a
    counter's updates ("fetched 3/52 files") at most one line every PIPE_EVERY_S seconds,
    its last state when the next step (or the end) comes."""

    def __init__(self, term: Terminal):
        self.term = term
        self.status = None
        self.shape = None  # the last line printed, its numbers left out
        self.shown_at = 0.0
        self.pending: str | None = None  # an update held back

    def __enter__(self):
        if self.term.verbosity < 0:
            return lambda _text: None
        if self.term.err.is_terminal:
            self.status = self.term.err.status("starting", spinner=self.term.spinner)
            self.status.__enter__()
            return lambda text: self.status.update(clean(text))
        return self._piped

    def _piped(self, text: str) -> None:
        text = clean(text)
        now = time.monotonic()
        if _NUMBER.sub("#", text) == self.shape and now - self.shown_at < PIPE_EVERY_S:
            self.pending = text
            return
        if self.pending is not None and _NUMBER.sub("#", text) != self.shape:
            self._print(self.pending, self.shown_at)  # the counter's last state, then the step
        self._print(text, now)

    def _print(self, text: str, now: float) -> None:
        self.term.err.print(text, style="dim", soft_wrap=True)
        self.shape, self.shown_at, self.pending = _NUMBER.sub("#", text), now, None

    def __exit__(self, *exc_info):
        if self.status is not None:
            self.status.__exit__(*exc_info)
        elif self.pending is not None:
            self._print(self.pending, self.shown_at)
        return False
