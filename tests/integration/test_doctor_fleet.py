"""`jetson-env doctor --inventory`: a mixed fleet through real Ansible.

The fleet: the x86 host and the emulated Orin (reached with community.docker's
connection, their venv's Python as ansible_python_interpreter), a port on loopback
where nothing listens, and the sshd of test_doctor_ssh (a container on loopback)
behind a known_hosts that holds another key for it. Ansible runs from this venv
(the `ansible` test extra), with host key checking on, in a HOME of the test's own.
`--fix` across a fleet runs on a fresh x86 host of its own beside a down host.
"""

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
import yaml
from playbook_support import pip_version, remove_host, start_host, write_inventory
from referencing import Registry, Resource
from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import VENV, Host
from test_doctor_ssh import SSHHost, free_port, home, sshd  # noqa: F401 (fixtures)

from jetson_env import collection, matrix
from jetson_env import doctor as doctor_mod
from jetson_env.fleet import inventory as fleet_mod

pytestmark = pytest.mark.hosts

PYTHON = f"{VENV}/bin/python"
PROCESSES_SLEEPING_600 = "grep -alx 'sleep.600.' /proc/[0-9]*/cmdline 2>/dev/null"
DOCS = Path(__file__).parents[2] / "docs"
REPORT_SCHEMA = json.loads((DOCS / "doctor-report.schema.json").read_text())
FLEET_SCHEMA = json.loads((DOCS / "doctor-fleet.schema.json").read_text())


@pytest.fixture
def fleet(tmp_path: Path, x86_host: Host, orin_host: Host, sshd: SSHHost) -> Path:  # noqa: F811
    user_home = tmp_path / "home"
    (user_home / ".ssh").mkdir(parents=True, mode=0o700)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True
    )
    other = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    known_hosts = user_home / ".ssh" / "known_hosts"  # ssh's own ~ is the passwd entry's
    known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {other}\n")
    docker_host = {"ansible_connection": "community.docker.docker",
                   "ansible_python_interpreter": PYTHON}  # fmt: skip
    inventory = {
        "all": {
            "hosts": {
                "x86": {**docker_host, "ansible_host": x86_host.container},
                "orin": {**docker_host, "ansible_host": orin_host.container},
                "down": {"ansible_host": "127.0.0.1", "ansible_port": free_port()},
                "rekeyed": {
                    "ansible_host": "127.0.0.1",
                    "ansible_port": sshd.port,
                    "ansible_ssh_common_args": f"-o UserKnownHostsFile={known_hosts}",
                },
            },
            "vars": {"ansible_user": "root"},
        }
    }
    (tmp_path / "fleet.yml").write_text(yaml.safe_dump(inventory))
    return tmp_path


def doctor(where: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "--no-color", "doctor",
         "--inventory", "fleet.yml", "--quick", *args],
        capture_output=True, text=True, cwd=where, timeout=600, stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(where / "home"), "SSH_AUTH_SOCK": "", "COLUMNS": "200"},
    )  # fmt: skip


class Grid(HTMLParser):
    """The report page's grid: host -> check -> (status class, title); elements seen."""

    def __init__(self):
        super().__init__()
        self.cells: dict[str, dict[str, tuple[str, str]]] = {}
        self.host = None
        self.tags: set[str] = set()
        self.fixes: list[str] = []
        self.in_fix = False
        self.backgrounds: dict[str, str] = {}  # status -> colour the browser painted

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        if tag == "tr" and "data-host" in attrs:
            self.host = attrs["data-host"]
            self.cells[self.host] = {}
        elif tag == "td" and "data-check" in attrs and attrs.get("class"):
            self.cells[self.host][attrs["data-check"]] = (attrs["class"], attrs["title"])
            if "data-background" in attrs:
                self.backgrounds[attrs["class"]] = attrs["data-background"]
        self.in_fix = tag == "pre" and attrs.get("class") == "fix"

    def handle_data(self, data):
        if self.in_fix:
            self.fixes.append(data)
            self.in_fix = False


# Run in the browser on a copy of the page: each cell's colour as the browser computed it.
PAINTED = (
    "<script>for (const td of document.querySelectorAll('td[data-check]')) "
    "td.dataset.background = getComputedStyle(td).backgroundColor;</script>"
)


