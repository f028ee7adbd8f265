"""Air-gapped JetPack 4 and 5 devices, each at the Python it really runs: a bundle made for the
host from its facts (`bundle -i`), carried in, and the host provisioned and doctored from it
with no network (issue 44).

Each host is an x86 stand-in (x86-debian12's image, as test_jetpack5_python38.py's and the
JetPack 4 host of test_provisioning_as_users_run_it.py: a Jetson's release files, pyenv's
genuine CPython 3.6.15 or 3.8.18 as the Python provisioned and the one Ansible's modules run
in), started with `--network none`. The host is its own controller, as an air-gapped site's
spare machine would be: jetson-env and the ansible-core of the bundle's controller/ installed
into a venv of the host's Debian Python 3.11 with `--no-index`. That ansible-core must manage
the host's Python (the oldest target decides: 2.16 for 3.6, 2.19 for 3.8), and the pip set
must be one that Python can install (numpy 1.19 for 3.6; termcolor's Requires-Python) - else
pip, with no index to fall back to, or Ansible's first module on the target, stops.

Each step a user takes, with the host's jetson-env from an unrelated folder: `provision --check`
before any run (it changes nothing and says what it would install), the run, a second run and
--check that change nothing, the doctor, then a break (termcolor removed) that `doctor --fix
--bundle` repairs. Two roles that run pip on the target: python_base, and torch from NVIDIA's
wheel for the row, which cannot be downloaded (NVIDIA's aarch64 file): a STAND-IN of it (its
name, version and PyTorch's Requires-Dist for that release, tagged x86_64) brought in with
`bundle --file torch=PATH`, as a user brings the real one, its dependencies fetched by the
bundle. The rest are off as in the other stand-ins' tests (NVIDIA's repository, a torch with
C++ to build torchvision against, CUDA's headers for pycuda).
"""

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from playbook_support import (
    OFFLINE_VARS,
    from_an_unrelated_folder,
    install_bundle_controller,
    remove_host,
    start_x86_with_files_of,
    write_inventory,
)
from support.hosts import Host
from support.pythons import interpreter, required
from support.standins import build_jetson_torch_wheel

from jetson_env import matrix

pytestmark = pytest.mark.hosts

CONTROLLER = "/opt/offline-controller"
BUNDLE = "/srv/bundle"
CHANGED = r" changed={} +unreachable=0 +failed=0 "  # the play recap
HOST_CACHE = "/var/cache/jetson-env"  # where a real run copies the wheels
ROLE_VARS = dict(OFFLINE_VARS)
ROLES = "python_base,torch"


class Line(NamedTuple):
    jetson: str  # tests/fixtures/hosts/<jetson>
    python: str  # pyenv's build: the device's Python
    ansible_core: str  # the line the bundle's controller must carry
    l4t: str
    numpy: str  # what python_base installs for that Python
    # The device's pip where its Python's own is too old for manylinux2010 and newer wheels
    # (CPython 3.6.15's ensurepip gives 18.1): NVIDIA's Jetson instructions upgrade it first.
    pip: str | None = None


LINES = {
    "jetpack4-py36": Line("nano-r32.4.3", "3.6.15", "2.16.", "32.4.3", "1.19.", "21.3.1"),
    "jetpack5-py38": Line("xavier-r35.4.1", "3.8.18", "2.19.", "35.4.1", "1.24."),
}


class Offline(NamedTuple):
    line: Line
    host: Host
    python: str


@pytest.fixture(scope="module", params=list(LINES))
def offline(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Offline]:
    line = LINES[request.param]
    root = required(line.python)
    python = str(interpreter(line.python))
    host = start_x86_with_files_of(line.jetson, f"offline-{request.param}", network="none")
    try:
        host.exec(["mkdir", "-p", str(root.parent)])
        host.copy_in(root, str(root))
        if line.pip:
            wheels = tmp_path_factory.mktemp("pip")
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--dest", str(wheels), f"pip=={line.pip}"],
                           check=True, capture_output=True, timeout=300)  # fmt: skip
            (wheel,) = wheels.glob("pip-*.whl")
            host.copy_in(wheel, f"/tmp/{wheel.name}")
            host.exec([python, "-m", "pip", "install", "--quiet", f"/tmp/{wheel.name}"])
        yield Offline(line, host, python)
    finally:
        remove_host(host)


