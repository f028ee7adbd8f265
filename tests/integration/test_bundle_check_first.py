"""The first careful step with a bundle (issue 54, case 1): `jetson-env provision -C --bundle B`
on a host that has never seen jetson-env, then the real run, then --check again.

A Debian 12 x86 test host with its network cut (`--network none`) and the system Python's
own pip (so pip's dry run is asked, unlike test_bundle_offline.py's host, which has no pip
before the bundle's python3-pip), a bundle made for it by `jetson-env bundle -i`, and the
installed `jetson-env provision` run as users run it, from an unrelated folder. On e2795bd
--check did not copy the bundle's wheels to the host (right: it changes nothing) and then
asked pip for them there: "Fail when pip's dry run fails (--check) ... No matching
distribution found for termcolor", exit 1.
"""

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import OFFLINE_VARS, pip_version, remove_host, start_host, write_inventory
from support.hosts import Host

pytestmark = pytest.mark.hosts

HOST_BUNDLE = "/var/cache/jetson-env"  # the host's bundle folder's parent (jetson_facts)
ROLE_VARS = {**OFFLINE_VARS, "torch_enabled": False}


@pytest.fixture(scope="module")
def x86() -> Iterator[Host]:
    host = start_host("x86-debian12", "bundle-check-first", network="none")
    yield host
    remove_host(host)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory, x86: Host) -> Path:
    path = tmp_path_factory.mktemp("bundle-check-first") / "fleet.yml"
    return write_inventory(path, {"x86": {"ansible_host": x86.container}}, ROLE_VARS)


def jetson_env(*args: str) -> subprocess.CompletedProcess:
    """The installed command (its ansible-playbook beside it), from an unrelated folder."""
    command = Path(sys.executable).parent / "jetson-env"
    return subprocess.run([str(command), "--no-color", *args], capture_output=True, text=True,
                          timeout=1200, stdin=subprocess.DEVNULL,
                          cwd=tempfile.gettempdir())  # fmt: skip


@pytest.fixture(scope="module")
def bundle(inventory: Path) -> Path:
    directory = inventory.parent / "bundle"
    made = jetson_env("bundle", str(directory), "-i", str(inventory), "--roles", "python_base")
    assert made.returncode == 0, made.stderr[-3000:]
    return directory


def summary_of(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-4000:]
    return json.loads(proc.stdout)["hosts"]["x86"]


def test_check_then_run_then_check_with_a_bundle_on_a_host_never_provisioned(
    inventory: Path, bundle: Path, x86: Host
):
    args = ("provision", "-i", str(inventory), "--bundle", str(bundle), "--json")
    assert pip_version(x86, "termcolor") is None and pip_version(x86, "pip")

    first = jetson_env(*args, "--check")
    host = summary_of(first)
    assert host["status"] == "changed" and host["error"] is None, host
    said = " ".join(first.stderr.split())
    assert "pip cannot tell before the real run copies the bundle's wheels" in said, said[:3000]
    assert "it would run pip install " in said and "termcolor" in said, said[:3000]
    python_base = next(role for role in host["roles"] if role["role"] == "python_base")
    assert python_base["changed"] == [], host  # said in the role's words, not a task's name
    (would,) = python_base["said"]
    assert would.startswith("pip cannot tell before the real run copies the bundle's wheels"), host
    # Nothing on the host: no bundle folder, no package.
    assert x86.exec(["test", "-e", HOST_BUNDLE], check=False).returncode == 1
    assert pip_version(x86, "termcolor") is None

    run = summary_of(jetson_env(*args))
    assert run["status"] == "changed", run
    assert pip_version(x86, "termcolor")

    again = jetson_env(*args, "--check")
    host = summary_of(again)
    assert host["status"] == "ok", host  # nothing would change
    assert "pip finds every requirement met" in again.stderr, again.stderr[-3000:]
