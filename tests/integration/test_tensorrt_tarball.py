"""x86 TensorRT from a tarball, both layouts NVIDIA ships: 10.x
TensorRT-<v>.Linux.x86_64-gnu...tar.gz and 11.x TensorRT-Enterprise-<v>-Linux-x86_64-...tar.zst,
both unpacking to TensorRT-<v>/ (the README inside NVIDIA's tarballs). The tensorrt role
unpacks it, registers its lib dir with the loader, installs its bindings' wheel for this
Python, and changes nothing the second time; the doctor's libnvinfer check finds it there.

The tarballs are stand-ins (tests/support/standins.py) with NVIDIA's names and folders.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playbook_support import ROLE_RULE, remove_host, run_playbook, start_host, write_inventory
from support.ansible_envs import AnsibleEnd
from support.hosts import Host
from support.standins import build_tensorrt_tarball

from jetson_env import roles

pytestmark = pytest.mark.hosts

INSTALL_DIR = roles.default("tensorrt", "install_dir")


@pytest.fixture
def host(ansible: AnsibleEnd) -> Iterator[Host]:
    """A fresh host for each case: each layout is unpacked where no TensorRT was before."""
    host = start_host("x86-debian12", "tensorrt-tarball")
    yield host
    remove_host(host)


@ROLE_RULE
@pytest.mark.parametrize("version", ["10.16.1.11", "11.4.0.106"])
def test_tarball_is_unpacked_registered_and_its_bindings_installed(
    ansible: AnsibleEnd, host: Host, tmp_path: Path, version: str
):
    tarball = build_tensorrt_tarball(version, "cp311", tmp_path / "trt")
    inventory = write_inventory(
        tmp_path / "inventory.yml",
        {"x86": {"ansible_host": host.container}},
        {"tensorrt_tarball": str(tarball), "tensorrt_pip_package": ""},
    )

    first = run_playbook(ansible, inventory, "--tags", "tensorrt")

    assert first.rc == 0, first.failures()
    home = f"{INSTALL_DIR}/TensorRT-{version}"
    conf = host.exec(["cat", roles.default("tensorrt", "ldconfig_file")]).stdout
    assert conf == f"# Managed by jetson-env (role tensorrt)\n{home}/lib\n"
    major = version.split(".")[0]
    assert f"{home}/lib/libnvinfer.so.{major}" in host.exec(["/sbin/ldconfig", "-p"]).stdout
    imported = host.exec(["python3", "-c", "import tensorrt; print(tensorrt.__version__)"])
    assert imported.stdout.strip() == version
    second = run_playbook(ansible, inventory, "--tags", "tensorrt")
    assert second.rc == 0, second.failures()
    assert second.changed("x86") == 0, second.changed_tasks("x86")