def in_a_browser(page: Path) -> Grid:
    """The page as headless Chromium loaded and laid it out (its DOM, colours added)."""
    copy = page.with_name("painted.html")
    copy.write_text(page.read_text().replace("</body>", PAINTED + "</body>"))
    dom = subprocess.run(
        [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
         "--dump-dom", copy.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    grid = Grid()
    grid.feed(dom)
    return grid


def test_a_mixed_fleet_is_one_summary_json_and_page(fleet: Path, sshd: SSHHost):  # noqa: F811
    proc = doctor(fleet, "--json", "--report", "fleet.html")

    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    registry = Registry().with_resource(REPORT_SCHEMA["$id"], Resource.from_contents(REPORT_SCHEMA))
    jsonschema.Draft202012Validator(FLEET_SCHEMA, registry=registry).validate(data)
    assert data["schema"] == 1 and data["kind"] == "fleet"
    hosts = {h["host"]: h for h in data["hosts"]}
    assert [h["host"] for h in data["hosts"]] == ["down", "rekeyed", "orin", "x86"]
    assert data["counts"] == {"unreachable": 2, "crash": 0, "fail": 2, "warn": 0, "ok": 0}
    assert proc.returncode == data["exit_code"] == 3
    assert hosts["down"]["status"] == "unreachable"
    (down,) = hosts["down"]["report"]["findings"]
    assert down["check"] == "connection" and "Connection refused" in down["summary"]
    (rekeyed,) = hosts["rekeyed"]["report"]["findings"]
    assert rekeyed["summary"].endswith("Host key verification failed.")
    assert "CHANGED" in rekeyed["remedy"] and f"ssh-ed25519 {sshd.fingerprint}" in rekeyed["remedy"]
    assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}' -f " in rekeyed["remedy"]
    assert down["remedy"] == "ansible down -i fleet.yml -m ansible.builtin.ping -vvv shows why"
    assert hosts["x86"]["platform_label"] == "x86_64"
    assert hosts["orin"]["platform_label"] == "L4T R36.4.3 / JetPack 6.2"
    for name in ("x86", "orin"):
        report = hosts[name]["report"]
        assert report["platform"]["python"]["executable"] == PYTHON
        assert hosts[name]["status"] == "fail" and hosts[name]["failing"]
        assert report["fixes"], name
    assert hosts["orin"]["report"]["platform"]["is_jetson"] is True

    page = Grid()
    page.feed((fleet / "fleet.html").read_text())
    assert not page.tags & {"script", "link", "img", "iframe"}  # self-contained, nothing runs
    assert set(page.cells) == set(hosts)
    assert page.cells["down"]["connection"][0] == "fail"
    for name in ("x86", "orin"):
        findings = hosts[name]["report"]["findings"]
        for check in hosts[name]["failing"]:
            status, title = page.cells[name][check]
            assert status in ("fail", "crash")
            assert title == "\n".join(f["summary"] for f in findings if f["check"] == check)
    every_fix = [f["command"] for f in data["fixes"] if not f["words"]]  # each once
    assert page.fixes == [data["fix"]["command"], *every_fix]

    if shutil.which("chromium") is None:
        pytest.skip("no chromium here (Debian: apt-get install chromium) to open the page in")
    shown = in_a_browser(fleet / "fleet.html")
    assert shown.cells == page.cells
    assert shown.backgrounds["fail"] == "rgb(239, 154, 154)"  # fleet.page.COLOURS, painted
    assert shown.backgrounds["ok"] == "rgb(200, 230, 201)"


def test_the_summary_is_worst_first_with_each_hosts_fixes(fleet: Path, sshd: SSHHost):  # noqa: F811
    proc = doctor(fleet, "--limit", "x86,down", "--report", "fleet.md")

    assert proc.returncode == 3, proc.stderr
    lines = proc.stdout.splitlines()
    rows = [line for line in lines if line.startswith("│")]
    assert rows[0].split("│")[1].strip() == "down"
    assert "UNREACHABLE" in rows[0] and "Connection refused" in proc.stdout
    assert any(r.split("│")[1].strip() == "x86" and "FAIL" in r for r in rows)
    here = next(i for i, line in enumerate(lines) if "here, for down: connection" in line)
    assert here < next(i for i, line in enumerate(lines) if ". on x86: " in line)
    assert lines[-1] == "UNREACHABLE: 2 hosts, 1 unreachable, 1 fail (exit code 3)"
    page = (fleet / "fleet.md").read_text()
    assert page.startswith("# jetson-env doctor: fleet.yml\n")
    assert "| down |  | unreachable | fail |" in page
    assert "orin" not in page and "rekeyed" not in page


@pytest.fixture
def twins(home: Path, x86_host: Host, sshd: SSHHost) -> Path:  # noqa: F811
    """A fleet whose two names reach the same x86 host (the same findings, the same fixes),
    a down host, and the sshd of test_doctor_ssh whose host key ssh does not know: Ansible's
    ssh reads known_hosts and the key from this HOME (ssh itself takes ~ from the password
    database, not HOME). The inventory's name has a space: commands quote it."""
    docker_host = {
        "ansible_connection": "community.docker.docker",
        "ansible_python_interpreter": PYTHON,
        "ansible_host": x86_host.container,
    }
    ssh_options = f"-o UserKnownHostsFile={home}/.ssh/known_hosts"
    inventory = {"all": {"hosts": {
        "x86": docker_host, "x86b": docker_host,
        "down": {"ansible_host": "127.0.0.1", "ansible_port": free_port()},
        "newkey": {"ansible_host": "127.0.0.1", "ansible_port": sshd.port,
                   "ansible_python_interpreter": PYTHON,
                   "ansible_ssh_common_args": ssh_options,
                   "ansible_ssh_private_key_file": f"{home}/.ssh/id_ed25519"},
    }, "vars": {"ansible_user": "root"}}}  # fmt: skip
    (home / "my fleet.yml").write_text(yaml.safe_dump(inventory))
    return home


def doctor_in(where: Path, *args: str, inventory: str = "my fleet.yml"):
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "--no-color", "doctor", "-i", inventory,
         "--quick", *args],
        capture_output=True, text=True, cwd=where, timeout=600, stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(where), "SSH_AUTH_SOCK": "", "COLUMNS": "200"},
    )  # fmt: skip


