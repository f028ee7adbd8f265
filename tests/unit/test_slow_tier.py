"""The Ansible ends each playbook test runs at (tests/conftest.py), as pytest collects them."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.ansible_envs import ANSIBLE_ENDS

ROOT = Path(__file__).resolve().parents[2]


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
