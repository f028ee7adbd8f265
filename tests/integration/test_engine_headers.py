"""The engines probe reads which TensorRT built an engine from the file's own header, without
TensorRT: each layout's stand-in (tests/fixtures/engines/README.md says where each byte comes
from), the sidecar beside it, and hostile files, which are "unknown" with a reason, never a
traceback or a hang. The probe runs as the doctor runs it: in a Python of its own, with its
arguments bound before its source (jetson_env.probing)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from support.pythons import interpreter, required

from jetson_env.probing import probe_all
from jetson_env.targets import LocalTarget

STANDINS = Path(__file__).resolve().parent.parent / "fixtures" / "engines"
PYTHON36 = interpreter("3.6.15")


def engines_in(*folders: Path, timeout: float = 60, python: str = sys.executable) -> dict:
    found = probe_all(LocalTarget(python), ["engines"], timeout, lambda _: None,
                      {"engines": {"folders": [str(f) for f in folders]}})["engines"]  # fmt: skip
    assert found.ok, found.error
    return {Path(e["path"]).name: e for e in found.data["engines"]}


@pytest.mark.parametrize(
    "name, version, layout",
    [
        ("standin-trt8.6.engine", "8.6.1.6", "plan"),
        ("standin-trt10.engine", "10.3.0.30", "plan"),
        ("standin-trt11.plan", "11.1.0.106", "plan"),
        ("standin-ultralytics-trt10.engine", "10.7.0.23", "ultralytics"),
    ],
)
def test_each_layout_names_the_tensorrt_that_serialized_it(name, version, layout):
    required("3.6.15")
    engine = engines_in(STANDINS, python=str(PYTHON36))[name]  # the oldest target Python
    assert (engine["tensorrt"], engine["header"], engine["layout"]) == (version, version, layout)
    assert engine["source"] == "header" and engine["unknown"] is None


@pytest.mark.parametrize(
    "name, why",
    [
        ("standin-ftrt-no-version.engine", "no version TensorRT writes there"),
        ("standin-serialization1.trt", "serialization version 1"),
    ],
)
def test_a_plan_whose_header_names_no_version_is_unknown_with_the_reason(name, why):
    engine = engines_in(STANDINS)[name]
    assert engine["tensorrt"] is None and engine["layout"] == "plan"
    assert why in engine["unknown"]


@pytest.mark.parametrize(
    "name, layout, offset",
    [
        ("standin-before8.6-ptrt.engine", "plan", 0),
        ("standin-ultralytics-before8.6.engine", "ultralytics", 60),
    ],
)
def test_an_engine_of_tensorrt_before_8_6_is_a_plan_whose_version_is_unknown(name, layout, offset):
    """Engines of TensorRT 7.2 and 8.x in public repositories begin with "ptrt" (docs/doctor.md,
    "Real engine files"): a TensorRT plan of a release before 8.6, never "not a TensorRT
    plan", with or without Ultralytics' metadata before it."""
    required("3.6.15")
    engine = engines_in(STANDINS, python=str(PYTHON36))[name]
    assert (engine["tensorrt"], engine["layout"]) == (None, layout)
    assert engine["unknown"] == (
        f"a TensorRT plan of a release before 8.6 (the tag ptrt at byte {offset}; 8.6 and later "
        "begin with ftrt), whose version no code of TensorRT's reads from the file"
    )


def test_the_header_and_the_sidecar_agree_and_the_sidecar_adds_what_the_header_lacks():
    engine = engines_in(STANDINS)["standin-trt10.engine"]
    sidecar = json.loads((STANDINS / "standin-trt10.engine.json").read_text())
    assert engine["tensorrt"] == engine["header"] == sidecar["tensorrt"] == "10.3.0.30"
    assert engine["sidecar"]["tensorrt"] == sidecar["tensorrt"]
    assert engine["compute_capability"] == "8.7"
    assert engine["hardware_compatibility"] == "none" and engine["version_compatible"] is False
    assert engine["compute_capability"] is not None
    assert engines_in(STANDINS)["standin-trt11.plan"]["compute_capability"] is None


def test_a_sidecar_that_contradicts_the_header_makes_the_engine_unknown(tmp_path: Path):
    shutil.copy(STANDINS / "standin-trt10.engine", tmp_path / "model.engine")
    (tmp_path / "model.engine.json").write_text('{"tensorrt": "10.16.1.11"}')
    engine = engines_in(tmp_path)["model.engine"]
    assert engine["tensorrt"] is None
    assert "10.3.0.30" in engine["unknown"] and "10.16.1.11" in engine["unknown"]