def test_the_fleet_fix_is_one_command_then_each_fix_once_with_its_hosts(
    twins: Path,
    sshd: SSHHost,  # noqa: F811
):
    """The same fix on two hosts is one fix naming both; the fleet's fixes start with the one
    `doctor -i INVENTORY --fix ROLES` line (the inventory quoted as given); an unreached
    host's fix is said to run here. The terminal, --json, the .md and the .html agree."""
    proc = doctor_in(twins, "--json", "--limit", "x86,x86b,down")

    data = json.loads(proc.stdout)
    registry = Registry().with_resource(REPORT_SCHEMA["$id"], Resource.from_contents(REPORT_SCHEMA))
    jsonschema.Draft202012Validator(FLEET_SCHEMA, registry=registry).validate(data)
    hosts = {h["host"]: h for h in data["hosts"]}
    assert hosts["x86"]["report"]["fixes"] and hosts["x86"]["status"] == "fail", proc.stderr
    needed = {f["playbook"]["role"] for f in hosts["x86"]["report"]["findings"]
              if f["remedy"] and f["playbook"]}  # fmt: skip
    roles = [role for role in collection.provision_roles() if role in needed]  # their order
    assert roles, "the x86 host has no fix a role applies"
    command = f"jetson-env doctor -i 'my fleet.yml' --limit x86,x86b,down --fix {','.join(roles)}"
    assert data["fix"] == {
        "command": command,
        "roles": [{"role": r, "hosts": ["x86", "x86b"]} for r in roles],
    }
    fixes = {f["command"]: f for f in data["fixes"]}
    for fix in hosts["x86"]["report"]["fixes"]:
        assert fixes[fix["command"]]["hosts"] == ["x86", "x86b"]
        assert fixes[fix["command"]]["where"] == "host"
    (down,) = hosts["down"]["report"]["fixes"]
    assert fixes[down["command"]]["hosts"] == ["down"]
    assert fixes[down["command"]]["where"] == "here"
    assert len(data["fixes"]) == len(hosts["x86"]["report"]["fixes"]) + 1

    shown = doctor_in(twins, "--limit", "x86,x86b,down", "--report", "fleet.md")
    page = doctor_in(twins, "--limit", "x86,x86b,down", "--report", "fleet.html")

    lines = shown.stdout.splitlines()
    lead = lines.index("Fix the fleet with the playbook's roles:")
    assert lines[lead + 1] == command
    assert not any(line.startswith("Fixes for ") for line in lines)  # per host, ungrouped
    first = hosts["x86"]["report"]["fixes"][0]
    heading = f"on x86, x86b: {', '.join(fixes[first['command']]['checks'])}"
    at = next(i for i, line in enumerate(lines) if heading in line)
    assert lines[at + 1] == first["command"] and lead < at
    assert any(line.endswith(f"here, for down: {', '.join(down['checks'])}:") for line in lines)
    markdown = (twins / "fleet.md").read_text()
    assert f"```\n{command}\n```" in markdown
    assert "Fix 1, here, for down: connection:" in markdown  # reach it first
    assert "Fix 2, on x86, x86b: " in markdown
    assert "Fixes for" not in markdown
    grid = Grid()
    grid.feed((twins / "fleet.html").read_text())
    assert grid.fixes[0] == command
    assert grid.fixes[1:] == [f["command"] for f in data["fixes"] if not f["words"]]
    assert page.returncode == shown.returncode == proc.returncode == 3