def test_a_bundle_made_for_the_device_provisions_it_with_no_network(
    offline: Offline, tmp_path: Path
):
    line, host, python = offline
    # The facts are read through docker exec (no network needed), by the tests' ansible-core
    # in the host's Python 3.11; the Python provisioned, and so the target, is the device's.
    inventory = write_inventory(
        tmp_path / "device.yml",
        {"device": {"ansible_host": host.container}},
        {**ROLE_VARS, "jetson_facts_python": python},
    )
    directory = tmp_path / "bundle"
    torch_file = matrix.load().release(line.l4t).torch.filename
    standin = build_jetson_torch_wheel(torch_file, tmp_path / "torch")
    made = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "bundle", str(directory), "-i", str(inventory),
         "--roles", ROLES, "--file", f"torch={standin}", "--controller-python", "3.11", "--json"],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    key = f"x86_64-l4t{line.l4t}-cp{line.python.rsplit('.', 1)[0].replace('.', '')}"
    assert list(json.loads(made.stdout)["targets"]) == [key], made.stdout
    controller_line = json.loads(made.stdout)["controller"]

    host.copy_in(directory, BUNDLE)
    own = install_bundle_controller(host, controller_line, directory, BUNDLE, CONTROLLER)
    core = host.exec([f"{CONTROLLER}/bin/python", "-c",
                      "import ansible.release; print(ansible.release.__version__)"])  # fmt: skip
    assert core.stdout.startswith(line.ansible_core), core.stdout

    def jetson_env(*args: str) -> subprocess.CompletedProcess:
        """The host's jetson-env, from an unrelated folder, for the device's Python."""
        command = from_an_unrelated_folder(own, "--no-color", *args)
        return host.exec(command, check=False, timeout=1200)

    provision = ("provision", "--bundle", BUNDLE, "--python", python, "--tags", ROLES,
                 "-e", json.dumps(ROLE_VARS))  # fmt: skip

    # --check first, on a device that never saw jetson-env (issue 54's case 1: exit 1 on
    # e2795bd, pip's dry run asked for the bundle's wheels that --check had not copied).
    check = jetson_env(*provision, "--check")
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-2000:]
    assert re.search(CHANGED.format("[1-9]\\d*"), check.stdout), check.stdout[-3000:]
    assert "it would run pip install numpy" in check.stdout, check.stdout[-3000:]
    assert host.exec(["test", "-e", HOST_CACHE], check=False).returncode == 1
    assert host.exec([python, "-c", "import termcolor"], check=False).returncode == 1

    run = jetson_env(*provision)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    installed = host.exec([python, "-c", "import numpy, termcolor; print(numpy.__version__)"])
    assert installed.stdout.startswith(line.numpy), installed.stdout
    torch = host.exec([python, "-c", "import torch; print(torch.__doc__)"])
    assert torch.stdout.strip() == f"STAND-IN for NVIDIA's {torch_file}.", torch.stdout

    again = jetson_env(*provision)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
    assert re.search(CHANGED.format("0"), again.stdout), again.stdout[-3000:]
    check = jetson_env(*provision, "--check")
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-2000:]
    if line.pip:  # older than 22.2: no dry run, so --check cannot tell (and says so)
        assert "pip cannot tell before a real run: this pip is older than 22.2" in check.stdout
        assert re.search(CHANGED.format("1"), check.stdout), check.stdout[-3000:]
    else:
        assert re.search(CHANGED.format("0"), check.stdout), check.stdout[-3000:]

    doctor = jetson_env("doctor", "--json", "--no-smoke", "--python", python, "--check",
                        "termcolor", "--check", "platform")  # fmt: skip
    findings = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert findings["termcolor"]["status"] == "ok", findings
    assert f"R{line.l4t}" in findings["platform"]["summary"], findings["platform"]

    # A break, then `doctor --fix` from the bundle.
    host.exec([python, "-m", "pip", "uninstall", "--yes", "--quiet", "termcolor"])
    fix = jetson_env("doctor", "--fix", "--yes", "--no-smoke", "--json", "--python", python,
                     "--check", "termcolor", "--bundle", BUNDLE)  # fmt: skip
    rows = {row["check"]: row for row in json.loads(fix.stdout)["findings"]}
    assert rows["termcolor"]["verdict"] == "fixed", fix.stdout[-3000:] + fix.stderr[-3000:]
    assert host.exec([python, "-c", "import termcolor"]).returncode == 0
