"""JetPack 5 for real: its Python 3.8 meets the newest ansible-core.

An x86 host with a Xavier's release files (R35.4.1, JetPack 5.1.2) and a genuine CPython
3.8.18 (pyenv's build on this machine) as the Python Ansible's modules and the stack run in:
where the architecture does not matter, an x86 stand-in saves qemu's 5-20x. ansible-core 2.20
and newer run modules only on Python 3.9+ (the matrix's ansible_core table):

- the playbook under the newest ansible-core stops in the preflight, before any change, naming
  the way out; the ansible-core jetson-env prescribes for 3.8 ('ansible-core<2.20') says with
  --check what it would change, changing nothing, then provisions the host (cuda_env,
  python_base, torch from a STAND-IN of NVIDIA's wheel, docker_runtime; JETPACK5_ROLES says
  why the others cannot run there), and a second run and --check change nothing;
- `doctor -i` and `plan -i` from a controller as a user installs it on the newest Python (the
  newest ansible-core) name the host it cannot provision or fix, and `doctor -i --fix` leaves
  it out, saying why, while it fixes the fleet's other host; with Ansible's modules in the
  stand-in's Debian 3.11 (`jetson_facts_python` the 3.8), the same `--fix` repairs it.
"""

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import (
    paths_changed_since,
    remove_host,
    run_playbook,
    start_host,
    start_x86_with_files_of,
    write_inventory,
)
from support.ansible_envs import ANSIBLE_ENDS, CONTROLLER, JETPACK5
from support.hosts import VENV, Host, project_wheel
from support.pythons import pyenv_version, required
from support.standins import build_jetson_torch_wheel, stage_container_runtime

from jetson_env import matrix

pytestmark = pytest.mark.hosts

PYTHON38 = pyenv_version("3.8.18")
PYTHON = str(PYTHON38 / "bin" / "python3.8")
# torch: a STAND-IN of NVIDIA's wheel for the row (its name, version and PyTorch 2.0's
# Requires-Dist, tagged x86_64: NVIDIA's aarch64 wheel can be neither fetched nor run here), its
# dependencies from the index; docker_runtime with a STAND-IN nvidia-container-runtime. What an
# x86 stand-in cannot have: NVIDIA's repository (jetpack_apt; JetPack's TensorRT, whose bindings
# are the system Python's), Ubuntu 20.04's package names, a torch with C++ to build torchvision
# and torch2trt against, CUDA's cuda.h and libcuda for pycuda's build (cuda-python needs 3.9+).
JETPACK5_ROLES = {
    "jetpack_apt_enabled": False,
    "python_base_matrix_apt_packages": False,
    "torchvision_enabled": False,
    "pycuda_enabled": False,
    "tensorrt_enabled": False,
    "torch2trt_enabled": False,
    "docker_runtime_install_packages": False,
    "docker_runtime_container_build": True,
}


def torch_vars(work: Path) -> dict:
    filename = matrix.load().release("35.4.1").torch.filename
    wheel = build_jetson_torch_wheel(filename, work / "torch-standin")
    return {
        "torch_wheel_file": str(wheel),
        "torch_lock_file": str(work / "jetson-env.lock.yml"),
        "torch_controller_cache": str(work / "cache" / "torch"),
    }


@pytest.fixture
def jetpack5_host() -> Iterator[Host]:
    """x86 stand-in for a JetPack 5 device: a Xavier's release files, a real Python 3.8; a
    fresh one for each test (each starts from a device no test provisioned)."""
    required("3.8.18")
    host = start_x86_with_files_of("xavier-r35.4.1", "jetpack5-py38")
    try:
        host.exec(["mkdir", "-p", str(PYTHON38.parent)])
        host.copy_in(PYTHON38, str(PYTHON38))
        yield host
    finally:
        remove_host(host)


def test_the_newest_ansible_core_refuses_python38_and_the_prescribed_one_provisions_it(
    jetpack5_host: Host, tmp_path: Path
):
    inventory = write_inventory(
        tmp_path / "jp5.yml",
        {"jp5": {"ansible_host": jetpack5_host.container, "ansible_python_interpreter": PYTHON}},
        {**JETPACK5_ROLES, **torch_vars(tmp_path), "jetson_facts_python": PYTHON},
    )
    stage_container_runtime(jetpack5_host)
    marker = "/var/tmp/jetson-env-test-marker"
    jetpack5_host.exec(["sh", "-c", f"touch {marker} && sleep 1"])

    newest = run_playbook(ANSIBLE_ENDS["newest"].ensure(), inventory)

    assert newest.rc != 0
    said = " ".join(newest.messages().split())
    assert "jp5 runs Ansible's modules with Python 3.8 and ansible-core 2.2" in said, said
    assert "'ansible-core<2.20'" in said and "of a Python 3.11 to 3.13" in said, said
    assert "Nothing was changed." in said
    assert paths_changed_since(jetpack5_host, marker) == set()

    # --check first: it says what would change and changes nothing.
    checked = run_playbook(JETPACK5.ensure(), inventory, check=True)
    assert checked.rc == 0, checked.messages() or checked.stderr
    assert checked.changed("jp5") > 0
    assert paths_changed_since(jetpack5_host, marker) == set()

    prescribed = run_playbook(JETPACK5, inventory)

    assert prescribed.rc == 0, prescribed.messages() or prescribed.stderr
    report = prescribed.task_result("Report the host's platform", "jp5")["msg"]
    assert "L4T R35.4.1 (JetPack 5.1.2)" in report and "Python 3.8.18" in report, report
    installed = jetpack5_host.exec([PYTHON, "-c", "import termcolor, numpy; print('ok')"])
    assert installed.stdout.strip() == "ok"
    torch = jetpack5_host.exec([PYTHON, "-c", "import torch, sympy; print(torch.__doc__, "
                                "torch.__version__)"])  # fmt: skip
    assert torch.stdout.startswith("STAND-IN for NVIDIA's torch-2.0.0+nv23.05-cp38"), torch.stdout
    daemon = json.loads(jetpack5_host.exec(["cat", "/etc/docker/daemon.json"]).stdout)
    assert "nvidia" in daemon["runtimes"], daemon

    for check in (False, True):  # the second run, then --check: nothing to change
        again = run_playbook(JETPACK5, inventory, check=check)
        assert again.rc == 0 and again.changed("jp5") == 0, again.changed_tasks("jp5")