def test_an_unknown_host_key_in_a_fleet_gets_its_fingerprint_and_the_command(
    twins: Path,
    sshd: SSHHost,  # noqa: F811
):
    """ssh refuses a host key it does not know (host keys stay verified); the report gives
    the key's real fingerprint, where to compare it, and the exact command that records that
    key with the real address; run as printed, the host is reached next time."""
    proc = doctor_in(twins, "--json", "--limit", "newkey", "--check", "platform")

    (finding,) = json.loads(proc.stdout)["hosts"][0]["report"]["findings"]
    remedy = finding["remedy"]
    assert "Host key verification failed" in finding["summary"]
    assert f"ssh-ed25519 {sshd.fingerprint}" in remedy, remedy
    assert "ADDRESS" not in remedy and "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub" in remedy
    record = next(part for part in remedy.split("`") if part.startswith("printf "))
    name = f"[127.0.0.1]:{sshd.port}"
    assert f"{name} {sshd.host_key}" in record
    assert remedy.endswith("then `jetson-env doctor -i 'my fleet.yml' --limit newkey`")
    assert not (twins / ".ssh" / "known_hosts").exists()  # nothing recorded by the doctor

    subprocess.run(
        ["sh", "-c", record], check=True, cwd=twins, env={**os.environ, "HOME": str(twins)}
    )
    again = doctor_in(twins, "--json", "--limit", "newkey", "--check", "platform")

    host = json.loads(again.stdout)["hosts"][0]
    assert host["status"] != "unreachable", host["report"]["findings"]
    assert host["report"]["platform"]["python"]["executable"] == PYTHON


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word (a hung sshd)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    thread = threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    for connection in held:
        connection.close()


def test_a_crash_and_a_silent_host(tmp_path: Path, x86_host: Host, silent_port: int):
    """A torch whose import segfaults ends the shared framework process: the probes after
    it run in a fresh process on the host (the launcher, in the same task), as a local run
    reruns them; a host that accepts and stays silent is one row once Ansible's timeout is
    over."""
    site = x86_host.exec(
        [PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    )
    torch = f"{site.stdout.strip()}/torch"
    x86_host.exec(["sh", "-c", f"mkdir {torch} && echo 'import os, signal; "
                   f"os.kill(os.getpid(), signal.SIGSEGV)' > {torch}/__init__.py"])  # fmt: skip
    (tmp_path / "home").mkdir()
    inventory = {"all": {"hosts": {
        "x86": {"ansible_connection": "community.docker.docker",
                "ansible_host": x86_host.container, "ansible_python_interpreter": PYTHON},
        "silent": {"ansible_host": "127.0.0.1", "ansible_port": silent_port},
    }}}  # fmt: skip
    (tmp_path / "fleet.yml").write_text(yaml.safe_dump(inventory))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "jetson_env.cli", "doctor", "--inventory", "fleet.yml",
             "--check", "torch", "--check", "tensorrt-python", "--json"],
            capture_output=True, text=True, cwd=tmp_path, timeout=600,
            env={**os.environ, "HOME": str(tmp_path / "home"), "ANSIBLE_TIMEOUT": "5"},
        )  # fmt: skip
    finally:
        x86_host.exec(["rm", "-rf", torch])

    data = json.loads(proc.stdout)
    hosts = {h["host"]: h for h in data["hosts"]}
    (silent,) = hosts["silent"]["report"]["findings"]
    assert hosts["silent"]["status"] == "unreachable"
    assert "timed out" in silent["summary"], silent["summary"]
    findings = {f["check"]: f for f in hosts["x86"]["report"]["findings"]}
    assert findings["torch"]["status"] == "crash"
    assert findings["torch"]["summary"] == "probe 'torch' was killed by SIGSEGV"
    assert findings["tensorrt-python"]["status"] != "crash", findings["tensorrt-python"]
    assert hosts["x86"]["report"]["probes"]["tensorrt_bindings"]["error"] is None
    assert proc.returncode == 3


