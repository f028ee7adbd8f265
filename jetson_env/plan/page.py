"""`jetson-env plan --report FILE`: the plan as a page for people, HTML or Markdown.

A grid of hosts x parts (worst host first, each cell the part's verdict), then each host's
parts with their reasons, then the commands. Self-contained like the doctor's fleet page
(jetson_env.fleet.page, whose escaping it uses): text from a host is never markup.
"""

from __future__ import annotations

import html
from typing import Any

from jetson_env.fleet.page import fence, md_text, neutral

COLOURS = {"survives": "#c8e6c9", "unknown": "#eeeeee", "reinstall": "#fff59d",
           "rebuild": "#ffcc80", "blocked": "#ef9a9a", "refused": "#e57373",
           "unreachable": "#b0bec5"}  # fmt: skip
STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
    "th,td{border:1px solid #999;padding:.3em .6em;text-align:left;vertical-align:top}"
    "pre{background:#f5f5f5;padding:.5em;white-space:pre-wrap}"
    + "".join(f".{verdict}{{background:{colour}}}" for verdict, colour in COLOURS.items())
)


def columns(plan: dict[str, Any]) -> list[str]:
    """Every part some host has, worst verdict first (the order the hosts list them)."""
    return list(dict.fromkeys(p["name"] for host in plan["hosts"] for p in host["parts"]))


def summary(plan: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in plan["counts"].items() if n)
    after = plan["after"]
    return (f"to {plan['to']} (JetPack {after['jetpack']}, CUDA {after['cuda']}, TensorRT "
            f"{after['tensorrt']}, Python {after['python']}, torch {after['torch']}): "
            f"{len(plan['hosts'])} hosts, {counts} (exit code {plan['exit_code']})")  # fmt: skip


def render(plan: dict[str, Any], suffix: str) -> str:
    plan = neutral(plan)  # the doctor's fleet page's rule: a host's control characters escaped
    return html_page(plan) if suffix.lower() == ".html" else markdown(plan)


def _why(host: dict[str, Any]) -> str:
    return host["refused"] or host["error"] or ""


def html_page(plan: dict[str, Any]) -> str:
    e = html.escape
    parts = columns(plan)
    title = f"jetson-env plan: {plan['inventory'] or 'this machine'} -> {plan['to']}"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(title)}</title><style>{STYLE}</style></head><body>",
           f"<h1>{e(title)}</h1>", f'<p id="summary">{e(summary(plan))}</p>',
           '<table id="grid"><thead><tr><th>Host</th><th>Platform</th><th>Status</th>',
           *(f"<th>{e(part)}</th>" for part in parts), "</tr></thead><tbody>"]  # fmt: skip
    for host in plan["hosts"]:
        found = {p["name"]: p for p in host["parts"]}
        out.append(
            f'<tr data-host="{e(host["host"])}"><td>{e(host["host"])}</td>'
            f"<td>{e(host['platform_label'])}</td>"
            f'<td class="{host["status"]}" title="{e(_why(host))}">{host["status"]}</td>'
        )
        for part in parts:
            cell = found.get(part)
            out.append(f'<td class="{cell["verdict"]}" title="{e(cell["reason"])}">'
                       f'{cell["verdict"]}</td>' if cell else "<td></td>")  # fmt: skip
        out.append("</tr>")
    out.append("</tbody></table>")
    for host in plan["hosts"]:
        out.append(f'<section class="host" data-host="{e(host["host"])}"><h2>{e(host["host"])}'
                   "</h2>")  # fmt: skip
        if _why(host):
            out.append(f'<p class="{host["status"]}">{e(_why(host))}</p>')
        out.append("<ul>")
        out += [f'<li class="{p["verdict"]}">{p["verdict"]}: {e(p["name"])} ({e(p["now"])} -> '
                f'{e(p["after"])}): {e(p["reason"])}</li>' for p in host["parts"]]  # fmt: skip
        out.append("</ul></section>")
    for when, title in (("before", "Before the upgrade, with the network"),
                        ("after", "After the upgrade or OTA, offline")):  # fmt: skip
        out.append(f"<h2>{title}</h2>")
        out += [f'<pre class="command">{e(c)}</pre>' for c in plan["commands"][when]]
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def markdown(plan: dict[str, Any]) -> str:
    parts = columns(plan)
    out = [f"# jetson-env plan: {md_text(plan['inventory'] or 'this machine')} -> {plan['to']}",
           "", md_text(summary(plan)), "",
           "| " + " | ".join(["Host", "Platform", "Status", *map(md_text, parts)]) + " |",
           "|" + "---|" * (3 + len(parts))]  # fmt: skip
    for host in plan["hosts"]:
        found = {p["name"]: p["verdict"] for p in host["parts"]}
        row = [md_text(host["host"]), md_text(host["platform_label"]), host["status"]]
        out.append("| " + " | ".join(row + [found.get(part, "") for part in parts]) + " |")
    for host in plan["hosts"]:
        out += ["", f"## {md_text(host['host'])}", ""]
        if _why(host):
            out += [md_text(_why(host)), ""]
        out += [
            f"- {p['verdict']}: {md_text(p['name'])} ({md_text(p['now'])} -> "
            f"{md_text(p['after'])}): {md_text(p['reason'])}"
            for p in host["parts"]
        ]
    for when, title in (("before", "Before the upgrade, with the network"),
                        ("after", "After the upgrade or OTA, offline")):  # fmt: skip
        out += ["", f"## {title}", ""]
        out += [fence(command) for command in plan["commands"][when]]
    return "\n".join(out) + "\n"
