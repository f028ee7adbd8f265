"""Hostile input, round 5 (issue 58): what a fleet host reports about its own Python and its
facts is data, never the fleet's crash; every read is bounded and nothing waits for ever.

Real Ansible (local connection) runs each case's host, whose interpreter is a stand-in that
says what a hostile host would: a Python version that is no version, module facts of another
shape, bytes that are not UTF-8. The real CLI each time, with test_doctor_hostile's promises
(no traceback, the documented exit code, a bounded time, nothing left running).
"""

from __future__ import annotations

import json
import os
import pty
import shlex
import signal
import sys
import time
import venv
from pathlib import Path

import pytest
from test_doctor_hostile import (  # noqa: F401 (venv_python: a fixture)
    Run,
    doctor,
    leftovers,
    stand_in,
    venv_python,
)

MODULE_VERSION = "import platform; print(platform.python_version())"
# What a host's Python may say its version is (the cases), and how it is shown.
VERSIONS = {
    "garbage": ("garbage", "'garbage'"),
    "lines": ("3.10\n3.6", "'3.10\\n3.6'"),
    "long-number": ("1" * 100_000, "(cut at 80 of 100000 characters)"),
    "escapes": ("3.6\x1b]0;PWN\x07", "'3.6\\x1b]0;PWN\\x07'"),
    "full-width": ("\uff13.\uff16", "'\\uff13.\\uff16'"),
    "arabic-indic": ("3.\u0661\u0661.0", "'3.\\u0661\\u0661.0'"),
}


def module_python(folder: Path, version: str, otherwise: str = "") -> str:
    """A host's Python for Ansible's modules that says `version` when asked it (the probe
    action's question), and runs `otherwise` (default: is this interpreter) for the rest."""
    said = folder / "version.txt"
    folder.mkdir(parents=True, exist_ok=True)
    said.write_text(version + "\n")
    otherwise = otherwise or f'exec {sys.executable} "$@"'
    return stand_in(folder, f'if [ "$1" = -c ] && [ "$2" = {shlex.quote(MODULE_VERSION)} ]; then '
                    f"cat {shlex.quote(str(said))}; exit 0; fi\n{otherwise}")  # fmt: skip


def inventory(folder: Path, **variables: str) -> Path:
    path = folder / "fleet.yml"
    host = {"ansible_connection": "local", **variables}
    path.write_text(json.dumps({"all": {"hosts": {"odd": host}}}))
    return path


def odd_python_fleet(folder: Path, version: str) -> Path:
    """The probes run in a real Python (jetson_facts_python), Ansible's modules in one that
    says its version is `version`."""
    python = module_python(folder / "bin", version)
    return inventory(folder, jetson_facts_python=sys.executable, ansible_python_interpreter=python)


@pytest.mark.parametrize("case", list(VERSIONS))
def test_a_hosts_python_version_that_is_no_version_is_that_hosts_finding(tmp_path, case):
    """The host is unmanaged (no role runs there from here), with what it said, escaped."""
    version, shown = VERSIONS[case]
    fleet = odd_python_fleet(tmp_path, version)
    run = doctor("--json", "-i", str(fleet), "--check", "platform", exit_code=0)
    (host,) = json.loads(run.stdout)["hosts"]
    said = host["unmanaged"]
    assert said.startswith("odd runs Ansible's modules with a Python that says its version is ")
    assert shown in said and "which is no Python version" in said, said
    assert "\x1b" not in said and "\n" not in said and len(said) < 600
    assert "ansible_python_interpreter" in said


@pytest.mark.parametrize("command", [("doctor", "--check", "platform"),
                                     ("doctor", "--check", "platform", "--fix"),
                                     ("doctor", "--check", "platform", "--engines", "{tmp}"),
                                     ("plan", "--to", "R36.4.3", "--json")],
                         ids=["doctor", "fix", "engines", "plan-json"])  # fmt: skip
def test_every_fleet_command_reads_the_version_as_data(tmp_path, command):
    version, shown = VERSIONS["long-number"]
    fleet = odd_python_fleet(tmp_path, version)
    words = [word.replace("{tmp}", str(tmp_path)) for word in command]
    # doctor: the host is healthy; plan: an x86 host has no plan to an L4T release (2)
    run = Run([*words[:1], "-i", str(fleet), *words[1:]]).finish(2 if words[0] == "plan" else 0)
    if words[0] == "plan":
        (host,) = json.loads(run.stdout)["hosts"]
        assert shown in host["unmanaged"]
    else:
        assert "no Python version" in run.stdout.replace("\n", " ")


