"""`doctor --inventory` without test hosts: its usage errors (Ansible's own among them),
this machine as a host (Ansible's local connection), and the page's escaping of what
hosts say (the mixed fleet itself is tests/integration/test_doctor_fleet.py)."""

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from jetson_env.fleet import page as fleet_page
from jetson_env.fleet.report import fleet_fixes

HOSTILE = '<script>alert(1)</script> | `x` **b** "q" & \x1b[31m'


def doctor(where: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "doctor", *args],
        capture_output=True, text=True, cwd=where, timeout=60,
    )  # fmt: skip


def test_bad_input_is_exit_2_and_nothing_written(tmp_path: Path):
    (tmp_path / "fleet.yml").write_text("all:\n  hosts:\n    one: {ansible_connection: local}\n")
    (tmp_path / "broken.yml").write_text("all:\n  hosts: [oops\n")
    cases = {
        ("-i", "nowhere.yml"): "no inventory at nowhere.yml",  # -i is --inventory, as in Ansible
        ("--inventory", "fleet.yml", "--report", "fleet.pdf"): "must end in .html or .md",
        ("--inventory", "fleet.yml", "--report", "no/fleet.html"): "no folder no",
        ("--inventory", "fleet.yml", "--host", "root@h"): "exclude each other",
        ("--limit", "x86"): "go with --inventory",
        ("--inventory", "fleet.yml", "--forks", "0"): "positive whole number",
        ("--inventory", "broken.yml"): "cannot read the whole inventory broken.yml",
        ("--inventory", "fleet.yml", "--limit", "nomatch"): "Could not match supplied host",
        ("-i", "fleet.yml", "--fix", "cuda_env,no_such_role"): "no role no_such_role",
        ("-i", "fleet.yml", "--fix", "--json"): "--inventory --fix has no --json",
        ("-i", "fleet.yml", "--fix", "--playbook-vars", "[1]"): "must be a JSON object",
    }
    for args, message in cases.items():
        proc = doctor(tmp_path, *args)
        assert proc.returncode == 2, args
        assert message in proc.stderr, (args, proc.stderr)
        if "--json" in args:  # one document, also on failure (docs/json.md)
            assert json.loads(proc.stdout)["exit_code"] == 2
        else:
            assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.yml", "fleet.yml"]


def test_options_only_host_reads_are_refused_with_the_inventory(tmp_path: Path):
    """-i reaches hosts with the inventory's settings: --python, --identity, --password,
    --accept-new-host-key (and --bundle without --fix) would be ignored, so they are refused
    with the reason and the inventory variable to set instead; nothing runs."""
    (tmp_path / "fleet.yml").write_text("all:\n  hosts:\n    one: {ansible_connection: local}\n")
    (tmp_path / "id").write_text("not read\n")
    cases = {
        ("--python", "/usr/bin/python3"): "ansible_python_interpreter",
        ("--identity", "id"): "ansible_ssh_private_key_file",
        ("--password",): "ssh-agent",
        ("--accept-new-host-key",): "StrictHostKeyChecking=accept-new",
        ("--bundle", "bundle"): "goes with --fix",
    }
    for args, instead in cases.items():
        for command in (["doctor"], ["plan", "--to", "R36.4.3"]):
            if command == ["plan", "--to", "R36.4.3"] and args[0] == "--bundle":
                continue  # plan's --bundle names the bundle its commands print
            proc = subprocess.run(
                [sys.executable, "-m", "jetson_env.cli", *command, "-i", "fleet.yml", *args],
                capture_output=True, text=True, cwd=tmp_path, timeout=60,
            )  # fmt: skip
            said = proc.stderr
            assert proc.returncode == 2, (command, args, proc.stdout, said)
            assert instead in said, (command, args, said)
    for args in (("--python-version", "3.12"), ("--glibc", "2.36"),
                 ("--distribution", "debian/bookworm"), ("--cuda", "12.6")):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "jetson_env.cli", "bundle", "out", "-i", "fleet.yml", *args],
            capture_output=True, text=True, cwd=tmp_path, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert f"{args[0]} describes the --l4t/--x86 targets" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yml", "id"]