def controller() -> Path:
    """The newest Python's controller venv with the working tree's jetson-env installed."""
    wheel = project_wheel()
    subprocess.run([str(CONTROLLER.ensure().bin("pip")), "install", "--quiet", "--no-deps",
                    "--force-reinstall", str(wheel)], check=True, timeout=300)  # fmt: skip
    return CONTROLLER.bin("jetson-env")


def test_doctor_and_plan_name_the_host_the_controller_cannot_manage_and_fix_leaves_it_out(
    jetpack5_host: Host, tmp_path: Path
):
    jetson_env = controller()
    other = start_host("x86-debian12", "jp5-fleet-other")
    try:
        jetpack5_host.exec([PYTHON, "-m", "pip", "uninstall", "--yes", "--quiet", "termcolor"],
                           check=False)  # fmt: skip
        write_inventory(
            tmp_path / "fleet.yml",
            {"xavier": {"ansible_host": jetpack5_host.container,
                        "ansible_python_interpreter": PYTHON},
             "other": {"ansible_host": other.container,
                       "ansible_python_interpreter": f"{VENV}/bin/python"}},
            {},
        )  # fmt: skip
        env = {**os.environ, "HOME": str(tmp_path), "COLUMNS": "400"}

        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([str(jetson_env), "--no-color", *args], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=900)  # fmt: skip

        doctor = run("doctor", "-i", "fleet.yml", "--quick", "--check", "termcolor", "--json")

        fleet = json.loads(doctor.stdout)
        hosts = {host["host"]: host for host in fleet["hosts"]}
        unmanaged = hosts["xavier"]["unmanaged"] or ""
        assert unmanaged.startswith("xavier runs Ansible's modules with Python 3.8.18 and"
                                    " ansible-core 2.2"), hosts["xavier"]  # fmt: skip
        assert "'ansible-core<2.20'" in unmanaged
        assert hosts["other"]["unmanaged"] is None
        assert hosts["xavier"]["failing"] == ["termcolor"]  # the doctor itself still runs

        plan = run("plan", "--to", "R35.6.0", "-i", "fleet.yml", "--json")

        planned = {host["host"]: host for host in json.loads(plan.stdout)["hosts"]}
        assert "'ansible-core<2.20'" in (planned["xavier"]["unmanaged"] or ""), planned["xavier"]

        fixed = run("doctor", "-i", "fleet.yml", "--quick", "--check", "termcolor", "--fix",
                    "--yes")  # fmt: skip

        said = " ".join(fixed.stdout.split())
        assert "--fix: xavier left out: xavier runs Ansible's modules with Python 3.8.18" in said
        assert "other: termcolor: fail -> ok" in said, said + fixed.stderr[-3000:]
        assert "--limit xavier" not in fixed.stderr
        assert other.exec([f"{VENV}/bin/python", "-c", "import termcolor"]).returncode == 0
        gone = jetpack5_host.exec([PYTHON, "-c", "import termcolor"], check=False)
        assert gone.returncode != 0  # left as it was

        # The same controller fixes it where Ansible's modules run in a Python it can drive
        # (the stand-in's Debian 3.11; the roles still install into the device's 3.8).
        write_inventory(
            tmp_path / "split.yml",
            {"xavier": {"ansible_host": jetpack5_host.container,
                        "ansible_python_interpreter": "/usr/bin/python3"}},
            {"jetson_facts_python": PYTHON},
        )  # fmt: skip
        split = run("doctor", "-i", "split.yml", "--quick", "--check", "termcolor", "--fix",
                    "--yes")  # fmt: skip
        said = " ".join(split.stdout.split())
        assert split.returncode == 0, said + split.stderr[-3000:]
        assert "xavier: termcolor: fail -> ok" in said, said + split.stderr[-3000:]
        assert jetpack5_host.exec([PYTHON, "-c", "import termcolor"]).returncode == 0
    finally:
        remove_host(other)