# Module facts of another shape than the facts module's, as a host's Python may print them.
ODD_FACTS = {
    "platform-list": {"jetson_env_platform": [], "jetson_env_python": {}, "jetson_env_cuda": {}},
    "python-text": {"jetson_env_platform": {"machine": "x86_64"}, "jetson_env_python": "3.10",
                    "jetson_env_cuda": {}},
}  # fmt: skip


@pytest.mark.parametrize("case", list(ODD_FACTS))
def test_bundle_reads_a_hosts_facts_of_another_shape_as_its_error(tmp_path, case):
    result = json.dumps({"changed": False, "ansible_facts": ODD_FACTS[case]})
    python = stand_in(tmp_path / "bin", f"cat >/dev/null\necho {shlex.quote(result)}")
    fleet = inventory(tmp_path, ansible_python_interpreter=python)
    run = Run(["bundle", str(tmp_path / "b"), "-i", str(fleet), "--roles", "python_base",
               "--no-controller"])  # fmt: skip
    run.finish(2)
    assert "host odd reported facts of another shape than jetson-env's" in run.stderr
    assert "no bundle was made" in run.stderr and not (tmp_path / "b" / "manifest.json").exists()


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_a_fleet_report_is_written_whatever_bytes_a_host_sent(tmp_path, suffix):
    """CUDA_HOME of bytes that are not UTF-8: the cuda probe's JSON carries them as lone
    surrogates (\\udcff), which a UTF-8 file cannot hold; the report shows them escaped."""
    root = tmp_path.joinpath("cuda\udcff")
    (root / "bin").mkdir(parents=True)
    fleet = inventory(tmp_path, ansible_python_interpreter=sys.executable)
    report = tmp_path / f"fleet{suffix}"
    Run(["doctor", "-i", str(fleet), "--check", "cuda", "--report", str(report)],
        env={"CUDA_HOME": str(root)}).finish(0)  # fmt: skip
    page = report.read_text(encoding="utf-8")
    assert "cuda\\udcff" in page


# ---- (4) reads without a bound --------------------------------------------------------------

FLOOD_MEMORY = 1536 * 2**20  # bytes of address space for jetson-env and the Ansible it starts


def test_doctor_fleet_bounds_a_host_whose_probe_floods_its_output(tmp_path):
    """The host's interpreter prints without end: the host cuts what it sends back at the
    probes' cap (targets.launch_command), so that host is one finding (it printed more than
    4 MiB: is it a Python?) and the other host is reported; Ansible kept the whole flood
    (the doctor and Ansible grew to the memory cap and were killed)."""
    flood = stand_in(tmp_path / "flood", "exec yes 'jetson-env flood jetson-env flood'")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    fleet = tmp_path / "fleet.yml"
    fleet.write_text(json.dumps({"all": {"hosts": {
        "flood": {**local, "jetson_facts_python": flood}, "calm": local}}}))  # fmt: skip
    run = Run(["doctor", "--json", "-i", str(fleet), "--check", "platform"], memory=FLOOD_MEMORY)
    run.finish(3, timeout=120)  # a failed host; finish(): 300 MB of RSS at most, no leftovers
    hosts = {host["host"]: host for host in json.loads(run.stdout)["hosts"]}
    assert hosts["calm"]["platform_label"] == "x86_64" and hosts["calm"]["status"] in ("ok", "warn")
    assert hosts["flood"]["status"] == "fail"
    (finding,) = hosts["flood"]["report"]["findings"]
    assert finding["summary"] == (
        f"{flood} printed more than 4 MiB without running the probes: is it a Python interpreter?"
    ), finding
    assert "ansible_python_interpreter" in finding["remedy"]


# ---- (6) nothing keeps running after jetson-env is gone -------------------------------


def killed_once_running(run: Run, what: str) -> None:
    """SIGKILL to jetson-env once a process of this case runs `what`; finish() then finds
    every process of the case gone (test_doctor_hostile.leftovers)."""
    deadline = time.monotonic() + 90
    while not any(what in p for p in leftovers(run.case)):
        assert run.proc.poll() is None, run.proc.stderr.read().decode(errors="replace")
        assert time.monotonic() < deadline, f"{what} never started"
        time.sleep(0.2)
    run.proc.kill()
    run.finish(-signal.SIGKILL)


