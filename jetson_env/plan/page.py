"""`jetson-env plan --report FILE`: the plan as a page for people, HTML or Markdown.

A grid of hosts x parts (worst host first, each cell the part's verdict), then each host's
parts with their reasons, then the commands. Self-contained like the doctor's fleet page
(jetson_env.fleet.page, whose escaping it uses): text from a host is never markup.
"""

from __future__ import annotations

import html
from typing import Any

from jetson_env import pages
from jetson_env.fleet.page import fence, md_text, neutral

# Worst first (assembly.HOST_STATUSES), darker the worse.
COLOURS = {"unreachable": "#7f0000", "refused": "#c62828", "blocked": "#ef9a9a",
           "rebuild": "#ffcc80", "reinstall": "#fff59d", "unknown": "#eeeeee",
           "survives": "#c8e6c9"}  # fmt: skip
MEANINGS = {"unreachable": "not reached: no plan", "refused": "no plan for this host: why below",
            "blocked": "the upgrade cannot go on as it is", "rebuild": "to build again after it",
            "reinstall": "to install again after it", "unknown": "not read: why below",
            "survives": "nothing it depends on changes"}  # fmt: skip
SECTIONS = (("before", "Before the upgrade, with the network"),
            ("after", "After the upgrade or OTA, offline"))  # fmt: skip


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
    # The doctor's fleet page's rules: a host's control characters escaped; the inventory and
    # the bundle, files of this machine, named relative to the folder the plan was made in.
    plan = pages.relative_paths(neutral(plan), [plan["inventory"], plan["bundle"]])
    return html_page(plan) if suffix.lower() == ".html" else markdown(plan)


def _why(host: dict[str, Any]) -> str:
    return host["refused"] or host["error"] or ""


def _title(plan: dict[str, Any]) -> str:
    return f"jetson-env plan: {pages.name_of(plan['inventory'])} -> {plan['to']}"


def html_page(plan: dict[str, Any]) -> str:
    e = html.escape
    parts = columns(plan)
    out = [*pages.header(_title(plan), COLOURS, MEANINGS, summary(plan)),
           '<div class="scroll"><table id="grid"><thead><tr><th>Host</th><th>Platform</th>'
           "<th>Status</th>",
           *(f'<th class="column"><span>{e(part)}</span></th>' for part in parts),
           "</tr></thead><tbody>"]  # fmt: skip
    for host in plan["hosts"]:
        found = {p["name"]: p for p in host["parts"]}
        out.append(
            f'<tr data-host="{e(host["host"])}"><td>{e(host["host"])}</td>'
            f'<td class="label">{e(host["platform_label"])}</td>'
            f'<td class="{host["status"]}" title="{e(_why(host))}">{host["status"]}</td>'
        )
        for part in parts:
            cell = found.get(part)
            out.append(f'<td class="{cell["verdict"]}" title="{e(cell["reason"])}">'
                       f'{cell["verdict"]}</td>' if cell else "<td></td>")  # fmt: skip
        out.append("</tr>")
    out.append("</tbody></table></div>")
    for host in plan["hosts"]:
        out.append(f'<section class="host" data-host="{e(host["host"])}"><h2>{e(host["host"])}'
                   "</h2>")  # fmt: skip
        if _why(host):
            out.append(f'<p><span class="status {host["status"]}">{host["status"]}</span> '
                       f"{pages.inline(_why(host))}</p>")  # fmt: skip
        if host["parts"]:
            out.append("<ul>")
            out += [f'<li><span class="status {p["verdict"]}">{p["verdict"]}</span> '
                    f'{e(p["name"])} ({e(p["now"])} -> {e(p["after"])}): '
                    f'{pages.inline(p["reason"])}</li>' for p in host["parts"]]  # fmt: skip
            out.append("</ul>")
        out.append("</section>")
    for when, title in SECTIONS:
        if plan["commands"][when]:
            out.append(f"<section><h2>{title}</h2>")
            out += [f'<pre class="command">{e(c)}</pre>' for c in plan["commands"][when]]
            out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def markdown(plan: dict[str, Any]) -> str:
    parts = columns(plan)
    title = f"jetson-env plan: {md_text(pages.name_of(plan['inventory']))} -> {plan['to']}"
    out = [*pages.markdown_header(title, MEANINGS, md_text, summary(plan)), "",
           "| " + " | ".join(["Host", "Platform", "Status", *map(md_text, parts)]) + " |",
           "|" + "---|" * (3 + len(parts))]  # fmt: skip
    for host in plan["hosts"]:
        found = {p["name"]: p["verdict"] for p in host["parts"]}
        row = [md_text(host["host"]), md_text(host["platform_label"]), host["status"]]
        out.append("| " + " | ".join(row + [found.get(part, "") for part in parts]) + " |")
    for host in plan["hosts"]:
        out += ["", f"## {md_text(host['host'])}", ""]
        if _why(host):
            out += [f"{host['status']}: {pages.md_inline(_why(host), md_text)}"]
        out += [
            f"- {p['verdict']}: {md_text(p['name'])} ({md_text(p['now'])} -> "
            f"{md_text(p['after'])}): {pages.md_inline(p['reason'], md_text)}"
            for p in host["parts"]
        ]
    for when, title in SECTIONS:
        if plan["commands"][when]:
            out += ["", f"## {title}"]
            out += [line for command in plan["commands"][when] for line in ("", fence(command))]
    return "\n".join(out) + "\n"
