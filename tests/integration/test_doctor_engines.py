"""`jetson-env doctor --engines DIR`: per engine file, "loads here", "rebuild: ..." or
"unknown: why", read from each file's own header (tests/fixtures/engines: stand-ins).

Here: the installed command from another folder, on this machine with a stand-in libnvinfer
10.3.0 on LD_LIBRARY_PATH and a stand-in nvidia-smi naming a compute capability 9.0 GPU (the
files NVIDIA ships cannot be here; tests/support/standins.py). A fleet, through real Ansible:
an emulated Orin of this module's own (compute capability 8.7 from its SoC) with the stand-in
libnvinfer 10.3.0 through the loader, and the x86 test host (no TensorRT, no GPU), each with
the stand-in engines in the same folder: the engine x host grid on the terminal, in --json
and on the --report pages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import yaml
from playbook_support import remove_host, start_host
from referencing import Registry, Resource
from support.hosts import VENV, Host
from support.standins import COMPILERS, build_libnvinfer

STANDINS = Path(__file__).resolve().parent.parent / "fixtures" / "engines"
DOCS = Path(__file__).parents[2] / "docs"
REPORT_SCHEMA = json.loads((DOCS / "doctor-report.schema.json").read_text())
FLEET_SCHEMA = json.loads((DOCS / "doctor-fleet.schema.json").read_text())
JETSON_ENV = str(Path(sys.executable).with_name("jetson-env"))
ENGINES = "/var/tmp/jetson-env-engines-test"


def verdicts(engines: list[dict]) -> dict[str, tuple[str, str]]:
    return {Path(row["path"]).name: (row["verdict"], row["reason"]) for row in engines}


@pytest.fixture
def here(tmp_path: Path) -> dict[str, str]:
    """This machine as a host with TensorRT 10.3.0 and a compute capability 9.0 GPU."""
    build_libnvinfer("10.3.0", tmp_path / "lib")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"  # STAND-IN: what the platform probe asks nvidia-smi
    smi.write_text("#!/bin/sh\necho 'NVIDIA H100 80GB HBM3 (stand-in), 9.0'\n")
    smi.chmod(0o755)
    models = tmp_path / "models"
    shutil.copytree(STANDINS, models)
    (models / "h100").mkdir()
    shutil.copy(STANDINS / "standin-trt10.engine", models / "h100" / "built-here.engine")
    (models / "h100" / "built-here.engine.json").write_text(
        json.dumps({"tensorrt": "10.3.0.30", "compute_capability": "9.0"})
    )
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "LD_LIBRARY_PATH": str(tmp_path / "lib"), "COLUMNS": "250",
            "MODELS": str(models)}  # fmt: skip


def doctor(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([JETSON_ENV, "--no-color", "doctor", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


def test_fix_names_each_engine_to_rebuild_and_changes_nothing(here, tmp_path: Path):
    """`doctor --engines DIR --fix`: an engine is rebuilt by the tool that built it, not by a
    role; --fix says so per engine file (its remedy, as data in --json's plan.manual), runs
    no role and leaves the files as they were."""
    models = Path(here["MODELS"])
    before = {p: p.read_bytes() for p in models.rglob("*") if p.is_file()}
    args = ("--check", "engine-files", "--engines", here["MODELS"], "--fix", "--yes")
    done = doctor(here, *args, "--json", cwd=tmp_path)
    fixed = json.loads(done.stdout)
    manual = {Path(m["summary"].split(": ", 1)[0]).name: m for m in fixed["plan"]["manual"]}
    assert manual["standin-trt11.plan"]["check"] == "engine-files"
    assert manual["standin-trt11.plan"]["why"] == (
        "an engine is rebuilt by the tool that built it, on the GPU it runs on: no role of "
        "jetson-env rebuilds engine files"
    )
    assert {"standin-trt11.plan", "standin-ftrt-no-version.engine"} <= set(manual)
    assert "built-here.engine" not in manual  # it loads here
    assert fixed["plan"]["roles"] == [] and fixed["roles"] == [] and fixed["applied"] is False
    assert fixed["exit_code"] == done.returncode == 1  # the rebuilds are still failures

    text = " ".join(doctor(here, *args, cwd=tmp_path).stdout.split())
    assert (f"no automatic fix for engine-files on localhost: {models / 'standin-trt11.plan'}: "
            "rebuild: built by TensorRT 11.1.0.106") in text  # fmt: skip
    assert "no role of jetson-env rebuilds engine files" in text
    assert "rebuild it on this host with the tool that built it (`trtexec --onnx=MODEL.onnx" in text
    assert {p: p.read_bytes() for p in models.rglob("*") if p.is_file()} == before


def test_each_engine_file_here_loads_needs_a_rebuild_or_is_unknown(here, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ("--check", "engine-files", "--engines", here["MODELS"])
    done = doctor(here, *args, "--json", cwd=elsewhere)
    report = json.loads(done.stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert done.returncode == report["exit_code"] == 1  # a rebuild is a failed finding

    found = verdicts(report["engines"])
    settings = {Path(row["path"]).name: (row["hardware_compatibility"], row["version_compatible"])
                for row in report["engines"]}  # fmt: skip
    assert settings["standin-trt10.engine"] == ("none", False)  # its sidecar's
    assert settings["standin-trt11.plan"] == (None, None)  # no sidecar: not recorded
    assert found["built-here.engine"] == (
        "loads", "loads here (TensorRT 10.3.0.30, compute capability 9.0)")  # fmt: skip
    assert found["standin-trt10.engine"] == (
        "rebuild", "rebuild: built by TensorRT 10.3.0.30 for compute capability 8.7, this host "
        "has TensorRT 10.3.0 and compute capability 9.0")  # fmt: skip
    assert found["standin-trt11.plan"][0] == "rebuild"
    assert (
        "built by TensorRT 11.1.0.106 (compute capability unknown)"
        in found["standin-trt11.plan"][1]
    )
    assert found["standin-trt8.6.engine"][0] == "rebuild"
    assert found["standin-ultralytics-trt10.engine"][0] == "rebuild"
    assert "TensorRT 10.7.0.23" in found["standin-ultralytics-trt10.engine"][1]
    assert found["standin-ftrt-no-version.engine"][0] == "unknown"
    assert found["standin-serialization1.trt"][0] == "unknown"
    assert [row["verdict"] for row in report["engines"]] == sorted(
        (row["verdict"] for row in report["engines"]), key=["rebuild", "unknown", "loads"].index
    )
    by_status = {f["summary"].split(": ", 1)[0]: f["status"] for f in report["findings"]}
    assert by_status[str(Path(here["MODELS"]) / "h100" / "built-here.engine")] == "ok"
    assert by_status[str(Path(here["MODELS"]) / "standin-trt11.plan")] == "fail"
    assert by_status[str(Path(here["MODELS"]) / "standin-ftrt-no-version.engine")] == "warn"
    assert sorted(p.name for p in elsewhere.iterdir()) == []  # nothing written

    text = doctor(here, *args, cwd=elsewhere).stdout
    assert "built-here.engine: loads here (TensorRT 10.3.0.30, compute capability 9.0)" in " ".join(
        text.split()
    )


@pytest.fixture(scope="module")
def orin() -> Iterator[Host]:
    """An emulated Orin of this module's own, with a stand-in libnvinfer 10.3.0 (JetPack 6.2's)
    that the loader finds, and the stand-in engines."""
    host = start_host("orin-r36.4.3", "engines-orin")
    with tempfile.TemporaryDirectory() as folder:
        lib = Path(folder) / "lib"
        build_libnvinfer("10.3.0", lib, cc=COMPILERS["aarch64"])
        host.copy_in(lib, "/opt/standin-tensorrt-lib")
    host.exec(["sh", "-c", "echo /opt/standin-tensorrt-lib > /etc/ld.so.conf.d/standin-trt.conf"
               " && ldconfig"])  # fmt: skip
    host.copy_in(STANDINS, ENGINES)
    yield host
    remove_host(host)


def test_a_fleet_gets_an_engine_by_host_grid_worst_first(
    tmp_path: Path, orin: Host, x86_host: Host
) -> None:
    x86_host.copy_in(STANDINS, ENGINES)
    try:
        python = {"ansible_connection": "community.docker.docker",
                  "ansible_python_interpreter": f"{VENV}/bin/python"}  # fmt: skip
        hosts = {"orin": {**python, "ansible_host": orin.container},
                 "x86": {**python, "ansible_host": x86_host.container}}  # fmt: skip
        (tmp_path / "fleet.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
        env = {**os.environ, "COLUMNS": "250"}
        args = ("-i", "fleet.yml", "--check", "engine-files", "--engines", ENGINES)
        done = doctor(env, *args, "--json", "--report", "engines.html", cwd=tmp_path)
        fleet = json.loads(done.stdout)
        text = doctor(env, *args, "--report", "engines.md", cwd=tmp_path).stdout
    finally:
        x86_host.exec(["rm", "-rf", ENGINES])

    registry = Registry().with_resource(
        "doctor-report.schema.json", Resource.from_contents(REPORT_SCHEMA))  # fmt: skip
    jsonschema.Draft202012Validator(FLEET_SCHEMA, registry=registry).validate(fleet)
    grid = fleet["engines"]
    assert grid["hosts"] == [h["host"] for h in fleet["hosts"]]
    rows = {Path(row["path"]).name: row for row in grid["rows"]}
    orin_column, x86_column = grid["hosts"].index("orin"), grid["hosts"].index("x86")
    trt10 = rows["standin-trt10.engine"]["cells"]
    assert trt10[orin_column] == {"verdict": "loads", "reason": "loads here (TensorRT 10.3.0.30, "
                                  "compute capability 8.7)"}  # fmt: skip
    assert trt10[x86_column]["verdict"] == "unknown"
    assert "TensorRT was not found" in trt10[x86_column]["reason"]
    assert rows["standin-trt10.engine"]["verdict"] == "unknown"  # the worst of its cells
    trt11 = rows["standin-trt11.plan"]
    assert trt11["verdict"] == "rebuild" and trt11["cells"][orin_column]["verdict"] == "rebuild"
    order = [row["verdict"] for row in grid["rows"]]
    assert order == sorted(order, key=["rebuild", "unknown", "loads"].index)
    assert order[0] == "rebuild"

    flat = " ".join(text.split())
    assert "Engine files" in flat
    assert f"orin: {ENGINES}/standin-trt11.plan: rebuild: built by TensorRT 11.1.0.106" in flat
    page = (tmp_path / "engines.html").read_text()
    assert '<table id="engines">' in page
    assert (f'<tr data-engine="{ENGINES}/standin-trt10.engine">' in page
            and '<td class="ok" data-host="orin" title="loads here (TensorRT 10.3.0.30, '
            'compute capability 8.7)">loads</td>' in page)  # fmt: skip
    markdown = (tmp_path / "engines.md").read_text()
    assert "## Engine files" in markdown and "\\-trt11.plan" in markdown


def test_a_folder_a_host_of_the_fleet_lacks_fails_there(tmp_path: Path, x86_host: Host) -> None:
    """Issue 59: `-i ... --engines DIR` where a host has no DIR: that host fails, with a
    finding of its own and its remedy (where the folder is looked up), not a passing run."""
    x86_host.copy_in(STANDINS, ENGINES)
    try:
        hosts = {"x86": {"ansible_connection": "community.docker.docker",
                         "ansible_python_interpreter": f"{VENV}/bin/python",
                         "ansible_host": x86_host.container}}  # fmt: skip
        (tmp_path / "fleet.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
        env = {**os.environ, "COLUMNS": "250"}
        args = ("-i", "fleet.yml", "--check", "engine-files", "--engines", ENGINES,
                "--engines", "/gone")  # fmt: skip
        done = doctor(env, *args, "--json", cwd=tmp_path)
        text = doctor(env, *args, cwd=tmp_path)
    finally:
        x86_host.exec(["rm", "-rf", ENGINES])
    fleet = json.loads(done.stdout)
    (host,) = fleet["hosts"]
    assert host["status"] == "fail" and host["failing"] == ["engine-files"]
    gone = [f for f in host["report"]["findings"] if "/gone" in f["summary"]]
    assert [(f["status"], f["summary"]) for f in gone] == [
        ("fail", "--engines /gone: no such folder on this host")]  # fmt: skip
    assert gone[0]["remedy"].startswith("give --engines the folder as it is on that host")
    assert "/gone" not in [row["path"] for row in fleet["engines"]["rows"]]
    assert {Path(row["path"]).name for row in fleet["engines"]["rows"]} >= {"standin-trt11.plan"}
    assert done.returncode == fleet["exit_code"] == text.returncode == 1
    flat = " ".join(text.stdout.split())
    assert ("on x86: engine-files: give --engines the folder as it is on that host: the path is "
            "looked up there, not on the machine jetson-env runs on") in flat  # fmt: skip
