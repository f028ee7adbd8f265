"""What the report pages (the doctor's for one host and for a fleet, the plan's) share around
their content: the style, a header that says what made the page and when, the verdict, and
then a legend of the statuses, worst first, each painted darker the worse it is.

Self-contained: inline style, no script, nothing fetched. A page names files of the machine
that made it relative to the folder it was made in (its title by the inventory's name), so
a page passed on carries no one's home folder.
"""

from __future__ import annotations

import html
import os
import re
import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

# The grid's check columns are narrow: their names run upwards. A wide table scrolls in its
# own box, never the page.
BASE_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#212121;line-height:1.4}"
    "h1{font-size:1.6em;margin:0 0 .2em}#made{color:#555;margin:0 0 1em}"
    ".scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse}"
    "th,td{border:1px solid #bbb;padding:.25em .45em;text-align:left;vertical-align:top}"
    "th.column{vertical-align:bottom;padding:.45em .2em}"
    "th.column span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}"
    "td.label{max-width:16em}"
    "pre{background:#f5f5f5;padding:.5em;white-space:pre-wrap;overflow-wrap:anywhere}"
    "h1,h2,h3,p,li,td.label,td.finding{overflow-wrap:anywhere}"
    "code{background:#f0f0f0;padding:0 .2em}"
    ".status{padding:0 .35em;border-radius:.2em}"
    "#legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3em 1.2em}"
)
DARK = "#ffffff"  # the text on the two darkest colours


def style(colours: dict[str, str]) -> str:
    """BASE_STYLE and a class per status; the darkest ones (luminance below .2) get white text."""
    return BASE_STYLE + "".join(
        f".{status}{{background:{colour}{';color:' + DARK if _luminance(colour) < 0.2 else ''}}}"
        for status, colour in colours.items()
    )


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def made() -> str:
    """What made the page, and when (UTC, to the minute)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("jetson-env")
    except PackageNotFoundError:  # run from a checkout that was never installed
        ours = "(version unknown)"
    return f"Made {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by jetson-env {ours}."


def name_of(inventory: str | None) -> str:
    """The inventory as a title names it: its file name; a host list as given."""
    if inventory is None:
        return "this machine"
    return inventory if "," in inventory else Path(inventory).name


def relative_paths(document: Any, paths: list[str | None]) -> Any:
    """The document with each of these absolute paths of this machine (the inventory, the
    bundle) named relative to the current folder, or else to the home folder (~/), quoted as
    a shell needs it; a path outside both (/srv/bundles) is no one's home and stays."""
    names = {}
    for path in paths:
        if not path or not os.path.isabs(path) or "," in path:
            continue
        here, home = os.path.relpath(path), os.path.relpath(path, Path.home())
        if not here.startswith(".."):  # the folder it was made in, or under it
            names[shlex.quote(path)], names[path] = shlex.quote(here), here
        elif not home.startswith(".."):  # the home folder: ~/ as a shell expands it
            names[shlex.quote(path)], names[path] = f"~/{shlex.quote(home)}", f"~/{home}"
    if not names:
        return document
    pattern = re.compile("|".join(map(re.escape, sorted(names, key=len, reverse=True))))

    def local(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda m: names[m.group(0)], value)
        if isinstance(value, dict):
            return {key: local(item) for key, item in value.items()}
        if isinstance(value, list):
            return [local(item) for item in value]
        return value

    return local(document)


_CODE = re.compile(r"`([^`\n]+)`")


def inline(text: str) -> str:
    """Text for HTML, escaped, its `quoted` spans shown as code."""
    out, at = [], 0
    for match in _CODE.finditer(text):
        out += [html.escape(text[at : match.start()]), f"<code>{html.escape(match[1])}</code>"]
        at = match.end()
    return "".join(out) + html.escape(text[at:])


def header(title: str, colours: dict[str, str], meanings: dict[str, str],
           verdict: str) -> list[str]:  # fmt: skip
    """The page's head and header: title, what made it, the verdict (what a reader came
    for), then the legend (worst first)."""
    e = html.escape
    legend = "".join(f'<li><span class="status {status}" data-status="{status}">{status}</span> '
                     f"{e(meanings[status])}</li>" for status in colours)  # fmt: skip
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{style(colours)}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p id="made">{e(made())}</p>',
        f'<p id="summary">{e(verdict)}</p>',
        f'<ul id="legend" aria-label="statuses, worst first">{legend}</ul>',
    ]


def markdown_header(title: str, meanings: dict[str, str], text: Any, verdict: str) -> list[str]:
    """The Markdown page's header: title, what made it, the verdict, the legend (worst
    first); `text` escapes a text for Markdown (fleet.page.md_text)."""
    legend = ", ".join(f"**{status}** ({text(meaning)})" for status, meaning in meanings.items())
    return [f"# {title}", "", made(), "", text(verdict), "", f"Statuses, worst first: {legend}."]


def md_inline(text: str, escape: Any) -> str:
    """Inline Markdown, one line: `escape` (fleet.page.md_text) outside `quoted` spans, which
    stay code spans (nothing in a code span is markup)."""

    def outside(part: str) -> str:
        if not part.strip():
            return part
        return (" " if part[0] == " " else "") + escape(part) + (" " if part[-1] == " " else "")

    text = " ".join(text.split())
    out, at = [], 0
    for match in _CODE.finditer(text):
        out += [outside(text[at : match.start()]), f"`{match[1]}`"]
        at = match.end()
    return "".join(out) + outside(text[at:])
