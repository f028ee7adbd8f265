"""The slow tier's keys (tests/support/slow_tier.py) and the Ansible ends each playbook test
runs at (tests/conftest.py), as pytest collects them."""

import subprocess
import sys
from pathlib import Path

import pytest
from support import slow_tier

ROOT = Path(__file__).resolve().parents[2]


def test_the_key_follows_the_inputs_contents_and_nothing_else(tmp_path: Path):
    (tmp_path / "roles" / "a").mkdir(parents=True)
    (tmp_path / "roles" / "a" / "main.yml").write_text("one\n")
    (tmp_path / "matrix.yml").write_text("rows\n")
    key = slow_tier.inputs_key(("roles", "matrix.yml"), checkout=tmp_path)

    (tmp_path / "roles" / "__pycache__").mkdir()
    (tmp_path / "roles" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (tmp_path / "elsewhere.txt").write_text("not an input\n")
    slow_tier.inputs_key.cache_clear()
    assert slow_tier.inputs_key(("roles", "matrix.yml"), checkout=tmp_path) == key

    (tmp_path / "roles" / "a" / "main.yml").write_text("two\n")
    slow_tier.inputs_key.cache_clear()
    assert slow_tier.inputs_key(("roles", "matrix.yml"), checkout=tmp_path) != key

    with pytest.raises(FileNotFoundError, match="slow-tier input nowhere does not exist"):
        slow_tier.inputs_key(("nowhere",), checkout=tmp_path)


def test_a_green_run_is_recorded_per_test_and_key(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(slow_tier, "STAMPS", tmp_path / "stamps")
    assert slow_tier.last_green("tests/x.py::t", "abc") is None
    slow_tier.record_green("tests/x.py::t", "abc")
    assert slow_tier.last_green("tests/x.py::t", "abc").startswith("20")
    assert slow_tier.last_green("tests/x.py::t", "abd") is None
    assert slow_tier.last_green("tests/x.py::u", "abc") is None


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
