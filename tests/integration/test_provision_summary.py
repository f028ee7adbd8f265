"""What `jetson-env provision` says after Ansible's output (issue 59 item 4): a failed pip step
as one sentence from pip's own failure (the index it could not reach, its final error), not
pip's whole stderr joined into one line and repeated; what changed (or would) in terms of the
user's packages ("termcolor==3.3.0 would be installed"), not the names of the tasks that said
it; and after a failure, the roles the play never reached.

Real ansible-playbook and pip against one x86 test host (`-provision-summary`) over Ansible's
docker connection, its pip's index a loopback port where nothing listens (the unreachable
index of a host whose packages come from an index this network does not reach).
"""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import yaml
from playbook_support import pip_version, remove_host, start_host
from support.hosts import Host, free_port
from support.schemas import DOCS
from support.standins import build_standin_wheel
from test_provision_command import provision

pytestmark = pytest.mark.hosts

PACKAGES_ONLY = json.dumps({"python_base_sets": ["packages"]})
RETRY_WARNING = "WARNING: Retrying (Retry("  # pip's, once per attempt: the whole output's


@pytest.fixture(scope="module")
def x86() -> Iterator[Host]:
    host = start_host("x86-debian12", "provision-summary")
    yield host
    remove_host(host)


@pytest.fixture(scope="module")
def closed_index() -> str:
    return f"http://127.0.0.1:{free_port()}/simple"


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory, x86: Host, closed_index: str) -> Path:
    """`x86` as the user's inventory names it; `offline`, the same host with an index that
    does not answer in pip_packages_args (the user's own knob for every pip install), and
    pip's --retries 1 as a user who knows the index is out of reach would say it: one retry
    warning, not five with their back-off (7.5 s of sleeping per pip call)."""
    folder = tmp_path_factory.mktemp("provision-summary")
    host = {"ansible_connection": "community.docker.docker", "ansible_host": x86.container,
            "ansible_python_interpreter": "/usr/bin/python3", "ansible_become": False}  # fmt: skip
    offline = {**host, "pip_packages_args": ["--index-url", closed_index, "--retries", "1"]}
    path = folder / "fleet.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"x86": host, "offline": offline}}}))
    return path


def summary_of(proc) -> str:
    assert "Summary per host" in proc.stdout, proc.stderr[-3000:] + proc.stdout[-3000:]
    return proc.stdout[proc.stdout.index("Summary per host") :]


def test_a_dry_run_that_cannot_reach_the_index_says_so_once(inventory: Path, closed_index: str):
    """--check: the summary's error is one sentence, pip's index and its final error; pip's
    retry warnings are not in it (main joined all 30 last lines of pip's stderr, cut at 600
    characters); the roles after python_base are named as never reached."""
    proc = provision("-i", str(inventory), "--limit", "offline", "--tags", "python_base,pycuda",
                     "--check", "-e", PACKAGES_ONLY)  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 1, proc.stderr[-3000:] + out[-3000:]
    summary = summary_of(proc)
    sentence = (f"pip could not reach {closed_index} (Connection refused): No matching "
                "distribution found for termcolor")  # fmt: skip
    (error,) = [line for line in summary.splitlines() if line.startswith("  error: ")]
    assert error.endswith(f"so the real install would fail too: {sentence} (all pip said: "
                          "the task before, with -v)"), error  # fmt: skip
    assert summary.count(sentence) == 1, summary
    assert RETRY_WARNING not in out and "Retry(total=" not in out, out[-5000:]
    assert "  never reached (the play stopped before them): pycuda\n" in summary, summary


