"""`jetson-env provision` as Ansible users type it (issue 50 item 3): ansible-playbook's short
options with their meanings, a summary per host of what each role changed or would change
(from the play's own results), and the project's exit codes for Ansible's.

Real ansible-playbook (the newest end's, which carries community.docker) against one x86 test
host (`-provision-cli`, nothing provisioned: `--check` runs only) and a loopback port where
nothing listens (`down`), all through `--check --tags cuda_env` (10-20 s a run).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import yaml
from playbook_support import remove_host, start_host
from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import Host, free_port
from support.schemas import DOCS
from support.signals import sigint_as_in_a_terminal
from test_doctor_hostile import CASE_ENV, leftovers

from jetson_env import roles

pytestmark = pytest.mark.hosts

PROFILE_SCRIPT = roles.default("cuda_env", "profile_file")
CUDA_ROOT = "/usr/local/cuda-12.6"  # the user's setting: this host has no CUDA for the probe
OLD_PIP_VENV = "/opt/venv-old-pip"
WRITE_PROFILE = "Write the profile.d script for users and login shells"


@pytest.fixture(scope="module")
def x86() -> Iterator[Host]:
    host = start_host("x86-debian12", "provision-cli")
    yield host
    remove_host(host)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory, x86: Host) -> Path:
    path = tmp_path_factory.mktemp("provision-cli") / "fleet.yml"
    hosts = {
        "x86": {"ansible_connection": "community.docker.docker", "ansible_host": x86.container,
                "ansible_python_interpreter": "/usr/bin/python3", "ansible_become": False,
                "cuda_env_root": CUDA_ROOT},
        "down": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1",
                 "ansible_port": free_port(), "ansible_user": "root"},
    }  # fmt: skip
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def provision(*args: str, end: str = "newest") -> subprocess.CompletedProcess:
    """The command as a user runs it, from an unrelated folder, with the ansible-playbook of
    an end of the Ansible range (what `collection.ansible_command` finds beside jetson-env)."""
    tools = ANSIBLE_ENDS[end].ensure().venv / "bin"
    code = ("import sys; from jetson_env import cli, collection; "
            f"collection.ansible_command = lambda name='ansible-playbook': {str(tools)!r} + '/' "
            "+ name; sys.exit(cli.main(sys.argv[1:]))")  # fmt: skip
    return subprocess.run([sys.executable, "-c", code, "--no-color", "provision", *args],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          env={**os.environ, "SSH_AUTH_SOCK": ""},
                          cwd=tempfile.gettempdir())  # fmt: skip


def test_ansibles_short_options_keep_their_meanings(inventory: Path, x86: Host):
    """-l -t -C -D -f -v were "unrecognized arguments" (exit 2 on c9e149e)."""
    proc = provision("-i", str(inventory), "-l", "x86", "-t", "cuda_env", "-C", "-D", "-f", "2",
                     "-v")  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-3000:] + out[-3000:]
    assert "deprecat" not in (out + proc.stderr).lower()  # the results callback included
    running = next(line for line in proc.stderr.splitlines() if line.startswith("running: "))
    for option in ("--limit x86", "--tags cuda_env", "--forks 2", "--check", "--diff", " -v"):
        assert option in running, running
    recap = out[out.index("PLAY RECAP") :]
    assert "x86" in recap and "down" not in recap  # -l: only x86
    assert ("Using " in out and " as config file" in out) or "No config file found" in out  # -v
    assert f"+export CUDA_HOME={CUDA_ROOT}\n" in out  # -D: the lines the file would get
    assert x86.exec(["test", "-e", PROFILE_SCRIPT], check=False).returncode  # -C: not written
    summary = out[out.index("Summary per host") :]
    assert "(--check: what would change)" in summary
    assert "x86: " in summary and " would change" in summary, summary
    assert f"cuda_env: would change: {WRITE_PROFILE}" in summary, summary
    assert "python_base" not in summary  # -t: that role did not run
    assert summary.rstrip().endswith('exit code 0 (ansible-playbook\'s 0; docs/playbook.md, '
                                      '"Exit codes")'), summary  # fmt: skip


@pytest.mark.parametrize("end", list(ANSIBLE_ENDS))
def test_the_summary_as_json_follows_its_schema(inventory: Path, x86: Host, end: str):
    """--json: the summary on stdout, Ansible's output on stderr (no --json on c9e149e). At
    both ends: the results callback reads Ansible's task objects."""
    proc = provision("-i", str(inventory), "--limit", "x86", "--tags", "cuda_env", "--check",
                     "--json", end=end)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads(proc.stdout)
    schema = json.loads((DOCS / "provision.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    assert "PLAY RECAP" in proc.stderr and "deprecat" not in proc.stderr.lower()
    assert document["exit_code"] == 0 and document["ansible_exit_code"] == 0
    assert document["check"] is True and list(document["hosts"]) == ["x86"]
    host = document["hosts"]["x86"]
    assert host["status"] == "changed" and host["error"] is None
    cuda_env = next(role for role in host["roles"] if role["role"] == "cuda_env")
    assert WRITE_PROFILE in cuda_env["changed"]
    assert len(cuda_env["changed"]) <= host["stats"]["changed"]


def test_exit_codes_are_the_projects(inventory: Path, x86: Host):
    """An unreachable host exits 3 (Ansible's 4), a failed host 1 (Ansible's 2), an option
    ansible-playbook refuses 2 (its own 2). On c9e149e provision passed Ansible's through."""
    down = provision("-i", str(inventory), "--limit", "down", "--tags", "cuda_env", "--check")
    assert down.returncode == 3, down.stderr[-3000:] + down.stdout[-3000:]
    assert "down: UNREACHABLE" in down.stdout
    assert "exit code 3 (ansible-playbook's 4" in down.stdout

    # A variable of the wrong type: the play refuses it on the host before any change.
    failed = provision("-i", str(inventory), "--limit", "x86", "--tags", "cuda_env", "--check",
                       "-e", "torchvision_max_jobs=many")  # fmt: skip
    assert failed.returncode == 1, failed.stderr[-3000:] + failed.stdout[-3000:]
    assert "x86: FAILED" in failed.stdout
    assert "torchvision_max_jobs" in failed.stdout[failed.stdout.index("Summary per host") :]

    refused = provision("-i", str(inventory), "--check", "--", "--no-such-option")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "before any host's results" in refused.stderr

    listed = provision("-i", str(inventory), "--", "--list-hosts")  # no play runs: no summary
    assert listed.returncode == 0 and "error" not in listed.stderr, listed.stderr
    assert "x86" in listed.stdout and "Summary per host" not in listed.stdout


def test_check_says_why_a_pip_too_old_for_a_dry_run_cannot_tell(
    inventory: Path, x86: Host, tmp_path: Path
):
    """A pip before 22.2 has no `install --dry-run --report`: --check says so, in words, and
    what the real run would install (issue 50 saw "pip cannot tell before a real run (hint:
    See above for details.)"; c9e149e printed pip's last line "no such option: --dry-run")."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--disable-pip-version-check", "pip==22.0.2", "-d", str(tmp_path)],
                   check=True, timeout=300)  # fmt: skip
    (wheel,) = tmp_path.glob("pip-22.0.2-*.whl")
    x86.copy_in(wheel, f"/tmp/{wheel.name}")
    x86.exec(["python3", "-m", "venv", "--without-pip", OLD_PIP_VENV])
    x86.exec([f"{OLD_PIP_VENV}/bin/python3", f"/tmp/{wheel.name}/pip", "install", "--quiet",
              "--no-index", f"/tmp/{wheel.name}"])  # fmt: skip

    proc = provision("-i", str(inventory), "--limit", "x86", "--tags", "python_base", "--check",
                     "--python", f"{OLD_PIP_VENV}/bin/python3")  # fmt: skip

    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    said = next(line for line in proc.stdout.splitlines() if "pip cannot tell" in line)
    assert (
        "pip cannot tell before a real run: this pip is older than 22.2, which has install "
        "--dry-run --report; it would run pip install "
    ) in said and "termcolor" in said, said
    assert "hint:" not in said and "no such option" not in said


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_ctrl_c_and_sigterm_end_ansible_playbook_first(tmp_path: Path, how: str):
    """Ctrl-C (SIGINT to the terminal's process group) exits 130, SIGTERM 143, as every
    jetson-env command, with nothing of the run left. A host (local connection) whose Python
    hangs keeps the play running. On c9e149e ansible-playbook replaced the process: Ctrl-C
    exited 99 (Ansible's), SIGTERM ended it by the signal (-15)."""
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\nexec sleep 600\n")
    python.chmod(0o755)
    inventory = tmp_path / "fleet.yml"
    hosts = {"hung": {"ansible_connection": "local", "ansible_python_interpreter": str(python)}}
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    case = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, "-m", "jetson_env.cli", "--no-color", "provision", "-i", str(inventory),
         "--check", "--tags", "cuda_env"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, CASE_ENV: case}, cwd=tmp_path, start_new_session=True,
        preexec_fn=sigint_as_in_a_terminal,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not any("sleep 600" in p for p in leftovers(case)):
        assert time.monotonic() < deadline and proc.poll() is None, "the play never started"
        time.sleep(0.1)
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert "Traceback" not in stdout + stderr, stderr
    assert proc.returncode == {"ctrl-c": 130, "sigterm": 143}[how], stdout[-2000:] + stderr
    deadline = time.monotonic() + 5  # SIGKILLed processes take a moment to go
    while (left := leftovers(case)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, left
