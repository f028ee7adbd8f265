"""cuda-python provisioned by the pycuda role: the cuda-python of the host's CUDA major
(`cuda-python==12.*` for the stand-in CUDA 12.6 toolkit) into the target Python, from PyPI's
real wheels, nothing changed the second time; and the doctor's cuda-python check on the host
(no GPU there: cuda.bindings imports, the driver is missing)."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import ROLE_RULE, remove_host, run_playbook, start_host, write_inventory
from support.ansible_envs import AnsibleEnd
from support.hosts import VENV, Host
from support.standins import build_cuda_toolkit_archive

pytestmark = pytest.mark.hosts


@pytest.fixture(scope="module")
def host(ansible: AnsibleEnd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    host = start_host("x86-debian12", "cuda-python")
    archive = build_cuda_toolkit_archive(tmp_path_factory.mktemp("cuda"))
    host.copy_in(archive, "/tmp/cuda.tar")
    host.exec(["tar", "-C", "/usr/local", "-xf", "/tmp/cuda.tar"])
    host.exec(["ln", "-sfn", "cuda-12.6", "/usr/local/cuda"])
    yield host
    remove_host(host)


@ROLE_RULE
def test_the_pycuda_role_installs_the_cuda_python_of_the_cuda_major(
    ansible: AnsibleEnd, host: Host, tmp_path: Path
):
    inventory = write_inventory(
        tmp_path / "inventory.yml",
        {"x86": {"ansible_host": host.container}},
        # The stand-in toolkit has no cuda.h or libcuda to build pycuda against.
        {"pycuda_build": False, "pycuda_cuda_python": True},
    )

    first = run_playbook(ansible, inventory, "--tags", "pycuda")

    assert first.rc == 0, first.failures()
    version = host.exec(["python3", "-c", "import cuda.bindings; print(cuda.bindings.__version__)"])
    assert version.stdout.startswith("12."), version.stdout
    second = run_playbook(ansible, inventory, "--tags", "pycuda")
    assert second.rc == 0, second.failures()
    assert second.changed("x86") == 0, second.changed_tasks("x86")
    host.install_project()
    doctor = host.exec([f"{VENV}/bin/jetson-env", "doctor", "--json", "--python",
                        "/usr/bin/python3", "--check", "cuda-python", "--no-smoke"],
                       check=False)  # fmt: skip
    (finding,) = json.loads(doctor.stdout)["findings"]
    assert finding["status"] == "warn", finding
    assert finding["summary"].startswith("cuda.bindings 12.")
    # A container started without NVIDIA's device nodes: what hides the GPU is named first.
    assert finding["summary"].endswith(
        "imports, but this container has no NVIDIA device nodes (/dev/nvidia0 ...): the CUDA"
        " driver sees no device"
    ), finding
