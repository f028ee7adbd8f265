"""The one place that writes to the terminal: rich for people, JSON for programs.

Data goes to stdout (so `--json | jq` works); diagnostics and progress to stderr.
Commands build plain data and hand it here; they never print themselves.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

STATUS_LABELS = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip", "crash": "CRASH"}
STATUS_STYLES = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim", "crash": "bold red"}
SUMMARY_WORDS = (
    ("crash", "crashed"),
    ("fail", "failed"),
    ("warn", "warnings"),
    ("ok", "ok"),
    ("skip", "skipped"),
)


class Terminal:
    def __init__(self, *, as_json: bool = False, color: bool | None = None, verbosity: int = 0):
        no_color = color is False or "NO_COLOR" in os.environ
        self.as_json = as_json
        self.verbosity = verbosity
        # Piped output gets a fixed, wide layout so tables don't fold at rich's default 80.
        width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
        self.out = Console(markup=False, highlight=False, no_color=no_color, width=width)
        self.err = Console(stderr=True, markup=False, highlight=False, no_color=no_color)

    def json(self, data: Any) -> None:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")

    def table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        title: str | None = None,
        styles: Sequence[str | None] | None = None,
    ) -> None:
        table = Table(title=title, title_justify="left", show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for index, row in enumerate(rows):
            style = styles[index] if styles else None
            table.add_row(*("" if cell is None else str(cell) for cell in row), style=style)
        self.out.print(table)

    def line(self, text: str = "", style: str | None = None) -> None:
        self.out.print(text, style=style, soft_wrap=True)

    def status(self, text: str):
        """A spinner on stderr while long work runs (silent when stderr is not a terminal)."""
        return self.err.status(text)

    def progress(self):
        """A context giving a callable that shows progress on stderr: a spinner on a terminal,
        plain lines elsewhere (CI logs), nothing at -q."""
        return _Progress(self)

    def findings(self, report: dict[str, Any]) -> None:
        """The doctor's report: findings grouped by area, remedies under problems, a summary."""
        table = Table(title=f"jetson-env doctor: {report['target']}", title_justify="left")
        for column in ("Area", "Check", "Status", "Finding"):
            table.add_column(column, overflow="fold")
        area = None
        for finding in report["findings"]:
            if area is not None and finding["area"] != area:
                table.add_section()
            label = STATUS_LABELS[finding["status"]]
            table.add_row(
                finding["area"] if finding["area"] != area else "",
                finding["check"],
                label,
                finding["summary"],
                style=STATUS_STYLES[finding["status"]],
            )
            area = finding["area"]
            if self.verbosity > 0:
                for line in finding["details"]:
                    if line:
                        table.add_row("", "", "", f"  {line}", style="dim")
            if finding["remedy"]:
                table.add_row("", "", "", f"fix: {finding['remedy']}", style="bold")
        self.out.print(table)
        counts = report["counts"]
        parts = [f"{counts[s]} {name}" for s, name in SUMMARY_WORDS if counts[s]]
        self.out.print(
            f"{report['status'].upper()}: {', '.join(parts)} (exit code {report['exit_code']})",
            style=STATUS_STYLES[report["status"]],
        )

    def error(self, message: str, hint: str | None = None) -> None:
        self.err.print(f"error: {message}", style="bold red")
        if hint:
            self.err.print(f"  -> {hint}")

    def note(self, message: str) -> None:
        if self.verbosity >= 0:
            self.err.print(message, style="dim")


class _Progress:
    def __init__(self, term: Terminal):
        self.term = term
        self.status = None

    def __enter__(self):
        if self.term.verbosity < 0:
            return lambda _text: None
        if self.term.err.is_terminal:
            self.status = self.term.err.status("starting")
            self.status.__enter__()
            return self.status.update
        return lambda text: self.term.err.print(text, style="dim")

    def __exit__(self, *exc_info):
        if self.status is not None:
            self.status.__exit__(*exc_info)
        return False
