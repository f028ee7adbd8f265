"""The kept states' keys (tests/support/slow_tier.py, inputs_key) and the Ansible ends each
playbook test runs at (tests/conftest.py), as pytest collects them."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import slow_tier
from support.ansible_envs import ANSIBLE_ENDS

ROOT = Path(__file__).resolve().parents[2]


def git_checkout(path: Path) -> Path:
    (path / "roles" / "a").mkdir(parents=True)
    (path / "roles" / "a" / "main.yml").write_text("one\n")
    (path / "matrix.yml").write_text("rows\n")
    (path / ".gitignore").write_text("__pycache__/\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "add", "roles"], check=True)
    return path


def test_the_key_follows_the_inputs_contents_and_nothing_else(tmp_path: Path):
    checkout = git_checkout(tmp_path / "one")
    key = slow_tier.inputs_key(("roles", "matrix.yml"), checkout=checkout)

    (checkout / "roles" / "__pycache__").mkdir()
    (checkout / "roles" / "__pycache__" / "x.pyc").write_bytes(b"\0")  # ignored by git
    (checkout / "elsewhere.txt").write_text("not an input\n")
    slow_tier.inputs_key.cache_clear()
    assert slow_tier.inputs_key(("roles", "matrix.yml"), checkout=checkout) == key

    # Another clone's path, times and index state: the same key.
    other = tmp_path / "two"
    shutil.copytree(checkout, other)
    for path in other.rglob("*"):
        os.utime(path, (1, 1))
    subprocess.run(["git", "-C", str(other), "add", "-A"], check=True)
    assert slow_tier.inputs_key(("roles", "matrix.yml"), checkout=other) == key

    (checkout / "roles" / "a" / "main.yml").write_text("two\n")
    slow_tier.inputs_key.cache_clear()
    changed = slow_tier.inputs_key(("roles", "matrix.yml"), checkout=checkout)
    assert changed != key
    (checkout / "roles" / "b.yml").write_text("new, not yet added\n")
    slow_tier.inputs_key.cache_clear()
    assert slow_tier.inputs_key(("roles", "matrix.yml"), checkout=checkout) not in (key, changed)

    with pytest.raises(FileNotFoundError, match="slow-tier input nowhere does not exist"):
        slow_tier.inputs_key(("nowhere",), checkout=checkout)


@pytest.mark.parametrize("end", ["newest", "oldest"])
def test_an_ansible_end_is_keyed_by_its_releases_not_by_this_machine(end: str):
    """Not the venv's folder (this machine's Python path, the week it was made): a fresh
    clone elsewhere that installed the same releases computes the same key."""
    versions = ANSIBLE_ENDS[end].ensure().versions
    assert re.fullmatch(r"ansible \d+\.\d+\.\d+, ansible_core 2\.\d+\.\d+, Python 3\.\d+", versions)


def collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_oldest_end_runs_only_where_the_end_matters():
    modules = [f"tests/integration/test_{name}.py" for name in ("playbook_x86", "playbook_aarch64",
                                                                 "bundle_offline")]  # fmt: skip
    ids = collected(*modules)
    oldest = {n.split("/")[-1] for n in ids if "[oldest" in n}
    assert oldest == {
        "test_playbook_x86.py::test_wrong_variable_type_fails_before_any_change[oldest]",
        "test_playbook_x86.py::test_provision_x86[oldest]",
        "test_playbook_x86.py::test_second_run_changes_nothing[oldest]",
        "test_playbook_x86.py::test_docker_restart_failure_restores_daemon_json[oldest]",
        "test_playbook_aarch64.py::test_provision_orin[oldest]",
        "test_playbook_aarch64.py::test_second_run_changes_nothing[oldest]",
        "test_playbook_aarch64.py::test_nano_docker_runtime_needs_jetpack4_csv_lists[oldest]",
        "test_bundle_offline.py::test_provision_from_the_bundle_with_no_network[oldest]",
        "test_bundle_offline.py::test_second_run_changes_nothing[oldest]",
    }
    # Every other test runs at the newest end.
    newest = {n.split("[")[0] for n in ids if "[newest" in n}
    assert {n.split("[")[0] for n in ids} - newest == {
        "tests/integration/test_playbook_aarch64.py::test_nano_docker_runtime_needs_jetpack4_csv_lists"
    }
