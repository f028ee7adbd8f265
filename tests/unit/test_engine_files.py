"""The one rule (jetson_env.engine_files.verdict) that the portability check, `doctor --engines`
and `plan --engines` share: an engine of the engines probe, a host's TensorRT and compute
capability in; loads, rebuild or unknown out, with the sentence that says why."""

from __future__ import annotations

import pytest

from jetson_env import engine_files
from jetson_env.checks import engines as engine_checks
from jetson_env.engine_files import LOADS, REBUILD, UNKNOWN

ORIN_ENGINE = {"tensorrt": "10.3.0.30", "compute_capability": "8.7"}


@pytest.mark.parametrize(
    "engine, tensorrt, capability, verdict, words",
    [
        (ORIN_ENGINE, "10.3.0", "8.7", LOADS,
         "loads here (TensorRT 10.3.0.30, compute capability 8.7)"),
        ({**ORIN_ENGINE, "tensorrt": "10.3.0.26"}, "10.3.0.30", "8.7", LOADS, "loads here"),
        (ORIN_ENGINE, "10.16.1.11", "8.7", REBUILD,
         "rebuild: built by TensorRT 10.3.0.30 for compute capability 8.7, this host has TensorRT "
         "10.16.1.11 and compute capability 8.7 (unless it was built version-compatible"),
        ({**ORIN_ENGINE, "version_compatible": False}, "10.16.1.11", "8.7", REBUILD,
         "and compute capability 8.7"),
        ({**ORIN_ENGINE, "version_compatible": True}, "10.16.1.11", "8.7", LOADS,
         "version-compatible: loads on a later TensorRT"),
        ({**ORIN_ENGINE, "version_compatible": True}, "11.1.0", "8.7", LOADS,
         "loads here (TensorRT 10.3.0.30, compute capability 8.7; version-compatible"),
        ({"tensorrt": "8.6.1.6", "compute_capability": "8.7", "version_compatible": True},
         "10.3.0", "8.7", LOADS, "version-compatible: loads on a later TensorRT"),
        ({"tensorrt": "8.5.2.2", "compute_capability": "8.7", "version_compatible": True},
         "8.6.2", "8.7", REBUILD, "rebuild: built by TensorRT 8.5.2.2"),
        ({**ORIN_ENGINE, "tensorrt": "11.1.0.106", "version_compatible": True}, "10.3.0", "8.7",
         REBUILD, "rebuild: built by TensorRT 11.1.0.106"),
        ({**ORIN_ENGINE, "tensorrt": "10.16.1.11"}, "10.3.0", "8.7", REBUILD, "10.16.1.11"),
        (ORIN_ENGINE, "10.3.0", "9.0", REBUILD,
         "rebuild: built by TensorRT 10.3.0.30 for compute capability 8.7, this host has TensorRT "
         "10.3.0 and compute capability 9.0"),
        ({**ORIN_ENGINE, "hardware_compatibility": "ampere_plus"}, "10.3.0", "9.0", LOADS,
         "hardware-compatible"),
        ({**ORIN_ENGINE, "hardware_compatibility": "ampere_plus"}, "10.3.0", "7.5", REBUILD,
         "from 8.0 on"),
        ({"tensorrt": "10.3.0.30"}, "10.3.0", "8.7", UNKNOWN, "not in its header and no sidecar"),
        ({"tensorrt": "10.3.0.30"}, "10.16.1", "8.7", REBUILD, "(compute capability unknown)"),
        ({"tensorrt": None, "unknown": "no TensorRT plan tag"}, "10.3.0", "8.7", UNKNOWN,
         "unknown: no TensorRT plan tag"),
        (ORIN_ENGINE, None, "8.7", UNKNOWN, "this host's TensorRT was not found"),
        (ORIN_ENGINE, "10.3.0", None, UNKNOWN, "no compute capability found here"),
    ],
    ids=["same", "another-build", "newer-host-same-major", "newer-host-plain", "version-compatible",
         "version-compatible-across-majors", "version-compatible-8.6-on-10",
         "version-compatible-not-before-8.6", "version-compatible-not-backwards", "older-host",
         "orin-engine-on-an-h100",
         "hardware-compatible", "hardware-compatible-not-on-turing", "no-capability",
         "no-capability-but-another-tensorrt", "unread", "no-tensorrt-here", "no-gpu-here"],
)  # fmt: skip
def test_the_rule(engine, tensorrt, capability, verdict, words):
    said, why = engine_files.verdict(engine, tensorrt, capability)
    assert said == verdict
    assert words in why


def test_an_upgrade_keeps_the_gpu_so_only_the_tensorrt_is_in_question():
    assert engine_files.verdict({"tensorrt": "10.16.2"}, "10.16", None, after="R39.2.2") == (
        LOADS, "loads on R39.2.2's TensorRT 10.16 (TensorRT 10.16.2)")  # fmt: skip
    assert engine_files.verdict({"tensorrt": "10.3.0"}, "10.16", None, after="R39.2.2") == (
        REBUILD, "rebuild: built by TensorRT 10.3.0, R39.2.2 has TensorRT 10.16 (unless it was "
        "built version-compatible, which its header does not record)")  # fmt: skip


def test_worst_first():
    assert engine_files.worst([LOADS, UNKNOWN]) == UNKNOWN
    assert engine_files.worst([LOADS, REBUILD, UNKNOWN]) == REBUILD
    assert engine_files.worst([]) == LOADS


@pytest.mark.parametrize(
    "engines",
    [
        {"engines": ["/m/a.engine", 7], "missing": "/m"},
        {"engines": [{"path": ["/m/b.engine"], "tensorrt": {"v": 10}, "compute_capability": 8.7,
                      "version_compatible": "yes", "hardware_compatibility": []}]},
        {"engines": "/m/c.engine", "missing": [["/x"]]},
    ],
    ids=["entries-not-records", "fields-of-other-types", "lists-not-lists"],
)  # fmt: skip
def test_an_engines_record_of_another_shape_is_shown_never_a_crash(engines):
    """What a host's engines probe sent (its sidecars' fields among it) is data: each odd
    entry is a row of its own, unknown or judged on what it says as text; a folder the host
    lacks, a failure that names it as text."""
    rows = engine_checks.rows(engines, "10.3.0", "8.7")
    missing = engine_checks.missing_folders(engines)
    assert rows or missing
    assert all(isinstance(row["path"], str) for row in rows)
    assert all(f.status == "fail" and isinstance(f.summary, str) for f in missing)
    assert {row["verdict"] for row in rows} <= {LOADS, REBUILD, UNKNOWN}
    assert engine_checks.host_tensorrt({"loaded": {"version": ["10"]}}) is None
    assert engine_checks.host_tensorrt("10.3.0") is None