def test_this_machine_through_the_probe_action(tmp_path: Path):
    """Real Ansible, local connection: the probes run in the interpreter the inventory
    names; one that is not Python is that host's one finding, quoting what it said."""
    hosts = {
        "here": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "false": {"ansible_connection": "local", "ansible_python_interpreter": "/bin/false"},
    }
    (tmp_path / "fleet.yml").write_text(json.dumps({"all": {"hosts": hosts}}))

    proc = doctor(tmp_path, "-i", "fleet.yml", "--check", "platform", "--json")

    reports = {host["host"]: host["report"] for host in json.loads(proc.stdout)["hosts"]}
    assert reports["here"]["platform"]["python"]["executable"] == sys.executable, proc.stderr
    (finding,) = reports["false"]["findings"]
    assert finding["check"] == "interpreter"
    assert finding["summary"] == "/bin/false did not run the probes: it exited 1, printing nothing"
    statuses = {host["host"]: host["status"] for host in json.loads(proc.stdout)["hosts"]}
    assert statuses["false"] == "fail"  # reached: its interpreter is what fails
    assert proc.returncode == 3


def hostile_fleet() -> dict:
    finding = {"check": HOSTILE, "area": "target", "status": "fail", "summary": HOSTILE,
               "details": [], "remedy": f"echo {HOSTILE} ````",
               "playbook": {"role": HOSTILE, "tags": [HOSTILE], "vars": {}}}  # fmt: skip
    fix = {"number": 1, "checks": [HOSTILE], "command": finding["remedy"]}
    report = {"findings": [finding], "exit_code": 1, "fixes": [fix]}
    host = {"host": HOSTILE, "status": "fail", "platform_label": HOSTILE,
            "failing": [HOSTILE], "unmanaged": None, "report": report}  # fmt: skip
    return {"inventory": HOSTILE, "status": "fail", "exit_code": 1, "hosts": [host],
            "counts": {"unreachable": 0, "crash": 0, "fail": 1, "warn": 0, "ok": 0},
            **fleet_fixes(HOSTILE, None, [host])}  # fmt: skip


class Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs


def test_what_hosts_say_cannot_add_markup_to_the_page():
    page = fleet_page.render(hostile_fleet(), ".html")
    parsed = Elements()
    parsed.feed(page)
    assert "script" not in parsed.tags
    # The text survives, as text (control characters shown as the terminal shows them).
    assert ("data-host", fleet_page.neutral(HOSTILE)) in parsed.attributes
    assert "&lt;script&gt;" in page


def test_what_hosts_say_stays_text_in_markdown():
    page = fleet_page.render(hostile_fleet(), ".md")
    # A fence longer than the text's backticks, control characters as the terminal shows them.
    fenced = f"`````\necho {fleet_page.neutral(HOSTILE)} ````\n`````"
    assert fenced in page
    fix = fleet_page.neutral(hostile_fleet()["fix"]["command"])
    assert f"```\n{fix}\n```" in page  # the fleet's --fix line, as text in its fence
    assert "<script>" not in page.replace(fenced, "").replace(fix, "")
    assert "\x1b" not in page
    table = [line for line in page.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") == table[0].count(" | ") for line in table)


def test_quoted_spans_a_host_says_are_code_and_still_text():
    """`...` in a host's text is shown as code on the pages: escaped inside <code> in HTML,
    a code span in Markdown (whose content is never markup)."""
    fleet = hostile_fleet()
    quoted = "run `<img src=x onerror=alert(1)>` & `a|b` then"
    fleet["hosts"][0]["report"]["findings"][0]["summary"] = quoted
    page = fleet_page.render(fleet, ".html")
    parsed = Elements()
    parsed.feed(page)
    assert "img" not in parsed.tags
    assert "run <code>&lt;img src=x onerror=alert(1)&gt;</code> &amp; <code>a|b</code> then" in page
    markdown = fleet_page.render(fleet, ".md")
    assert "- fail: " in markdown
    assert "run `<img src=x onerror=alert(1)>` &amp; `a|b` then" in markdown
