"""What a target reports reaches Ansible as data: never a template, never shell (issue 48).

A target's Python here is a real one whose sys.executable is a hostile path: a wrapper
script at a plain path (what the user or the inventory names) that execs a symlink to the
host's python3 in a folder whose name carries Jinja (`{{ lookup('pipe', ...) }}`, `{% ... %}`),
shell (`$(...)`, backticks, `;`) or a newline. The controller must create no file, whatever
entry point hands that path to Ansible: `doctor --fix` on this machine, with --host (SSH)
and with -i, `provision --python` (with and without --check) and `bundle -i`'s facts. Each
runs with the oldest and the newest ansible-core (tests/support/ansible_envs.py).
"""

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_doctor_ssh
from support.ansible_envs import ANSIBLE_ENDS
from test_doctor_ssh import CONTAINER, SSHHost, docker, inventory_for

pytestmark = pytest.mark.hosts

# The SSH test host of test_doctor_ssh (an sshd on loopback in a container of the x86 image).
sshd, home, known = test_doctor_ssh.sshd, test_doctor_ssh.home, test_doctor_ssh.known

WRAPPER = "/usr/local/bin/python-reporting-a-hostile-path"
# {marks}: a folder on the controller where each payload would create a file.
PAYLOADS = {
    "template-and-shell": (
        "/opt/je{{ lookup('pipe','touch {marks}/jinja') }}"
        "{% if lookup('pipe','touch {marks}/statement') %}{% endif %}"
        "$(touch {marks}/dollar)`touch {marks}/backtick`;touch {marks}/semicolon;/python3"
    ),
    "newline": "/opt/je\n{{ lookup('pipe','touch {marks}/newline') }}/python3",
}
# Makes the hostile symlink and the wrapper that execs it (argv: hostile, real, wrapper).
MAKE = """import os, shlex, sys
hostile, real, wrapper = sys.argv[1:]
os.makedirs(os.path.dirname(hostile), exist_ok=True)
if not os.path.lexists(hostile):
    os.symlink(real, hostile)
with open(wrapper, "w") as handle:
    handle.write("#!/bin/sh\\nexec %s \\"$@\\"\\n" % shlex.quote(hostile))
os.chmod(wrapper, 0o755)
"""


@pytest.fixture(params=list(ANSIBLE_ENDS))
def end(request: pytest.FixtureRequest) -> str:
    ANSIBLE_ENDS[request.param].ensure()
    return request.param


