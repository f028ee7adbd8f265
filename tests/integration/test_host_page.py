"""Issue 59, item 7: a page for a single host. `doctor --report FILE` without -i (the
console script, from an unrelated folder) writes this machine's report as a page: the
verdict before the legend, every finding with its status and the number of its fix, every
fix whole; opened in headless Chromium (tests/support/browser.py) at 390 px (a phone: a frame
in Chromium's narrowest window, 500 px) and at 1280 and 1920, and the Markdown page
saying the same. No Docker, no Ansible."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.browser import WIDTHS, show

JETSON_ENV = str(Path(sys.executable).with_name("jetson-env"))
STATUSES = ["crash", "fail", "warn", "ok", "skip"]  # a finding's, worst first


def doctor(where: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([JETSON_ENV, "doctor", "--quick", *args], cwd=where, text=True,
                          capture_output=True, timeout=600, stdin=subprocess.DEVNULL,
                          env={**os.environ, "NO_COLOR": "1"})  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """one.html and one.md of this machine, report.json beside them."""
    where = tmp_path_factory.mktemp("host-page")
    report = doctor(where, "--json")
    (where / "report.json").write_text(report.stdout)
    for name in ("one.html", "one.md"):
        done = doctor(where, "--report", name)
        assert done.returncode == report.returncode, done.stderr
        assert f"report written to {name}" in done.stderr.splitlines()
    return where


@pytest.mark.parametrize("width", WIDTHS)
def test_the_hosts_page_in_a_browser(made: Path, width: int):
    report = json.loads((made / "report.json").read_text())
    shown = show(made / "one.html", width, STATUSES)
    assert shown.scroll_width <= shown.width == width, "the page is wider than the window"
    python = report["platform"]["python"]  # the interpreter checked, as the terminal heads it
    assert shown.title == (f"jetson-env doctor: {report['target']}: {python['executable']}, "
                           f"Python {python['version']}")  # fmt: skip
    assert [status for status, _ in shown.legend] == STATUSES
    legend = dict(shown.legend)
    for status, colours in shown.painted.items():
        assert set(colours) <= {legend[status]}, (status, colours)
    counts = report["counts"]
    verdict = f"{report['status'].upper()}: {counts['fail']} failed"
    assert shown.text.index(verdict) < shown.text.index("a probe crashed or timed out")
    assert f"(exit code {report['exit_code']})" in shown.text
    for finding in report["findings"]:
        assert finding["summary"] in " ".join(shown.text.split()) or "`" in finding["summary"]
    pasted = {fix["command"] for fix in report["fixes"] if not fix["words"]}
    assert pasted and pasted <= set(shown.commands)  # every command block a command, whole
    fixed = {fix["command"] for fix in report["fixes"]}
    roles = {f["playbook"]["role"] for f in report["findings"]
             if f.get("playbook") and f["remedy"] in fixed}  # fmt: skip
    by_role = [shlex.split(c) for c in set(shown.commands) - pasted]  # the roles' --fix lines
    assert sorted(c[-1] for c in by_role) == sorted(roles), by_role
    assert all(Path(c[0]).name == "jetson-env" and c[1:2] + c[-2:-1] == ["doctor", "--fix"]
               for c in by_role), by_role  # fmt: skip
    assert shown.empty == []


def test_the_hosts_markdown_page_says_the_same(made: Path):
    report = json.loads((made / "report.json").read_text())
    lines = (made / "one.md").read_text().splitlines()
    assert lines[0].startswith("# jetson-env doctor: ")
    verdict = next(n for n, line in enumerate(lines) if line.startswith(report["status"].upper()))
    legend = next(n for n, line in enumerate(lines) if line.startswith("Statuses, worst first:"))
    assert verdict < legend
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(report["findings"])
    assert [row.split(" | ")[2] for row in rows] == [f["status"] for f in report["findings"]]
    for fix in report["fixes"]:
        assert any(line.startswith(f"Fix {fix['number']}, ") for line in lines), fix
        if not fix["words"]:
            assert fix["command"] in lines


def test_a_report_the_doctor_cannot_write_is_said_before_any_probe(tmp_path: Path):
    """The same rules as for a fleet's page: a name that is not .html or .md, a missing
    folder; and --fix for one host has no page (its plan and its run are the output)."""
    for args, said in (
        (["--report", "one.txt"],
         "error: --report one.txt: the file name must end in .html or .md"),
        (["--report", "no/one.html"], "error: --report no/one.html: no folder no"),
        (["--fix", "--report", "one.html"], "error: --report with --fix goes with --inventory"),
    ):  # fmt: skip
        done = doctor(tmp_path, *args)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr.splitlines()[0] == said
        assert "probing" not in done.stderr and list(tmp_path.iterdir()) == []
