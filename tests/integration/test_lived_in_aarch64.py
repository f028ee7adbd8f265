"""The lived-in host on the emulated Orin (R36.4.3, aarch64 under qemu): the reduced role set
cuda_env, python_base and docker_runtime (emulation is 5-20x slower; torch and the builds
are test_lived_in.py's, on x86). The same lived-in state as there (tests/support/hosts.py,
LivedInImage, no torch in its venv), reached the same way but as root: the venv as
ansible_python_interpreter, the network cut. Not as the user with become: sudo cannot
become root under qemu-user ("effective uid is not 0": binfmt_misc's qemu-aarch64 entry
runs setuid binaries without their credentials), so x86's module covers sudo."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import paths_changed_since, remove_host, run_playbook, write_inventory
from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import (
    LIVED_IN_NVCC,
    LIVED_IN_USER,
    LIVED_IN_VENV,
    Host,
    LivedInImage,
    lived_in_cuda_tar,
    start_lived_in,
)

# The slow tier (15 minutes of emulation on 2 cores): JETSON_ENV_SLOW=1 runs it.
pytestmark = [pytest.mark.hosts, pytest.mark.slow]

HOST = "livedin-orin"
MARKER = "/var/tmp/before-run"
ROLES = "cuda_env,python_base,docker_runtime"


@pytest.fixture(scope="module")
def orin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Host, Path]]:
    work = tmp_path_factory.mktemp("lived-in-orin")
    cuda_tar = lived_in_cuda_tar(work)
    host = start_lived_in(LivedInImage("orin-r36.4.3", cuda_tar, numpy="numpy==1.26.1"), HOST)
    try:
        inventory = write_inventory(work / "inventory.yml", {HOST: {
            "ansible_host": host.container,
            "ansible_python_interpreter": f"{LIVED_IN_VENV}/bin/python"}},
            # The documented offline setting: the row's apt packages are not installable here.
            {"jetson_facts_python": f"{LIVED_IN_VENV}/bin/python",
             "python_base_matrix_apt_packages": False})  # fmt: skip
        yield host, inventory
    finally:
        remove_host(host)


def test_check_then_run_then_nothing_to_do(orin: tuple[Host, Path]):
    host, inventory = orin
    ansible = ANSIBLE_ENDS["newest"].ensure()
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])

    check = run_playbook(ansible, inventory, "--tags", ROLES, check=True)

    assert check.rc == 0, check.messages() or check.stderr[-3000:]
    assert paths_changed_since(host, MARKER, LIVED_IN_USER) == set()
    assert not check.task_hosts("Fetch the apt package lists")
    first = run_playbook(ansible, inventory, "--tags", ROLES)
    assert first.rc == 0, first.messages() or first.stderr[-3000:]
    assert host.exec(["cat", "/usr/local/bin/nvcc"]).stdout == LIVED_IN_NVCC
    assert host.exec([f"{LIVED_IN_VENV}/bin/python", "-c", "import termcolor"]).returncode == 0
    again = run_playbook(ansible, inventory, "--tags", ROLES)
    assert again.rc == 0 and again.changed(HOST) == 0, again.changed_tasks(HOST)
