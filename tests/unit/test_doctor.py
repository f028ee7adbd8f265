"""`jetson-env doctor` as a user runs it: a real process, probes in real interpreters.

The target interpreters are real venvs made here; packages are real (termcolor from
the index) or, for the hang and the crash, a package whose import really hangs or dies.
"""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import jsonschema
import pytest

from jetson_env.checks import CHECKS

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "doctor-report.schema.json").read_text())


def doctor(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "--no-color", "doctor", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A fresh venv with nothing installed (not even pip)."""
    root = tmp_path_factory.mktemp("bare-venv")
    venv.create(root, with_pip=False)
    return str(root / "bin" / "python")


def site_packages(python: str) -> Path:
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def findings_of(proc, check):
    report = json.loads(proc.stdout)
    return [f for f in report["findings"] if f["check"] == check]


def test_json_report_follows_the_documented_schema(bare_python):
    proc = doctor("--json", "--no-smoke", "--python", bare_python)
    report = json.loads(proc.stdout)
    jsonschema.validate(report, SCHEMA)
    assert proc.returncode == report["exit_code"]
    assert [f["check"] for f in report["findings"]] == sorted(
        (f["check"] for f in report["findings"]),
        key=[c.name for c in CHECKS].index,
    )
    assert {f["check"] for f in report["findings"]} == {c.name for c in CHECKS} - {
        "smoke",
        "packages",  # --quick only
        "engine-files",  # --engines only
    }
    assert "smoke" not in report["probes"]
    assert report["engines"] is None and "engines" not in report["probes"]
    for finding in report["findings"]:
        if finding["status"] in ("warn", "fail"):
            assert finding["remedy"], finding


def test_missing_termcolor_fails_with_the_pip_command_for_that_python(bare_python):
    proc = doctor("--json", "--check", "termcolor", "--python", bare_python)
    assert proc.returncode == 1, proc.stderr
    (finding,) = findings_of(proc, "termcolor")
    assert finding["status"] == "fail"
    assert finding["remedy"].startswith(f"{bare_python} -m pip install termcolor")


def test_installed_termcolor_is_healthy_exit_0(tmp_path):
    root = tmp_path / "venv"
    venv.create(root, with_pip=False)
    python = str(root / "bin" / "python")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--target", str(site_packages(python)), "termcolor"],
        check=True, capture_output=True,
    )  # fmt: skip
    proc = doctor("--json", "--check", "termcolor", "--python", python)
    assert proc.returncode == 0, proc.stdout
    (finding,) = findings_of(proc, "termcolor")
    assert finding["status"] == "ok"
    assert finding["remedy"] is None


def stage_torch(python: str, body: str) -> None:
    """A `torch` package in the venv whose import does `body` (hang, crash)."""
    package = site_packages(python) / "torch"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(body)


def test_a_hanging_probe_is_a_timeout_finding_and_the_others_finish(tmp_path):
    root = tmp_path / "venv"
    venv.create(root, with_pip=False)
    python = str(root / "bin" / "python")
    stage_torch(python, "import time\ntime.sleep(120)\n")

    proc = doctor("--json", "--check", "torch", "--check", "termcolor", "--timeout", "5",
                  "--python", python, timeout=60)  # fmt: skip

    assert proc.returncode == 1
    (torch,) = findings_of(proc, "torch")
    assert torch["status"] == "crash"
    assert torch["summary"] == "probe 'torch' timed out after 5s"
    (termcolor,) = findings_of(proc, "termcolor")
    assert termcolor["status"] == "fail"
    assert "Traceback" not in proc.stderr


def test_a_segfaulting_import_is_a_crash_finding(tmp_path):
    root = tmp_path / "venv"
    venv.create(root, with_pip=False)
    python = str(root / "bin" / "python")
    stage_torch(python, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")

    proc = doctor("--json", "--check", "torch", "--python", python)

    (torch,) = findings_of(proc, "torch")
    assert torch["status"] == "crash"
    assert torch["summary"] == "probe 'torch' was killed by SIGSEGV"
    assert proc.returncode == 1


def test_table_shows_remedies_and_details_only_with_verbose(bare_python):
    quiet = doctor("--check", "termcolor", "--python", bare_python)
    verbose = doctor("--check", "termcolor", "--python", bare_python, "-v")
    fix = "Fixes, in the order to apply them:\n1. termcolor:\n"
    fix += f"{bare_python} -m pip install termcolor\n"
    fix += (
        f"   or the playbook's role python_base: jetson-env doctor --python {bare_python} "
        "--fix python_base\n"
    )  # the Python checked, not python3
    assert fix in quiet.stdout and fix in verbose.stdout
    # The raw import error is a detail: shown once more with -v (the summary quotes it too).
    error = "No module named 'termcolor'"
    assert verbose.stdout.count(error) == quiet.stdout.count(error) + 1
    assert "FAIL: 1 failed (exit code 1)" in quiet.stdout


def test_at_80_columns_every_fix_is_printed_whole_on_a_line(bare_python):
    as_json = doctor("--json", "--no-smoke", "--python", bare_python)
    table = doctor("--no-smoke", "--python", bare_python, env={"COLUMNS": "80"})
    fixes = json.loads(as_json.stdout)["fixes"]
    # the driver, what only a GPU uses (one step, left out here: no GPU), cuda's, termcolor's
    assert len(fixes) >= 4
    lines = table.stdout.splitlines()
    for fix in fixes:
        assert fix["command"] in lines
        heading = lines[lines.index(fix["command"]) - 1]
        assert heading == f"{fix['number']}. {', '.join(fix['checks'])}:"
    assert max(len(line) for line in lines if "│" in line) <= 80


def test_list_names_every_check_in_order():
    proc = doctor("--list", "--json")
    assert proc.returncode == 0
    assert [c["name"] for c in json.loads(proc.stdout)["checks"]] == [c.name for c in CHECKS]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--check", "nope"], "unknown check 'nope'"),
        (["--host", "user@host:notaport"], "is not user@host[:port]"),
    ],
)
def test_usage_errors_exit_2(args, message):
    proc = doctor(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_host_that_is_down_is_a_finding_and_exit_3(tmp_path):
    port = free_port()
    proc = doctor("--json", "--host", f"root@127.0.0.1:{port}", env={"HOME": str(tmp_path)})
    assert proc.returncode == 3
    report = json.loads(proc.stdout)
    jsonschema.validate(report, SCHEMA)
    (finding,) = report["findings"]
    assert finding["check"] == "connection"
    assert finding["status"] == "fail"
    assert f"127.0.0.1:{port}" in finding["summary"]
    assert "refused" in finding["summary"].lower()
    hint = f"check that the host is up and sshd listens: ssh -p {port} root@127.0.0.1 true"
    assert finding["remedy"] == hint
    assert "Traceback" not in proc.stderr
