"""jetson_env.wheels: the platform tags of another machine, checked against packaging's own."""

import platform
import subprocess
import sys
from pathlib import Path

import pytest
from packaging import _manylinux

from jetson_env.wheels import pip_platform_args, platform_tags


def test_this_machine_gets_the_tags_packaging_computes_for_it():
    """packaging (what pip uses) computes the running machine's tags: the oracle."""
    machine = platform.machine()
    glibc = ".".join(map(str, _manylinux._get_glibc_version()))
    expected = [*_manylinux.platform_tags([machine]), f"linux_{machine}"]
    assert platform_tags(machine, glibc) == expected


@pytest.mark.parametrize(
    ("machine", "glibc", "first", "last_manylinux", "count"),
    [
        ("x86_64", "2.36", "manylinux_2_36_x86_64", "manylinux1_x86_64", 32 + 3),
        ("aarch64", "2.35", "manylinux_2_35_aarch64", "manylinux2014_aarch64", 19 + 1),
        ("aarch64", "2.27", "manylinux_2_27_aarch64", "manylinux2014_aarch64", 11 + 1),
        ("aarch64", "2.17", "manylinux_2_17_aarch64", "manylinux2014_aarch64", 1 + 1),
    ],
    ids=["debian12-x86", "jetpack6", "jetpack4", "centos7-aarch64"],
)
def test_every_manylinux_down_to_the_oldest_plus_legacy_names(
    machine, glibc, first, last_manylinux, count
):
    tags = platform_tags(machine, glibc)
    assert tags[0] == first
    assert tags[-2:] == [last_manylinux, f"linux_{machine}"]
    assert len([t for t in tags if t.startswith("manylinux")]) == count
    assert f"manylinux_2_28_{machine}" in tags or glibc < "2.28"


def test_a_machine_without_glibc_gets_only_its_linux_tag():
    assert platform_tags("aarch64", None) == ["linux_aarch64"]
    assert platform_tags("aarch64", "") == ["linux_aarch64"]


def test_a_manylinux_2_28_wheel_resolves_for_a_glibc_2_36_target(tmp_path: Path):
    """For real: pip download, as the torch role runs it, of a manylinux_2_28-only wheel."""
    args = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--dest", str(tmp_path),
        "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
    ]  # fmt: skip
    requirement = "cryptography==46.0.3"  # its cp311-abi3 Linux wheels are manylinux_2_28 + 2_34
    only_exact = subprocess.run(
        [*args, "--platform", "manylinux_2_36_x86_64", requirement],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert only_exact.returncode != 0
    every_tag = subprocess.run(
        [*args, *pip_platform_args("x86_64", "2.36"), requirement],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert every_tag.returncode == 0, every_tag.stderr
    (wheel,) = tmp_path.glob("*.whl")
    assert "manylinux_2_34_x86_64" in wheel.name or "manylinux_2_28_x86_64" in wheel.name
