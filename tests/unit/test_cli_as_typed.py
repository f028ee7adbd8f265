"""Issue 59: what a user types means what it says. The installed console script, run by its full
path from an unrelated folder, as README's first line leaves it (in .venv, not on PATH):
a folder named on the command line that this machine does not have is bad input (exit 2
before any probe); -q silences progress and the spinner wherever it is typed.
"""

from __future__ import annotations

import errno
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

JETSON_ENV = str(Path(sys.executable).with_name("jetson-env"))  # the console script


def environment(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS")}  # fmt: skip
    return {**env, "TERM": "xterm-256color", **more}


def piped(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([JETSON_ENV, *args], cwd=cwd, env=environment(), capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def on_a_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """The console script with stdin, stdout and stderr on a pseudo-terminal: its exit code
    and all it wrote there, escape sequences included."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([JETSON_ENV, *args], stdin=follower, stdout=follower,
                            stderr=follower, cwd=cwd, env=environment())  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError as exc:  # EIO: the process closed its end
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=300), b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--engines", "/nonexistent"],
        ["doctor", "--quick", "--engines", "{models}", "--engines", "/nonexistent/models"],
        ["doctor", "--check", "engine-files", "--engines", "/nonexistent", "--fix", "--yes"],
        ["doctor", "--check", "engine-files", "--engines", "{file}"],
        ["plan", "--to", "R36.5.0", "--engines", "/nonexistent"],
    ],
    ids=" ".join,
)
def test_a_mistyped_folder_here_is_bad_input_before_any_probe(args, tmp_path):
    """`doctor --engines /nonexistent` on this machine: exit 2 with the path and what to give
    (as for a missing -i file), nothing probed or fixed; also in --json's one document. (--fix
    goes with --check engine-files: on code that lets the typo pass, no role may run here.)"""
    (tmp_path / "models").mkdir()
    (tmp_path / "model.engine").write_bytes(b"ftrt")
    args = [a.format(models=tmp_path / "models", file=tmp_path / "model.engine") for a in args]
    wrong = next(a for a in args if a.startswith("/nonexistent") or a.endswith(".engine"))
    what = "not a folder" if wrong.endswith(".engine") else "no such folder"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = piped("--no-color", *args, cwd=elsewhere)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: --engines {wrong}: {what} on this machine",
        "  -> give the folder that holds the engine files (.engine, .plan, .trt); a folder on "
        "another host: --host USER@HOST or -i INVENTORY",
    ], done.stderr  # no "probing ..." line: nothing ran
    as_json = piped(*args, "--json", cwd=elsewhere)
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"] == f"--engines {wrong}: {what} on this machine"
    assert list(elsewhere.iterdir()) == []


QUIET_COMMANDS = {  # each with what its answer says, quiet or not, and whether a pipe gets
    # progress lines without -q (a spinner is a terminal's only)
    "doctor": (["doctor", "--quick", "--check", "platform"], "jetson-env doctor: local", True),
    "info": (["info"], "Python", False),
}


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("command", sorted(QUIET_COMMANDS))
def test_quiet_leaves_out_progress_and_the_spinner_wherever_typed(command, where, tmp_path):
    """-q (before or after the command): on a terminal no spinner, in a pipe no progress
    line; the answer and the exit code stay. The same run without -q shows the progress,
    so its absence is -q's doing."""
    args, answer, progress_in_a_pipe = QUIET_COMMANDS[command]
    quiet = ["-q", *args] if where == "before" else [*args, "-q"]
    code, said = on_a_terminal(*args, cwd=tmp_path)
    assert "probing local" in said, said[-2000:]  # the spinner's text
    quiet_code, quiet_said = on_a_terminal(*quiet, cwd=tmp_path)
    assert quiet_code == code, quiet_said[-2000:]
    assert answer in quiet_said, quiet_said[-2000:]
    assert "probing" not in quiet_said and "\x1b[?25l" not in quiet_said, quiet_said[:2000]
    loud, hushed = piped(*args, cwd=tmp_path), piped(*quiet, cwd=tmp_path)
    assert ("probing local" in loud.stderr) is progress_in_a_pipe, loud.stderr
    assert hushed.returncode == loud.returncode and answer in hushed.stdout
    assert hushed.stderr == "", hushed.stderr