@pytest.mark.parametrize("python", [sys.executable, str(PYTHON36)], ids=["this", "python3.6"])
def test_hostile_files_are_unknown_never_a_traceback_or_a_hang(tmp_path: Path, python: str):
    if python == str(PYTHON36):
        required("3.6.15")
    plan = (STANDINS / "standin-trt10.engine").read_bytes()
    (tmp_path / "truncated.engine").write_bytes(plan[:20])
    (tmp_path / "empty.plan").write_bytes(b"")
    (tmp_path / "text.trt").write_text("not an engine at all\n")
    (tmp_path / "lfs.engine").write_text(  # a clone without git-lfs
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 9\n"
    )
    (tmp_path / "endless-metadata.engine").write_bytes(b"\xff\xff\xff\x7f{")
    with open(tmp_path / "huge.engine", "wb") as handle:  # 8 GiB, sparse: only 28 bytes read
        handle.write(b"\0" * 64)
        handle.truncate(8 << 30)
    os.mkfifo(tmp_path / "fifo.engine")  # nobody writes: a reader that opened it would wait
    os.symlink(tmp_path / "loop.engine", tmp_path / "loop.engine")
    os.symlink("/dev/zero", tmp_path / "zero.engine")
    (tmp_path / "x.engine").mkdir()

    start = time.monotonic()
    engines = engines_in(tmp_path, timeout=30, python=python)
    assert time.monotonic() - start < 20

    why = {name: engine["unknown"] for name, engine in engines.items()}
    assert set(why) == {
        "truncated.engine",
        "empty.plan",
        "text.trt",
        "lfs.engine",
        "endless-metadata.engine",
        "huge.engine",
        "fifo.engine",
        "loop.engine",
        "zero.engine",
        "x.engine",
    }
    assert all(engine["tensorrt"] is None for engine in engines.values())
    assert "ends 20 bytes into the plan header" in why["truncated.engine"]
    assert "ends 0 bytes" in why["empty.plan"]
    assert "not a TensorRT plan" in why["text.trt"]
    assert "not a TensorRT plan" in why["endless-metadata.engine"]
    assert "a Git LFS pointer to one (`git lfs pull` fetches it)" in why["lfs.engine"]
    assert "not a TensorRT plan" in why["huge.engine"]
    assert "not a regular file" in why["fifo.engine"]
    assert "not a regular file" in why["zero.engine"]
    assert "symbolic links" in why["loop.engine"]
    assert why["x.engine"] == "a directory, not an engine file"
    assert engines["huge.engine"]["size"] == 8 << 30


def test_plan_reads_the_same_headers_and_asks_the_same_rule():
    """`plan --to R39.2.2 --engines DIR` on a JetPack 6.2 Orin (TensorRT 10.3 -> 10.16): the
    engines probe's headers, judged by jetson_env.engine_files (the GPU stays)."""
    from jetson_env import matrix
    from jetson_env.plan import judgement

    rows = matrix.load()
    change = judgement.Change(rows.release("36.4.3"), rows.release("39.2.2"), "3.10", "3.12",
                                 judgement.REFLASH)  # fmt: skip
    found = probe_all(LocalTarget(sys.executable), ["engines"], 60, lambda _: None,
                      {"engines": {"folders": [str(STANDINS)]}})["engines"]  # fmt: skip
    parts = {Path(p.name).name: p for p in judgement._engine_parts(found.data, change)}
    assert parts["standin-trt10.engine"].now == "TensorRT 10.3.0.30 (header)"
    assert parts["standin-trt10.engine"].verdict == "rebuild"
    assert parts["standin-ultralytics-trt10.engine"].now == "TensorRT 10.7.0.23 (header)"
    assert parts["standin-trt11.plan"].verdict == "rebuild"
    assert "rebuild: built by TensorRT 11.1.0.106" in parts["standin-trt11.plan"].reason
    assert parts["standin-ftrt-no-version.engine"].verdict == "rebuild"  # not 10.16's header
    assert "no version TensorRT writes there" in parts["standin-ftrt-no-version.engine"].reason
    before = parts["standin-before8.6-ptrt.engine"]
    assert (before.now, before.verdict) == ("TensorRT ? (host: 10.3)", "rebuild")
    assert "a TensorRT plan of a release before 8.6" in before.reason