@pytest.fixture(params=list(PAYLOADS))
def marks(request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    """(the folder where a payload that ran leaves a file, the hostile path)."""
    folder = Path(tempfile.mkdtemp(prefix="je-marks-"))
    yield folder, PAYLOADS[request.param].replace("{marks}", str(folder))
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def jetson_env(end: str, *args: str, home_dir: Path | None = None) -> subprocess.CompletedProcess:
    """The command as a user runs it, with the ansible-playbook of the Ansible end `end`
    (the one beside the interpreter otherwise: what `collection.ansible_command` finds)."""
    tools = ANSIBLE_ENDS[end].venv / "bin"
    code = ("import sys; from jetson_env import cli, collection; "
            f"collection.ansible_command = lambda name='ansible-playbook': {str(tools)!r} + '/' "
            "+ name; sys.exit(cli.main(sys.argv[1:]))")  # fmt: skip
    env = {**os.environ, "SSH_AUTH_SOCK": ""}
    if home_dir is not None:
        env["HOME"] = str(home_dir)
    return subprocess.run([sys.executable, "-c", code, "--no-color", *args], capture_output=True,
                          text=True, env=env, timeout=900, stdin=subprocess.DEVNULL,
                          cwd=tempfile.gettempdir())  # fmt: skip


def reported(python: list[str]) -> str:
    return subprocess.run([*python, "-c", "import sys; print(sys.executable, end='')"],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


@pytest.fixture
def remote(sshd: SSHHost, marks: tuple[Path, str]) -> str:
    """The wrapper on the SSH test host, reporting the hostile path."""
    docker("exec", CONTAINER, "python3", "-c", MAKE, marks[1], "/usr/bin/python3", WRAPPER)
    assert reported(["docker", "exec", CONTAINER, WRAPPER]) == marks[1]
    return WRAPPER


def assert_nothing_ran(marks: tuple[Path, str], proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert sorted(p.name for p in marks[0].iterdir()) == [], proc.stdout + proc.stderr


def assert_data_or_refused(marks: tuple[Path, str], proc: subprocess.CompletedProcess) -> None:
    """A path with a newline is no path: refused before Ansible; the others reach the play as
    the text they are (the play's report of the Python names it)."""
    output = proc.stdout + proc.stderr
    if "\n" in marks[1]:
        assert "is not an absolute path without control characters" in proc.stderr, output
        assert "ansible-playbook" not in output
    else:
        assert "{{ lookup('pipe','touch " in output and "$(touch " in output, output[-3000:]


def test_doctor_fix_on_this_machine(end: str, marks: tuple[Path, str], tmp_path: Path):
    """Here the probed Python is also the one Ansible runs modules with: a path Ansible
    cannot run (it puts it into a shell line, unquoted on 2.16) is refused before any plan."""
    wrapper = tmp_path / "python3"
    subprocess.run([sys.executable, "-c", MAKE, str(tmp_path / marks[1].lstrip("/")),
                    "/usr/bin/python3", str(wrapper)], check=True)  # fmt: skip

    proc = jetson_env(end, "doctor", "--python", str(wrapper), "--check", "termcolor",
                      "--no-smoke", "--fix")  # fmt: skip

    assert_nothing_ran(marks, proc)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "nothing was changed" in proc.stderr and "running:" not in proc.stderr


def test_doctor_fix_over_ssh(end: str, marks: tuple[Path, str], known: Path, sshd: SSHHost,
                             remote: str):  # fmt: skip
    proc = jetson_env(end, "doctor", "--host", sshd.address, "--identity",
                      str(known / ".ssh" / "id_ed25519"), "--python", remote, "--check",
                      "termcolor", "--no-smoke", "--fix", home_dir=known)  # fmt: skip

    assert_nothing_ran(marks, proc)
    assert_data_or_refused(marks, proc)
    assert proc.returncode == (3 if "\n" in marks[1] else 2), proc.stdout + proc.stderr


def test_doctor_fix_of_an_inventory(end: str, marks: tuple[Path, str], known: Path,
                                    sshd: SSHHost, remote: str):  # fmt: skip
    inventory = inventory_for(known, sshd, remote)
    proc = jetson_env(end, "doctor", "-i", str(inventory), "--check", "termcolor", "--no-smoke",
                      "--fix", home_dir=known)  # fmt: skip

    assert_nothing_ran(marks, proc)
    assert_data_or_refused(marks, proc)


@pytest.mark.parametrize("check", [True, False], ids=["check", "run"])
def test_provision_python_of_an_inventory(end: str, marks: tuple[Path, str], known: Path,
                                          sshd: SSHHost, remote: str, check: bool):  # fmt: skip
    """`provision -i INVENTORY --python PATH`: PATH is the hosts' Python for the run, a path
    there, passed as data (plan prints this command). cuda_env changes nothing on a host
    without CUDA; the facts the roles read, where the payload would run, come first."""
    inventory = inventory_for(known, sshd, "/usr/bin/python3")
    proc = jetson_env(end, "provision", "-i", str(inventory), "--python", marks[1], "--tags",
                      "cuda_env", *(["--check"] if check else []), home_dir=known)  # fmt: skip

    assert_nothing_ran(marks, proc)
    assert_data_or_refused(marks, proc)
    assert proc.returncode == (2 if "\n" in marks[1] else 0), proc.stdout[-3000:] + proc.stderr


def test_provision_python_on_this_machine(end: str, marks: tuple[Path, str], tmp_path: Path):
    """`provision --python WRAPPER --check` here: the Python it runs as is Ansible's module
    interpreter too, so a path Ansible cannot run is refused before ansible-playbook."""
    wrapper = tmp_path / "python3"
    subprocess.run([sys.executable, "-c", MAKE, str(tmp_path / marks[1].lstrip("/")),
                    "/usr/bin/python3", str(wrapper)], check=True)  # fmt: skip

    proc = jetson_env(end, "provision", "--python", str(wrapper), "--tags", "cuda_env", "--check")

    assert_nothing_ran(marks, proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing was changed" in proc.stderr and "running:" not in proc.stderr


def test_bundle_reads_an_inventorys_facts(end: str, marks: tuple[Path, str], known: Path,
                                          sshd: SSHHost, remote: str, tmp_path: Path):  # fmt: skip
    inventory = inventory_for(known, sshd, remote)
    proc = jetson_env(end, "bundle", str(tmp_path / "b"), "-i", str(inventory), "--roles",
                      "tensorrt", "--no-controller", home_dir=known)  # fmt: skip

    assert_nothing_ran(marks, proc)
    assert "sshd: x86_64" in proc.stderr, proc.stderr[-3000:]  # the facts were read
