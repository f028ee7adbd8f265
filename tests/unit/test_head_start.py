"""The doctor's head start (jetson_env.head_start): a plain `jetson-env doctor` starts its
probe launcher before the command line's imports, the run takes that launcher, and the report
is the one the command line gives without it. Real processes, this interpreter as the target."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from support.signals import sigint_as_in_a_terminal

from jetson_env import check_catalogue, doctor, head_start, probing, targets

REPO_ROOT = Path(__file__).resolve().parents[2]
# What the command line imports and the head start must not wait for.
HEAVY = ("rich", "yaml", "packaging", "jetson_env.checks", "jetson_env.cli", "jetson_env.matrix")
# The console entry as the `jetson-env` script runs it, with an audit hook that prints, in
# order, the first import of each HEAVY module and each process it starts.
WATCHED = f"""
import runpy, sys
heavy = {HEAVY!r}
seen = set()
def hook(event, args):
    if event == "import" and args[0] in heavy and args[0] not in seen:
        seen.add(args[0])
        sys.stderr.write("@@import " + args[0] + "\\n")
    elif event == "subprocess.Popen" and "-c" in list(args[1]):
        sys.stderr.write("@@popen " + str(list(args[1])[0]) + "\\n")
sys.addaudithook(hook)
sys.argv = ["jetson-env", *sys.argv[1:]]
runpy.run_module("jetson_env", run_name="__main__")
"""


def watched(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    proc = subprocess.run([sys.executable, "-c", WATCHED, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)  # fmt: skip
    events = [line[2:] for line in proc.stderr.splitlines() if line.startswith("@@")]
    return proc, events


def doctors_probes(smoke: bool, quick: bool) -> list[str]:
    """What the doctor's run of a plain command line probes, in the registry's order."""
    checks = doctor.select(None, smoke=smoke, quick=quick)
    needed = check_catalogue.needed_probes(check.name for check in checks)
    return [probe.name for probe in probing.PROBES if probe.name in needed]


def test_the_console_script_is_the_head_start():
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["jetson-env"] == "jetson_env.head_start:main"


@pytest.mark.parametrize(
    "options, smoke, quick",
    [([], True, False), (["--no-smoke"], False, False), (["--quick"], True, True)],
    ids=["smoke", "no-smoke", "quick"],
)
def test_the_head_start_launches_what_a_plain_doctor_asks_for(options, smoke, quick):
    _python, names = head_start.plain_doctor(["doctor", *options])
    assert probing.launch_plan(names, None, together=False) == probing.launch_plan(
        doctors_probes(smoke, quick), None, together=False
    )


def test_the_head_start_and_the_doctor_read_one_catalogue(monkeypatch):
    """A check's line changed in the catalogue changes what the check reads, what the
    doctor selects and what a plain doctor starts early, at once: no second table."""
    monkeypatch.setitem(check_catalogue.CATALOGUE, "docker", ("docker", "packages"))
    monkeypatch.setattr(check_catalogue, "DEEP", {*check_catalogue.DEEP, "cudnn"})
    assert doctor.BY_NAME["docker"].probes == ("docker", "packages")
    assert "cudnn" not in [check.name for check in doctor.select(None, quick=True)]
    _python, plain = head_start.plain_doctor(["doctor", "--no-smoke"])
    _python, quick = head_start.plain_doctor(["doctor", "--quick"])
    assert "packages" in plain and "cudnn" in plain
    assert "cudnn" not in quick
    assert (plain, quick) == (doctors_probes(False, False), doctors_probes(True, True))


@pytest.mark.parametrize(
    "before, option",
    [([], "--no-smoke"), ([], "--quick"), (["--no-color"], "--no-smoke")],
    ids=["no-smoke", "quick", "no-color"],
)
def test_the_launcher_starts_before_the_command_lines_imports(tmp_path, before, option):
    """One launcher, started before rich, PyYAML or the checks are imported, and taken by
    the run (no second one; --no-color's NO_COLOR set before it starts); the exit code and
    report as without the head start."""
    proc, events = watched(*before, "doctor", "--json", option, "--python", sys.executable,
                           cwd=tmp_path)  # fmt: skip
    popens = [event for event in events if event.startswith("popen ")]
    assert popens == [f"popen {sys.executable}"], events
    assert events[0] == popens[0], events  # before any HEAVY import
    assert {f"import {name}" for name in HEAVY} <= set(events), events
    plain = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *before, "doctor", "--json", option,
         "--python", sys.executable], capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == plain.returncode, proc.stderr
    report, without = json.loads(proc.stdout), json.loads(plain.stdout)
    for data in (report, without):
        for probe in data["probes"].values():
            probe.pop("seconds")
    assert report == without


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--json", "--check", "platform"],
        ["doctor", "--json", "--timeout", "60"],
        ["info", "--json"],
    ],
    ids=["check", "timeout", "info"],
)
def test_no_head_start_where_the_probes_are_not_a_plain_doctors(tmp_path, args):
    """Each command line starts one launcher, after the command line's imports."""
    proc, events = watched(*args, "--python", sys.executable, cwd=tmp_path)
    popens = [index for index, event in enumerate(events) if event.startswith("popen ")]
    assert len(popens) == 1, events
    assert popens[0] > events.index("import jetson_env.checks"), events
    assert proc.returncode in (0, 1), proc.stderr


def test_a_launcher_started_for_another_script_is_ended_not_taken():
    targets.start_early(sys.executable, "import time\ntime.sleep(60)\n")
    (early,) = targets._EARLY
    launched = targets.LocalTarget(sys.executable).launch("print('another run')\n")
    try:
        assert launched is not early
        assert early.proc.poll() is not None  # ended
        assert not targets._EARLY
    finally:
        launched.end()


def test_a_launcher_no_run_took_is_ended():
    targets.start_early(sys.executable, "import time\ntime.sleep(60)\n")
    (early,) = targets._EARLY
    targets.end_early()
    assert early.proc.poll() is not None
    assert not targets._EARLY


@pytest.mark.parametrize(
    "argv, expected",  # (the target Python, smoke, quick), or None: no head start
    [
        (["doctor"], ("python3", True, False)),
        (["-v", "doctor", "--no-smoke", "-q", "--json"], ("python3", False, False)),
        (["doctor", "--python", "/opt/py", "-vv"], ("/opt/py", True, False)),
        (["doctor", "--python=/opt/py", "--no-smoke"], ("/opt/py", False, False)),
        (["doctor", "--quick", "--no-smoke"], ("python3", False, True)),
        (["doctor", "--host", "h"], None),
        (["doctor", "--python"], None),
        (["doctor", "--timeout", "3"], None),
        (["--no-color", "doctor", "--no-color"], ("python3", True, False)),
        (["doctor", "--no-smoke", "--check", "torch"], None),
        (["info"], None),
        ([], None),
    ],
)
def test_which_command_lines_are_a_plain_doctor(argv, expected):
    if expected is not None:
        python, smoke, quick = expected
        expected = (python, doctors_probes(smoke, quick))
    assert head_start.plain_doctor(argv) == expected


def test_ctrl_c_during_the_command_lines_imports_is_an_interruption(tmp_path: Path):
    """Ctrl-C in the first half second, while the command line is still imported (here the
    real SIGINT, raised as jetson_env.cli's import begins): exit 130 and one line, as later,
    not KeyboardInterrupt's traceback."""
    ctrl_c = WATCHED.replace(
        "sys.addaudithook(hook)",
        "import signal\n"
        'sys.addaudithook(lambda event, args: event == "import" and args[0] == "jetson_env.cli"'
        " and signal.raise_signal(signal.SIGINT))",
    )
    proc = subprocess.run([sys.executable, "-c", ctrl_c, "doctor", "--no-smoke"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          preexec_fn=sigint_as_in_a_terminal)  # fmt: skip
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "error: interrupted\n"