def test_provision_killed_leaves_no_ansible_running(tmp_path):
    """The host's Python never answers; jetson-env is SIGKILLed: ansible-playbook, its
    workers and the host's interpreter end with it (they lived on, changing hosts)."""
    python = stand_in(tmp_path / "bin", "exec sleep 600")
    fleet = inventory(tmp_path, ansible_python_interpreter=python)
    # TMPDIR: the killed process cannot remove its temporary files
    run = Run(["provision", "-C", "-i", str(fleet)], env={"TMPDIR": str(tmp_path)})
    killed_once_running(run, "sleep 600")


def test_doctor_fix_killed_leaves_no_playbook_running(tmp_path, venv_python):  # noqa: F811
    """--fix --yes on a host whose probes run (a venv without termcolor: python_base fixes
    it) and whose modules' Python never answers: SIGKILL during the role's plan ends the
    playbook and what it started on the host."""
    python, _site = venv_python
    hang = module_python(tmp_path / "bin", "3.11.7", otherwise="exec sleep 600")
    fleet = inventory(tmp_path, jetson_facts_python=python, ansible_python_interpreter=hang)
    # TMPDIR: the killed process cannot remove its temporary files
    run = Run(
        ["doctor", "-i", str(fleet), "--check", "termcolor", "--fix", "--yes"],
        env={"TMPDIR": str(tmp_path)},
    )
    killed_once_running(run, "sleep 600")


# ---- (5) nothing waits for ever -----------------------------------------------------------


def test_doctor_fix_whose_terminal_input_ends_unanswered_changes_nothing(tmp_path):
    """A terminal whose input ends (Ctrl-D typed, before the question) is no answer: exit 2,
    the venv as it was (was an EOFError traceback). The role's plan runs for real."""
    root = tmp_path / "venv"
    venv.create(root, with_pip=True)  # pip, and no termcolor: python_base would install it
    master, slave = pty.openpty()
    os.write(master, b"\x04")  # canonical mode: the next read of the terminal is its end
    run = Run(["doctor", "--fix", "--python", str(root / "bin" / "python"), "--check",
               "termcolor", "--no-smoke"], stdin=slave, target=root)  # fmt: skip
    os.close(slave)
    try:
        run.finish(2, timeout=300)
    finally:
        os.close(master)
    assert "Apply roles python_base on localhost? [y/N]" in run.stdout
    assert "error: no answer: nothing was changed" in run.stderr


@pytest.mark.parametrize(
    "words, said",
    [
        (["-e", "@{fifo}"], "-e @{fifo} is not a regular file (a FIFO)"),
        (["--", "-e@{fifo}"], "-e @{fifo} is not a regular file (a FIFO)"),
        (["--", "--vault-password-file={fifo}"], "--vault-password-file {fifo} is not a regular"),
        (["-e", "@/dev/zero"], "-e @/dev/zero is not a regular file (a character device)"),
        (["--", "-i", "/dev/zero"], "-i /dev/zero is not a regular file or folder"),
        (["--", "--extra-vars=@/dev/zero"], "-e @/dev/zero is not a regular file"),
    ],
    ids=["e-fifo", "passed-on-e-fifo", "passed-on-vault-fifo", "e-dev-zero", "passed-on-i-dev-zero",
         "passed-on-extra-vars-dev-zero"],
)  # fmt: skip
def test_provision_refuses_a_file_for_ansible_that_is_no_file_before_it_is_read(
    tmp_path, words, said
):
    """provision's -e @FILE and the files named in what it passes on to ansible-playbook are
    checked as its own -i is (user_files): a FIFO blocked Ansible for ever, /dev/zero was
    read until memory ran out."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    words = [word.replace("{fifo}", str(fifo)) for word in words]
    run = Run(["provision", "-C", *words]).finish(2, timeout=30)
    assert said.replace("{fifo}", str(fifo)) in run.stderr
    assert "nothing was run" in run.stderr and "running:" not in run.stderr


def test_provision_task_timeout_ends_a_host_whose_python_never_answers(tmp_path):
    """--task-timeout (Ansible's task_timeout): the host that never answers fails, named,
    within the bound; without it provision waited for ever (the case's RUN_LIMIT)."""
    hang = module_python(tmp_path / "bin", "3.11.7", otherwise="exec sleep 600")
    fleet = inventory(tmp_path, ansible_python_interpreter=hang)
    started = time.monotonic()
    run = Run(["provision", "-C", "-i", str(fleet), "--task-timeout", "5"]).finish(1)
    assert time.monotonic() - started < 50
    assert "--task-timeout: each task ends after 5 s on its host" in run.stderr
    assert "fatal: [odd]" in run.stdout and "Timed out after 5 second(s)" in run.stdout
    assert "odd: FAILED" in run.stdout