def test_the_whole_pip_output_stays_with_v_and_json_names_the_roles_never_reached(
    inventory: Path, closed_index: str
):
    """-v shows the pip task's result, its retry warnings among it; --json carries the same
    sentence and `never_reached`, valid against the schema."""
    proc = provision("-i", str(inventory), "--limit", "offline", "--tags", "python_base,pycuda",
                     "--check", "-e", PACKAGES_ONLY, "--json", "-v")  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Retry(total=" in proc.stderr, proc.stderr[-3000:]  # Ansible's -v output
    document = json.loads(proc.stdout)
    schema = json.loads((DOCS / "provision.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    host = document["hosts"]["offline"]
    assert host["status"] == "failed" and host["never_reached"] == ["pycuda"], host
    assert f"pip could not reach {closed_index} (Connection refused)" in host["error"], host
    assert "Retry(" not in host["error"], host


def test_check_says_what_pip_would_install_not_the_tasks_name(inventory: Path, x86: Host):
    """The summary's python_base line names the distributions pip's dry run would install, in
    the user's terms; main printed "would change: pip_packages : Say what pip would install
    (--check)"."""
    assert pip_version(x86, "termcolor") is None
    proc = provision("-i", str(inventory), "--limit", "x86", "--tags", "python_base", "--check",
                     "-e", PACKAGES_ONLY)  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-3000:] + out[-3000:]
    summary = summary_of(proc)
    (line,) = [line for line in summary.splitlines() if line.startswith("  python_base: ")]
    assert re.fullmatch(r"  python_base: termcolor==\d+(\.\d+)+ would be installed", line), line
    assert "Say what pip" not in summary and "never reached" not in summary, summary


def test_a_failed_install_and_a_done_one_say_what_pip_said(inventory: Path, x86: Host,
                                                           closed_index: str):  # fmt: skip
    """The real run: pip's failure as one sentence (main: its last 30 lines of stderr joined
    with " | "), then on the reachable index what pip installed, with its version."""
    failed = provision("-i", str(inventory), "--limit", "offline", "--tags", "python_base",
                       "-e", PACKAGES_ONLY)  # fmt: skip
    assert failed.returncode == 1, failed.stderr[-3000:] + failed.stdout[-3000:]
    summary = summary_of(failed)
    (error,) = [line for line in summary.splitlines() if line.startswith("  error: ")]
    assert error.endswith(
        f"pip's install of python_base's termcolor failed (exit code 1): pip could not reach "
        f"{closed_index} (Connection refused): No matching distribution found for termcolor "
        "(all pip said: the task before, with -v)"
    ), error
    assert " | " not in error and RETRY_WARNING not in failed.stdout, error
    assert pip_version(x86, "termcolor") is None

    try:
        done = provision("-i", str(inventory), "--limit", "x86", "--tags", "python_base",
                         "-e", PACKAGES_ONLY)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
        termcolor = pip_version(x86, "termcolor")
        assert termcolor is not None
        summary = summary_of(done)
        assert f"  python_base: termcolor=={termcolor} installed\n" in summary, summary
        assert "Install with the target Python's pip" not in summary, summary
    finally:  # the module's host as the other tests find it, whatever order they run in
        x86.exec(["python3", "-m", "pip", "uninstall", "-y", "-q", "--break-system-packages",
                  "termcolor"], check=False)  # fmt: skip


def test_check_says_torchvision_would_be_built_from_source(
    inventory: Path, x86: Host, tmp_path: Path
):
    """Where no wheel is cached for the host's torch, --check says the torchvision version it
    would build (main: only task names, none of which said it). The host's torch is a
    stand-in wheel (tests/support/standins.py) in a venv of its own, the controller's wheel
    cache an empty folder."""
    venv = "/opt/venv-standin-torch"
    wheel = build_standin_wheel("torch", "2.13.0+cpu", tmp_path / "wheels")
    x86.copy_in(wheel, f"/tmp/{wheel.name}")
    x86.exec(["python3", "-m", "venv", venv])
    x86.exec([f"{venv}/bin/pip", "install", "--quiet", "--no-index", "--no-deps",
              f"/tmp/{wheel.name}"])  # fmt: skip
    cache = tmp_path / "torchvision-wheels"
    cache.mkdir()
    proc = provision("-i", str(inventory), "--limit", "x86", "--tags", "torchvision", "--check",
                     "--python", f"{venv}/bin/python3", "-e",
                     json.dumps({"torchvision_wheel_cache": str(cache)}))  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-3000:] + out[-3000:]
    summary = summary_of(proc)
    (line,) = [line for line in summary.splitlines() if line.startswith("  torchvision: ")]
    assert re.match(r"  torchvision: torchvision 0\.28\.\d+ would be built from source", line), line
