"""`doctor --report FILE`: the doctor's pages for people, HTML or Markdown: a fleet's
(--inventory) and one host's (host_render).

A fleet's: a grid of hosts x checks coloured by status, then each host's fixes. One host's:
its findings by area, then its fixes, as the terminal shows them. The header and legend
are jetson_env.pages' (shared with the plan's page). The page is self-contained (inline
style, no script, nothing fetched). Everything that came from a
host is untrusted text: its control characters shown as the terminal shows them, escaped
for HTML, and for Markdown kept out of its syntax (table cells escaped, commands in fences
longer than any backtick run in them).
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

from jetson_env import pages
from jetson_env.findings import SEVERITY, worst_of
from jetson_env.terminal import SUMMARY_WORDS, checked, clean, fleet_fix_heading, role_fixes

FORMATS = (".html", ".md")
# Worst first (a host's statuses, then a check's skip), darker the worse.
COLOURS = {"unreachable": "#7f0000", "crash": "#c62828", "fail": "#ef9a9a", "warn": "#fff59d",
           "ok": "#c8e6c9", "skip": "#eeeeee"}  # fmt: skip
MEANINGS = {"unreachable": "not reached: nothing was checked",
            "crash": "a probe crashed or timed out", "fail": "broken: its fix is below",
            "warn": "works, with a caveat", "ok": "works",
            "skip": "not checked on this host"}  # fmt: skip
ENGINE_CLASSES = {"loads": "ok", "unknown": "warn", "rebuild": "fail"}


def unwritable(path: Path) -> str | None:
    """Why the page cannot be written to path (checked before the fleet runs); None if it can."""
    if path.is_dir():
        return "is a folder"
    if path.exists() and not path.is_file():
        return "is not a regular file"
    if path.exists() and not os.access(path, os.W_OK):
        return "is not writable"
    if not path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
        return f"the folder {path.parent} is not writable (or is mounted read-only)"
    return None


def columns(fleet: dict[str, Any]) -> list[str]:
    """Every check that some host reports, in the order the reports list them."""
    return list(dict.fromkeys(
        f["check"] for host in fleet["hosts"] for f in host["report"]["findings"]))  # fmt: skip


def cells(host: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """check -> (its worst status on this host, the findings' summaries)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for finding in host["report"]["findings"]:
        found.setdefault(finding["check"], []).append(finding)
    return {
        check: (
            worst_of(f["status"] for f in findings),
            "\n".join(f["summary"] for f in findings),
        )
        for check, findings in found.items()
    }


def render(fleet: dict[str, Any], suffix: str) -> str:
    fleet = pages.relative_paths(neutral(fleet), [fleet["inventory"]])
    return html_page(fleet) if suffix.lower() == ".html" else markdown(fleet)


def neutral(value: Any) -> Any:
    """Every text of the fleet with its control characters shown as the terminal shows them
    (terminal.clean: ESC as \\x1b), line breaks kept: a page is read by people too."""
    if isinstance(value, str):
        return "\n".join(clean(line) for line in value.split("\n"))
    if isinstance(value, dict):
        return {key: neutral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [neutral(item) for item in value]
    return value


def _fix_body(fix: dict[str, Any]) -> str:
    """A fix under its heading: a command whole in a block (prose, the `words` fixes, as
    text), then its note."""
    command = (f'<p class="fix">{pages.inline(fix["command"])}</p>' if fix["words"]
               else f'<pre class="fix">{html.escape(fix["command"])}</pre>')  # fmt: skip
    note = f'<p class="note">{pages.inline(fix["note"])}</p>' if fix.get("note") else ""
    return command + note


def html_page(fleet: dict[str, Any]) -> str:
    e = html.escape
    checks = columns(fleet)
    title = f"jetson-env doctor: {pages.name_of(fleet['inventory'])}"
    out = [
        *pages.header(title, COLOURS, MEANINGS, summary(fleet)),
        '<div class="scroll"><table id="grid"><thead><tr><th>Host</th><th>Platform</th>'
        "<th>Status</th>",
        *(f'<th class="column"><span>{e(check)}</span></th>' for check in checks),
        "</tr></thead><tbody>",
    ]
    for host in fleet["hosts"]:
        found = cells(host)
        out.append(f'<tr data-host="{e(host["host"])}"><th>{e(host["host"])}</th>'
                   f'<td class="label">{e(host["platform_label"])}</td>'
                   f'<td class="{host["status"]}">{e(host["status"])}</td>')  # fmt: skip
        for check in checks:
            if check in found:
                status, text = found[check]
                out.append(f'<td class="{status}" data-check="{e(check)}" title="{e(text)}">'
                           f"{e(status)}</td>")  # fmt: skip
            else:
                out.append(f'<td data-check="{e(check)}"></td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    grid = fleet.get("engines")
    if grid:
        out += [
            '<h2>Engine files</h2><div class="scroll"><table id="engines"><thead><tr>'
            "<th>Engine</th>",
            *(f'<th class="column"><span>{e(name)}</span></th>' for name in grid["hosts"]),
            "</tr></thead><tbody>",
        ]
        for row in grid["rows"]:
            out.append(f'<tr data-engine="{e(row["path"])}"><th>{e(row["path"])}</th>')
            for name, cell in zip(grid["hosts"], row["cells"], strict=True):
                if cell is None:
                    out.append(f'<td data-host="{e(name)}">-</td>')
                    continue
                out.append(f'<td class="{ENGINE_CLASSES[cell["verdict"]]}" data-host="{e(name)}"'
                           f' title="{e(cell["reason"])}">{e(cell["verdict"])}</td>')  # fmt: skip
            out.append("</tr>")
        out.append("</tbody></table></div>")
    out += html_fixes(fleet)
    for host in fleet["hosts"]:
        report = host["report"]
        problems = [f for f in report["findings"] if f["status"] not in ("ok", "skip")]
        if not problems:
            continue
        out.append(f'<section class="host" data-host="{e(host["host"])}">'
                   f"<h2>{e(host['host'])}</h2><ul>")  # fmt: skip
        out += [f'<li><span class="status {f["status"]}">{f["status"]}</span> '
                f'{e(f["check"])}: {pages.inline(f["summary"])}</li>'
                for f in problems]  # fmt: skip
        out.append("</ul></section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def html_fixes(fleet: dict[str, Any]) -> list[str]:
    """The fleet's fixes (terminal.Terminal.fleet_fixes): the --fix line first, then each
    command once with where to run it."""
    e = html.escape
    fix, fixes = fleet.get("fix"), fleet.get("fixes") or []
    if not fix and not fixes:
        return []
    out = ['<section id="fixes"><h2>Fixes</h2>']
    if fix:
        out.append("<h3>Fix the fleet with the playbook's roles</h3>"
                   f'<pre class="fix" id="fleet-fix">{e(fix["command"])}</pre><ul>')  # fmt: skip
        out += [f"<li>{e(role['role'])} on {e(', '.join(role['hosts']))}</li>"
                for role in fix["roles"]]  # fmt: skip
        out.append("</ul><h3>Or by hand, each fix once, where to run it</h3>")
    for item in fixes:
        out.append(f'<h4 data-hosts="{e(" ".join(item["hosts"]))}">Fix {item["number"]}, '
                   f"{e(fleet_fix_heading(item))}</h4>{_fix_body(item)}")  # fmt: skip
    out.append("</section>")
    return out


def summary(fleet: dict[str, Any]) -> str:
    counts = fleet["counts"]
    parts = [f"{counts[s]} {s}" for s in counts if counts[s]]
    return (f"{fleet['status'].upper()}: {len(fleet['hosts'])} hosts, {', '.join(parts)} "
            f"(exit code {fleet['exit_code']})")  # fmt: skip


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def md_text(text: str) -> str:
    """Inline text: Markdown's punctuation escaped, HTML's < and & as entities, one line."""
    text = html.escape(str(text), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}\n{text}\n{marks}"


def markdown(fleet: dict[str, Any]) -> str:
    checks = columns(fleet)
    title = f"jetson-env doctor: {md_text(pages.name_of(fleet['inventory']))}"
    out = [*pages.markdown_header(title, MEANINGS, md_text, summary(fleet)), "",
           "| " + " | ".join(["Host", "Platform", "Status", *map(md_text, checks)]) + " |",
           "|" + "---|" * (3 + len(checks))]  # fmt: skip
    for host in fleet["hosts"]:
        found = cells(host)
        row = [md_text(host["host"]), md_text(host["platform_label"]), host["status"]]
        row += [found[check][0] if check in found else "" for check in checks]
        out.append("| " + " | ".join(row) + " |")
    grid = fleet.get("engines")
    if grid:
        out += ["", "## Engine files", "",
                "| " + " | ".join(["Engine", *map(md_text, grid["hosts"])]) + " |",
                "|" + "---|" * (1 + len(grid["hosts"]))]  # fmt: skip
        for row in grid["rows"]:
            verdicts = [cell["verdict"] if cell else "-" for cell in row["cells"]]
            out.append("| " + " | ".join([md_text(row["path"]), *verdicts]) + " |")
        out.append("")
        out += [f"- {cell['verdict']}: {md_text(name)}: {md_text(row['path'])}: "
                f"{md_text(cell['reason'])}"
                for row in grid["rows"]
                for name, cell in zip(grid["hosts"], row["cells"], strict=True)
                if cell and cell["verdict"] != "loads"]  # fmt: skip
    fix, fixes = fleet.get("fix"), fleet.get("fixes") or []
    if fix or fixes:
        out += ["", "## Fixes"]
    if fix:
        out += ["", "Fix the fleet with the playbook's roles:", "", fence(fix["command"]), ""]
        out += [f"- {md_text(role['role'])} on {md_text(', '.join(role['hosts']))}"
                for role in fix["roles"]]  # fmt: skip
        out += ["", "Or by hand, each fix once, where to run it:"]
    for item in fixes:
        words = item["words"]
        text = pages.md_inline(item["command"], md_text) if words else fence(item["command"])
        out += ["", f"Fix {item['number']}, {md_text(fleet_fix_heading(item))}:", "", text]
        out += ["", pages.md_inline(item["note"], md_text)] if item.get("note") else []
    for host in fleet["hosts"]:
        report = host["report"]
        problems = [f for f in report["findings"] if f["status"] not in ("ok", "skip")]
        if not problems:
            continue
        out += ["", f"## {md_text(host['host'])}", ""]
        out += [f"- {f['status']}: {md_text(f['check'])}: {pages.md_inline(f['summary'], md_text)}"
                for f in problems]  # fmt: skip
    return "\n".join(out) + "\n"


# One host's page (doctor --report without -i): a finding's statuses, worst first, in the
# fleet's colours.
HOST_COLOURS = {status: COLOURS[status] for status in SEVERITY}
HOST_MEANINGS = {"crash": "a probe crashed or timed out", "fail": "broken: its fix is below",
                 "warn": "works, with a caveat", "ok": "works",
                 "skip": "not checked: the reason is beside it"}  # fmt: skip
HOST_COLUMNS = ("Area", "Check", "Status", "Finding", "Fix")


def host_summary(report: dict[str, Any]) -> str:
    """The terminal's last line (terminal.Terminal.findings)."""
    counts = report["counts"]
    parts = [f"{counts[s]} {SUMMARY_WORDS[s]}" for s in SEVERITY if counts[s]]
    return f"{report['status'].upper()}: {', '.join(parts)} (exit code {report['exit_code']})"


def host_render(report: dict[str, Any], suffix: str, paths: list[str | None],
                target: list[str]) -> str:  # fmt: skip
    """`doctor --report FILE` without -i: one host's report as its page, the findings by area
    with their statuses and each one's fix number, then every fix whole with the role that
    applies it too (`target`: fixing.target_options, as the terminal's). `paths`: files of
    this machine the report names (--engines folders, the bundle), named relative to the
    folder the page was made in."""
    report = pages.relative_paths(neutral(report), paths)
    roles = role_fixes(report, target)
    return (host_html(report, roles) if suffix.lower() == ".html"
            else host_markdown(report, roles))  # fmt: skip


def _numbers(report: dict[str, Any]) -> dict[str, int]:
    return {fix["command"]: fix["number"] for fix in report["fixes"]}


def host_html(report: dict[str, Any], roles: dict[str, tuple[str, str]]) -> str:
    e = html.escape
    numbers = _numbers(report)
    out = [*pages.header(f"jetson-env doctor: {checked(report)}", HOST_COLOURS, HOST_MEANINGS,
                         host_summary(report)),
           '<div class="scroll"><table id="findings"><thead><tr>',
           *(f"<th>{column}</th>" for column in HOST_COLUMNS[1:]),
           "</tr></thead><tbody>"]  # fmt: skip
    area = None
    for finding in report["findings"]:
        if finding["area"] != area:  # the area a row of its own: four columns fit a phone
            area = finding["area"]
            out.append(f'<tr><th colspan="{len(HOST_COLUMNS) - 1}">{e(area)}</th></tr>')
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
            out.append(f'<h4 id="fix-{fix["number"]}">Fix {fix["number"]}, '
                       f"{e(', '.join(fix['checks']))}</h4>{_fix_body(fix)}")  # fmt: skip
            if fix["command"] in roles:
                role, again = roles[fix["command"]]
                out.append(f'<p class="note">or the playbook\'s role {e(role)}:</p>'
                           f'<pre class="fix">{e(again)}</pre>')  # fmt: skip
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def host_markdown(report: dict[str, Any], roles: dict[str, tuple[str, str]]) -> str:
    numbers = _numbers(report)
    title = f"jetson-env doctor: {md_text(checked(report))}"
    out = [*pages.markdown_header(title, HOST_MEANINGS, md_text, host_summary(report)), "",
           "| " + " | ".join(HOST_COLUMNS) + " |", "|" + "---|" * len(HOST_COLUMNS)]  # fmt: skip
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
        if fix["command"] in roles:
            role, again = roles[fix["command"]]
            out += ["", f"or the playbook's role {md_text(role)}:", "", fence(again)]
    return "\n".join(out) + "\n"
