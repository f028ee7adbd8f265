"""`doctor --report FILE` for one host (this machine or --host): its report as a page for
people, HTML or Markdown, as the terminal shows it: the verdict, the findings by area with
their statuses and the number of the fix for each, then every fix whole, in the order to
apply them. The header, legend and style are jetson_env.pages'; the escaping the fleet
page's (jetson_env.fleet.page): text from a host is never markup.
"""

from __future__ import annotations

import html
from typing import Any

from jetson_env import pages
from jetson_env.findings import SEVERITY
from jetson_env.fleet.page import COLOURS as FLEET_COLOURS
from jetson_env.fleet.page import fence, md_text, neutral
from jetson_env.terminal import SUMMARY_WORDS

# A finding's statuses, worst first, in the fleet page's colours.
COLOURS = {status: FLEET_COLOURS[status] for status in SEVERITY}
MEANINGS = {"crash": "a probe crashed or timed out", "fail": "broken: its fix is below",
            "warn": "works, with a caveat", "ok": "works",
            "skip": "not checked: the reason is beside it"}  # fmt: skip
COLUMNS = ("Area", "Check", "Status", "Finding", "Fix")


def summary(report: dict[str, Any]) -> str:
    """The terminal's last line (terminal.Terminal.findings)."""
    counts = report["counts"]
    parts = [f"{counts[s]} {SUMMARY_WORDS[s]}" for s in SEVERITY if counts[s]]
    return f"{report['status'].upper()}: {', '.join(parts)} (exit code {report['exit_code']})"


def render(report: dict[str, Any], suffix: str, paths: list[str | None]) -> str:
    """The page; `paths`: files of this machine the report names (--engines folders, the
    bundle), named relative to the folder the page was made in."""
    report = pages.relative_paths(neutral(report), paths)
    return html_page(report) if suffix.lower() == ".html" else markdown(report)


def _numbers(report: dict[str, Any]) -> dict[str, int]:
    return {fix["command"]: fix["number"] for fix in report["fixes"]}


def html_page(report: dict[str, Any]) -> str:
    e = html.escape
    numbers = _numbers(report)
    out = [*pages.header(f"jetson-env doctor: {report['target']}", COLOURS, MEANINGS,
                         summary(report)),
           '<div class="scroll"><table id="findings"><thead><tr>',
           *(f"<th>{column}</th>" for column in COLUMNS[1:]),
           "</tr></thead><tbody>"]  # fmt: skip
    area = None
    for finding in report["findings"]:
        if finding["area"] != area:  # the area a row of its own: four columns fit a phone
            area = finding["area"]
            out.append(f'<tr><th colspan="{len(COLUMNS) - 1}">{e(area)}</th></tr>')
        number = numbers.get(finding["remedy"])
        fix = f'<a href="#fix-{number}">{number}</a>' if number else ""
        status = finding["status"]
        out.append(f'<tr data-check="{e(finding["check"])}">'
                   f'<td>{e(finding["check"])}</td><td class="{status}">{status}</td>'
                   f'<td class="finding">{pages.inline(finding["summary"])}</td><td>{fix}</td>'
                   "</tr>")  # fmt: skip
    out.append("</tbody></table></div>")
    if report["fixes"]:
        out.append('<section id="fixes"><h2>Fixes, in the order to apply them</h2>')
        for fix in report["fixes"]:
            command = (f'<p class="fix">{pages.inline(fix["command"])}</p>' if fix["words"]
                       else f'<pre class="fix">{e(fix["command"])}</pre>')  # fmt: skip
            note = f'<p class="note">{pages.inline(fix["note"])}</p>' if fix.get("note") else ""
            out.append(f'<h4 id="fix-{fix["number"]}">Fix {fix["number"]}, '
                       f"{e(', '.join(fix['checks']))}</h4>{command}{note}")  # fmt: skip
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def markdown(report: dict[str, Any]) -> str:
    numbers = _numbers(report)
    title = f"jetson-env doctor: {md_text(report['target'])}"
    out = [*pages.markdown_header(title, MEANINGS, md_text, summary(report)), "",
           "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]  # fmt: skip
    for finding in report["findings"]:
        number = numbers.get(finding["remedy"])
        row = [md_text(finding["area"]), md_text(finding["check"]), finding["status"],
               md_text(finding["summary"]),
               str(number) if number else ""]  # fmt: skip
        out.append("| " + " | ".join(row) + " |")
    if report["fixes"]:
        out += ["", "## Fixes, in the order to apply them"]
    for fix in report["fixes"]:
        text = pages.md_inline(fix["command"], md_text) if fix["words"] else fence(fix["command"])
        out += ["", f"Fix {fix['number']}, {md_text(', '.join(fix['checks']))}:", "", text]
        out += ["", pages.md_inline(fix["note"], md_text)] if fix.get("note") else []
    return "\n".join(out) + "\n"