@pytest.mark.parametrize("end", list(ANSIBLE_ENDS), ids=lambda end: f"ansible-{end}")
def test_the_probe_action_on_each_ansible_end(
    tmp_path: Path, x86_host: Host, end: str, monkeypatch: pytest.MonkeyPatch
):
    """The jetson_env_probe action on the newest and the oldest ansible-core: it asks
    Ansible for the host's Python as a module would get it (here, with no
    ansible_python_interpreter, Ansible's discovery finds Debian's python3), and the
    launcher ends a probe that hangs at the probe's own timeout (an nvidia-smi that never
    answers: platform's call waits), not at its process's budget (every light probe's
    timeout added up, 5 s x 7 + 30 s); the rest of that process runs in a fresh one, in
    the same task. /etc/nv_tegra_release is a FIFO: read bounded, it is named, not waited
    on."""
    ansible = ANSIBLE_ENDS[end].ensure()
    monkeypatch.setattr(
        collection, "ansible_command", lambda name="ansible-playbook": str(ansible.bin(name))
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    inventory = {"all": {"hosts": {"x86": {"ansible_connection": "community.docker.docker",
                                           "ansible_host": x86_host.container}}}}  # fmt: skip
    (tmp_path / "fleet.yml").write_text(yaml.safe_dump(inventory))
    nvidia_smi = "/usr/local/bin/nvidia-smi"
    hang = "#!/bin/sh\nexec sleep 600\n"
    x86_host.exec(["sh", "-c", f"mkfifo /etc/nv_tegra_release && printf %s {shlex.quote(hang)} "
                   f"> {nvidia_smi} && chmod +x {nvidia_smi}"])  # fmt: skip
    try:
        started = time.monotonic()
        checks = doctor_mod.select(None, quick=True)
        fleet = fleet_mod.run(str(tmp_path / "fleet.yml"), None, matrix.load(), checks, timeout=5)
        report = fleet.reports["x86"]
        seconds = time.monotonic() - started
    finally:
        x86_host.exec(["rm", "-f", "/etc/nv_tegra_release", nvidia_smi])

    assert report.results["platform"].error == "probe 'platform' timed out after 5s"
    processes = x86_host.exec(["sh", "-c", PROCESSES_SLEEPING_600], check=False)
    assert processes.stdout == "", "the hung probe's nvidia-smi was left running"
    python = report.results["pymodules"].data["python"]
    assert python["executable"].startswith("/usr/bin/python3"), python  # not the host's venv
    assert report.results["docker"].ok and report.results["packages"].ok
    assert seconds < 35 + 30, f"{seconds:.0f}s: the hung probe waited for its process's budget"


def test_fix_across_the_fleet(tmp_path: Path):
    """`-i fleet.yml --fix`: per host, --fix's flow for one host through the same inventory.
    A fresh x86 host without termcolor (Debian's Python) gets the python_base role: the plan
    first, refused without --yes and a terminal, then applied and checked again; a down host
    is reported and left; the exit code is the worst host's after the fix."""
    host = start_host("x86-debian12", "fleet-fix")
    try:
        (tmp_path / "home").mkdir()
        down = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1",
                "ansible_port": free_port()}  # fmt: skip
        write_inventory(tmp_path / "fleet.yml", {"fixme": {"ansible_host": host.container},
                                                 "down": down}, {})  # fmt: skip

        def fix(*args: str) -> subprocess.CompletedProcess:
            return doctor(tmp_path, "--check", "termcolor", "--fix", *args)

        unasked = fix()

        assert unasked.returncode == 2, unasked.stdout + unasked.stderr
        assert "--fix: down was not reached, nothing to fix there" in unasked.stdout
        assert "--fix: role python_base on fixme fixes termcolor" in unasked.stdout
        assert "--check --diff" in unasked.stderr  # the plan was shown
        assert "no terminal to ask" in unasked.stderr and "--yes" in unasked.stderr
        assert pip_version(host, "termcolor") is None

        fixed = fix("--yes")

        assert fixed.returncode == 3, fixed.stdout + fixed.stderr
        assert "fixme: termcolor: fail -> ok" in fixed.stdout
        assert "--fix: down was not reached, nothing to fix there" in fixed.stdout
        inventory = "fleet.yml"  # as the user gave it: Ansible runs in the user's folder
        playbook = "jetson_env.jetson.provision"
        assert f"ansible-playbook {playbook} -i {inventory} --limit fixme " in fixed.stderr
        assert "termcolor: fixed (python_base)" in fixed.stdout  # the summary per finding
        assert "--limit down" not in fixed.stderr
        assert fixed.stdout.splitlines()[-1] == (
            "UNREACHABLE: 2 hosts, 1 unreachable, 1 ok (exit code 3)"
        )
        assert pip_version(host, "termcolor")

        again = fix("--yes", "--limit", "fixme")

        assert again.returncode == 0, again.stdout + again.stderr
        assert "--fix: nothing to do on fixme" in again.stdout
        assert "ansible-playbook" not in again.stderr
    finally:
        remove_host(host)
