"""x86 TensorRT from pip, the tensorrt role's default: the matrix's pin installed, its
tensorrt_libs registered with the loader, nothing changed the second time.

The wheels are stand-ins (tests/support/standins.py) named and laid out as pip's
tensorrt-cu13, given to the role through tensorrt_pip_args (PyPI serves no -libs wheels).
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import ROLE_RULE, remove_host, run_playbook, start_host, write_inventory
from support.ansible_envs import AnsibleEnd
from support.hosts import Host
from support.standins import build_tensorrt_pip_wheels

from jetson_env import matrix, roles

pytestmark = pytest.mark.hosts

PINNED = matrix.load().x86_tensorrt
WHEELS_ON_HOST = "/tmp/tensorrt-wheels"


@pytest.fixture(scope="module")
def host(ansible: AnsibleEnd) -> Iterator[Host]:
    host = start_host("x86-debian12", "tensorrt-pip")
    yield host
    remove_host(host)


@ROLE_RULE
def test_pip_tensorrt_is_installed_registered_with_the_loader_and_idempotent(
    ansible: AnsibleEnd, host: Host, tmp_path: Path
):
    cuda_major = PINNED.package.removeprefix("tensorrt-cu")
    host.exec(["mkdir", "-p", WHEELS_ON_HOST])
    for wheel in build_tensorrt_pip_wheels(PINNED.version, cuda_major, tmp_path / "wheels"):
        host.copy_in(wheel, f"{WHEELS_ON_HOST}/{wheel.name}")
    inventory = write_inventory(
        tmp_path / "inventory.yml",
        {"x86": {"ansible_host": host.container}},
        # TensorRT's own set: the host's wheel folder has no onnx for the role's onnx set.
        {
            "tensorrt_pip_args": ["--no-index", "--find-links", WHEELS_ON_HOST],
            "tensorrt_sets": ["tensorrt"],
        },
    )

    first = run_playbook(ansible, inventory, "--tags", "tensorrt")
    assert first.rc == 0, first.failures()
    assert first.changed("x86") > 0
    libs = host.exec(["python3", "-c", "import os, tensorrt_libs; "
                      "print(os.path.dirname(tensorrt_libs.__file__))"]).stdout.strip()  # fmt: skip
    conf = host.exec(["cat", roles.default("tensorrt", "ldconfig_file")]).stdout
    assert conf == f"# Managed by jetson-env (role tensorrt)\n{libs}\n"
    cache = host.exec(["/sbin/ldconfig", "-p"]).stdout
    assert f"{libs}/libnvinfer.so.10" in cache
    # The stand-in bindings load libnvinfer by soname, through the loader, as the real ones do.
    version = host.exec(["python3", "-c", "import tensorrt; print(tensorrt.__version__)"])
    assert version.stdout.strip() == PINNED.version

    second = run_playbook(ansible, inventory, "--tags", "tensorrt")
    assert second.rc == 0, second.failures()
    assert second.changed("x86") == 0, second.changed_tasks("x86")
