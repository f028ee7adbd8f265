"""Issue 50, item 2: the output options behave as the help says, wherever they are typed.
`--no-color`, NO_COLOR and a stdout that is not a terminal give text with no escape sequence;
on a real terminal (a pseudo-terminal from python's pty module) the same run is coloured,
so the plain cases are shown against output that would carry them. The global options are
taken before the command and after it."""

import os
import subprocess
import sys

import pytest
from support.terminal import on_a_pty

ESC = "\x1b"
COMMANDS = (  # each with what it says in words, coloured or not
    (["doctor", "--quick", "--no-smoke"], "(exit code 1)"),  # coloured rows here (no GPU)
    (["matrix", "--l4t", "R1.0.0"], "error: "),  # an error, bold red on stderr
)


def environment(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS")}  # fmt: skip
    return {**env, "TERM": "xterm-256color", **more}


def on_a_terminal(args: list[str], cwd, **env: str) -> tuple[int, str]:
    """jetson-env on a pseudo-terminal: its exit code and all it wrote there, escape
    sequences included."""
    return on_a_pty([sys.executable, "-m", "jetson_env.cli", *args], cwd, environment(**env),
                    timeout=120)  # fmt: skip


@pytest.mark.parametrize(("args", "words"), COMMANDS, ids=["doctor", "matrix"])
def test_a_terminal_gets_colour_and_every_plain_way_gets_none(args, words, tmp_path):
    code, coloured = on_a_terminal(args, tmp_path)
    assert code in (1, 2), coloured
    assert f"{ESC}[" in coloured, coloured  # what the plain runs must not carry
    plain_runs = {
        "--no-color before the command": on_a_terminal(["--no-color", *args], tmp_path),
        "--no-color after the command": on_a_terminal([*args, "--no-color"], tmp_path),
        "NO_COLOR": on_a_terminal(args, tmp_path, NO_COLOR="1"),
    }
    for how, (plain_code, plain) in plain_runs.items():
        assert plain_code == code, (how, plain)
        assert ESC not in plain, (how, plain[:2000])
        assert words in plain, (how, plain[:2000])
    piped = subprocess.run([sys.executable, "-m", "jetson_env.cli", *args], cwd=tmp_path,
                           env=environment(), capture_output=True, text=True)  # fmt: skip
    assert piped.returncode == code, piped.stderr
    assert ESC not in piped.stdout + piped.stderr, piped.stdout + piped.stderr
    assert words in piped.stdout + piped.stderr


def test_no_color_reaches_what_jetson_env_runs(tmp_path):
    """--no-color is said to Ansible and pip too (they read NO_COLOR): ansible-playbook's
    warning and error, coloured on a terminal, come plain."""
    nobody = ["provision", "--", "--list-hosts", "--limit", "nohost"]
    _, coloured = on_a_terminal(nobody, tmp_path)
    assert f"{ESC}[0;31m[ERROR]" in coloured, coloured[-3000:]
    code, plain = on_a_terminal(["--no-color", *nobody], tmp_path)
    assert code != 0 and "[WARNING]: Could not match supplied host pattern" in plain, plain
    assert ESC not in plain, plain[-3000:]


@pytest.mark.parametrize(
    "args",
    [
        ["matrix", "--l4t", "R36.4.3", "-v"],
        ["matrix", "--l4t", "R36.4.3", "--quiet"],
        ["-q", "matrix", "--l4t", "R36.4.3"],
        ["images", "tag", "--l4t", "R36.4.3", "--no-color", "-v"],
        ["doctor", "--list", "--no-color", "-q"],
        ["info", "--version"],
    ],
    ids=" ".join,
)
def test_global_options_are_taken_after_the_command(args, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "jetson_env.cli", *args], cwd=tmp_path,
                          env=environment(), capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), proc.stderr


def test_quiet_leaves_out_the_notes_and_keeps_the_answer(tmp_path):
    """-q: no progress or notes on stderr (provision's "running: ..."); the answer stays."""
    tags = ["provision", "--", "--list-tags"]
    said, quiet = (
        subprocess.run([sys.executable, "-m", "jetson_env.cli", *args], cwd=tmp_path,
                       env=environment(), capture_output=True, text=True, timeout=300)
        for args in (tags, [*tags[:1], "-q", *tags[1:]])
    )  # fmt: skip
    assert quiet.returncode == said.returncode == 0, quiet.stderr
    assert "TASK TAGS: [always, cuda_env" in quiet.stdout, quiet.stdout
    assert "running: " in said.stderr and "running: " not in quiet.stderr, quiet.stderr
