"""The report pages as people see them: `doctor -i INV --report` and `plan -i INV --report`
made by the commands (real Ansible) on a fleet of this machine (local connection) and a
port where nothing listens, the inventory given by its absolute path, then opened in
headless Chromium (tests/support/browser.py) at 390 (a phone), 1280 and 1920 px wide. No
Docker."""

import json
import os
import re
import socket
import subprocess
import sys
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from support.browser import WIDTHS, grid_on_screen, luminance, show

FLEET_STATUSES = ["unreachable", "crash", "fail", "warn", "ok", "skip"]  # worst first
PLAN_STATUSES = ["unreachable", "refused", "blocked", "rebuild", "reinstall", "unknown",
                 "survives"]  # fmt: skip
# The statuses that call for action: each is painted darker than the one after it.
ALARMS = {"doctor": FLEET_STATUSES[:4], "plan": PLAN_STATUSES[:5]}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def jetson_env(where: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *args], capture_output=True, text=True,
        cwd=where, timeout=600, stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(where / "home"), "SSH_AUTH_SOCK": "", "NO_COLOR": "1",
             "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fleet.html/.md and plan.html/.md of devbox (this machine) and jetson3 (not there);
    doctor.json beside them; the days the commands ran in, in days.txt."""
    where = tmp_path_factory.mktemp("pages")
    (where / "home").mkdir()
    hosts = {
        "devbox": {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"},
        "jetson3": {"ansible_host": "127.0.0.1", "ansible_port": free_port()},
    }
    inventory = where / "fleet.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    before = datetime.now(timezone.utc).date().isoformat()
    doctor = jetson_env(where, "doctor", "-i", str(inventory), "--json", "--report", "fleet.html")
    assert doctor.returncode == 3, doctor.stderr
    (where / "doctor.json").write_text(doctor.stdout)
    plan = ("plan", "-i", str(inventory), "--to", "R36.5.0", "--report")
    for args in (("doctor", "-i", str(inventory), "--report", "fleet.md"),
                 (*plan, "plan.html"), (*plan, "plan.md")):  # fmt: skip
        proc = jetson_env(where, *args)
        assert proc.returncode == 3, proc.stderr
    after = datetime.now(timezone.utc).date().isoformat()
    (where / "days.txt").write_text(f"{before} {after}")
    return where


def made_on(made: Path, text: str) -> bool:
    """The page names the day it was made and jetson-env's version."""
    days = (made / "days.txt").read_text().split()
    return any(day in text for day in days) and f"jetson-env {version('jetson-env')}" in text


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", ["doctor", "plan"])
def test_the_html_page_in_a_browser(made: Path, kind: str, width: int):
    page = made / ("fleet.html" if kind == "doctor" else "plan.html")
    statuses = FLEET_STATUSES if kind == "doctor" else PLAN_STATUSES
    html = page.read_text()

    shown = show(page, width, statuses)

    assert shown.scroll_width <= shown.width == width, "the page is wider than the window"
    grid_on_screen(shown)
    assert [status for status, _ in shown.legend] == statuses  # worst first, every one
    assert html.index('id="summary"') < html.index('id="legend"'), "the verdict, then the legend"
    legend = dict(shown.legend)
    shades = [luminance(legend[status]) for status in ALARMS[kind]]
    assert shades == sorted(shades) and len(set(shades)) == len(shades), legend
    for status, colours in shown.painted.items():
        assert set(colours) <= {legend[status]}, (status, colours)
    assert shown.empty == []
    assert made_on(made, shown.text)
    to = " -> R36.5.0" if kind == "plan" else ""
    assert shown.title == f"jetson-env {kind}: fleet.yml{to}"
    assert str(made) not in html, "a path of the machine that made the page"
    assert "`" not in shown.text, "literal backticks: code is shown as code"
    assert not re.search(r"<(script|link|img|iframe)\b|url\(|@import", html)  # self-contained
    if kind == "doctor":
        data = json.loads((made / "doctor.json").read_text())
        # The fleet's --fix line, then each fix once (grouped across hosts); the page names
        # the inventory as the folder it was made in sees it, fleet.yml.
        fixes = [*([data["fix"]] if data["fix"] else []), *data["fixes"]]
        pasted = {fix["command"].replace(f"{made}/", "") for fix in fixes if not fix.get("words")}
        assert set(shown.commands) == pasted  # every command block holds a command, whole
        assert "smoke" in shown.text and "unreachable" in shown.text


@pytest.mark.parametrize("kind", ["doctor", "plan"])
def test_the_markdown_page_says_the_same(made: Path, kind: str):
    page = (made / ("fleet.md" if kind == "doctor" else "plan.md")).read_text()
    statuses = FLEET_STATUSES if kind == "doctor" else PLAN_STATUSES

    lines = page.splitlines()
    title = f"# jetson-env {kind}: fleet.yml" + (" -> R36.5.0" if kind == "plan" else "")
    assert lines[0] == title
    assert made_on(made, page)
    assert str(made) not in page
    legend = next(line for line in lines if line.startswith("Statuses, worst first:"))
    assert re.findall(r"\*\*([a-z]+)\*\*", legend) == statuses
    assert "(exit code 3\\)" in lines[lines.index(legend) - 2]  # the verdict, then the legend
    fenced, headings = False, []
    for n, line in enumerate(lines):
        fenced ^= line.startswith("```")  # a command's own "#" is no heading
        if line.startswith("#") and not fenced:
            headings.append((n, len(line) - len(line.lstrip("#"))))
    for (n, level), (m, next_level) in zip(headings, [*headings[1:], (len(lines), 1)], strict=True):
        if next_level <= level:
            assert any(line.strip() for line in lines[n + 1 : m]), f"empty section {lines[n]}"
