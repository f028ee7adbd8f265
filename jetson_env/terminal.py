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

    def error(self, message: str, hint: str | None = None) -> None:
        self.err.print(f"error: {message}", style="bold red")
        if hint:
            self.err.print(f"  -> {hint}")

    def note(self, message: str) -> None:
        if self.verbosity >= 0:
            self.err.print(message, style="dim")
