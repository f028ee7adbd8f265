"""The first careful step with a bundle (issue 54, case 1): `jetson-env provision -C --bundle B`
on a host that has never seen jetson-env, then every step a user takes after it from the same
bundle: the run, the second run, --check, the doctor, a break and `doctor --fix --bundle B`.

x86 test hosts with their network cut (`--network none`) and the system Python's own pip
(so pip's dry run is asked, unlike test_bundle_offline.py's host, which has no pip before
the bundle's python3-pip). With no network and no wheelhouse on them, what pip installs there
can only come from the bundle.

- Debian 12 (Python 3.11): a bundle made for it by `jetson-env bundle -i`, and the installed
  `jetson-env` run as users run it, from an unrelated folder.
- Debian sid's Python 3.14 (Ubuntu 26.04's): the ansible-core line that manages 3.14 runs on a
  controller Python of 3.12 or later, so the bundle carries jetson-env[provision] for 3.14
  (`--controller-python 3.14`) and the host is its own controller, installed from the bundle
  with no index, as docs/playbook.md's "Offline fleets" says.

On e2795bd --check did not copy the bundle's wheels to the host (right: it changes nothing)
and then asked pip for them there: "Fail when pip's dry run fails (--check) ... No matching
distribution found for termcolor", exit 1.
"""

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import (
    OFFLINE_VARS,
    from_an_unrelated_folder,
    install_bundle_controller,
    pip_version,
    remove_host,
    start_host,
    write_inventory,
)
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

    second = summary_of(jetson_env(*args))
    assert second["status"] == "ok", second  # the second run changes nothing

    again = jetson_env(*args, "--check")
    host = summary_of(again)
    assert host["status"] == "ok", host  # nothing would change
    assert "pip finds every requirement met" in again.stderr, again.stderr[-3000:]

    # The doctor, in the host's Python as Ansible discovers it.
    doctor = jetson_env("doctor", "-i", str(inventory), "--json", "--no-smoke", "--check",
                        "termcolor")  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout[-3000:] + doctor.stderr[-3000:]
    (entry,) = json.loads(doctor.stdout)["hosts"]
    assert [f["status"] for f in entry["report"]["findings"]] == ["ok"], entry

    # A break as a user makes it, then the doctor's fix from the same bundle.
    break_termcolor(x86)
    fix = jetson_env("doctor", "-i", str(inventory), "--fix", "--yes", "--bundle", str(bundle),
                     "--check", "termcolor", "--no-smoke")  # fmt: skip
    assert fix.returncode == 0, fix.stdout[-3000:] + fix.stderr[-6000:]
    assert "x86: termcolor: fail -> ok" in fix.stdout, fix.stdout[-3000:]
    assert "termcolor: fixed (python_base)" in fix.stdout, fix.stdout[-3000:]
    assert pip_version(x86, "termcolor")


def break_termcolor(host: Host) -> None:
    host.exec(["python3", "-m", "pip", "uninstall", "-y", "-q", "--break-system-packages",
               "termcolor"])  # fmt: skip
    assert pip_version(host, "termcolor") is None


OWN_CONTROLLER = "/opt/offline-controller"
# What `jetson-env bundle` is told of the target: its Python, glibc and apt distribution.
FACTS = (
    "import platform, sys; print('%d.%d' % sys.version_info[:2], platform.libc_ver()[1],"
    " platform.freedesktop_os_release()['VERSION_CODENAME'])"
)


@pytest.fixture(scope="module")
def python314(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Host, str]]:
    """The 3.14 host, its network cut, with a bundle made for its facts (its Python, glibc and
    distribution, read from it) copied to /srv/bundle, and jetson-env[provision] installed from
    the bundle's controller/ into a venv of its own 3.14: (the host, that jetson-env)."""
    host = start_host("x86-python3.14", "bundle-check-first-3.14", network="none")
    facts = host.exec(["python3", "-c", FACTS])
    python, glibc, codename = facts.stdout.split()
    assert python == "3.14", facts.stdout
    directory = tmp_path_factory.mktemp("bundle-check-first-3.14") / "bundle"
    made = jetson_env("bundle", str(directory), "--x86", "--python-version", python, "--glibc",
                      glibc, "--distribution", f"debian/{codename}", "--roles", "python_base",
                      "--controller-python", python, "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    assert any("cp314" in wheel.name for wheel in directory.rglob("numpy-*.whl")), made.stdout
    host.copy_in(directory, "/srv/bundle")
    line = json.loads(made.stdout)["controller"]
    yield host, install_bundle_controller(host, line, directory, "/srv/bundle", OWN_CONTROLLER)
    remove_host(host)


def on_the_host(host: Host, jetson_env_path: str, *args: str) -> subprocess.CompletedProcess:
    """The host's own jetson-env as its user types it, from an unrelated folder."""
    command = from_an_unrelated_folder(jetson_env_path, "--no-color", *args)
    return host.exec(command, check=False, timeout=900)


def test_every_step_from_a_bundle_on_a_python_314_host_never_provisioned(python314):
    """--check before anything, the run, the second run, --check after it, the doctor, a
    break then `doctor --fix --bundle`: the host's own jetson-env from the bundle."""
    host, own = python314
    args = ("provision", "--bundle", "/srv/bundle", "--json")
    assert pip_version(host, "termcolor") is None and pip_version(host, "pip")

    def summary(*more: str) -> dict:
        proc = on_the_host(host, own, *args, *more)
        assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-4000:]
        (only,) = json.loads(proc.stdout)["hosts"].values()
        return {**only, "stderr": proc.stderr}

    first = summary("--check")
    assert first["status"] == "changed" and first["error"] is None, first
    said = " ".join(first["stderr"].split())
    assert "pip cannot tell before the real run copies the bundle's wheels" in said, said[:3000]
    assert pip_version(host, "termcolor") is None
    assert host.exec(["test", "-e", HOST_BUNDLE], check=False).returncode == 1

    assert summary()["status"] == "changed"
    assert pip_version(host, "termcolor")
    assert summary()["status"] == "ok"  # the second run changes nothing
    again = summary("--check")
    assert again["status"] == "ok", again
    assert "pip finds every requirement met" in again["stderr"], again["stderr"][-3000:]

    doctor = on_the_host(host, own, "doctor", "--json", "--no-smoke", "--check", "termcolor")
    report = json.loads(doctor.stdout)
    assert [f["status"] for f in report["findings"]] == ["ok"], report
    assert report["platform"]["python"]["version"].startswith("3.14."), report["platform"]

    break_termcolor(host)
    fix = on_the_host(host, own, "doctor", "--fix", "--yes", "--no-smoke", "--bundle",
                      "/srv/bundle", "--check", "termcolor")  # fmt: skip
    assert fix.returncode == 0, fix.stdout[-3000:] + fix.stderr[-6000:]
    assert "termcolor: fail -> ok" in fix.stdout, fix.stdout[-3000:]
    assert "termcolor: fixed (python_base)" in fix.stdout, fix.stdout[-3000:]
    assert pip_version(host, "termcolor")
