"""Issue 50, item 1: every command line in README.md and docs/*.md runs as printed.

The lines are read from the files: each line of a shell block, and each inline `code` that
starts with a command. jetson-env's lines are parsed by jetson-env's own parser (a synopsis,
`[--json]`, `A | B`, `...`, has each of its options checked on that command instead), and
the cheap ones run for real; a pip line that installs jetson-env must say where from, as
jetson-env is on no package index. The README's two set-up commands and its provisioning
install run verbatim in tests/integration (test_bundle_making.py,
test_provisioning_as_users_run_it.py), and the doctor's fixes in the doctor's own tests.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
from contextlib import redirect_stderr
from io import StringIO
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from support.hosts import fresh_clone, project_wheel

from jetson_env.cli import build_parser

ROOT = Path(__file__).parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCKS = {"sh", "bash", "console", "shell"}
COMMAND = re.compile(r"(\S*/)?(jetson-env|pip3?|python3?(\.\d+)?) ")
SYNOPSIS = re.compile(r"[\[\]|<>]|\.\.\.")  # [optional], a | b, <what>, repeated ...
# Lines that answer at once and touch nothing: run for real, from an unrelated folder.
CHEAP = (("matrix",), ("images", "list"), ("images", "tag"), ("doctor", "--list"))


def command_lines() -> list[tuple[str, str, bool]]:
    """(where, line, whether it is a shell block's) for each command line of the README and
    docs."""
    found = []
    for path in FILES:
        name = path.relative_to(ROOT)
        block = None
        prose = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("```"):
                block = line[3:].strip() if block is None else None
                continue
            if block in SHELL_BLOCKS and line.strip() and not line.lstrip().startswith("#"):
                found.append((f"{name}:{number}", line.strip(), True))
            elif block is None:
                prose.append((number, line))
        text = "\n".join(line for _, line in prose)
        for match in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text):
            span = " ".join(match.group(1).split())
            if COMMAND.match(span) and ("jetson-env" in span.split()[0] or " install " in span):
                number = prose[text[: match.start()].count("\n")][0]
                found.append((f"{name}:{number}", span, False))
    return found


LINES = command_lines()


def commands(line: str) -> list[list[str]]:
    """The simple commands of a shell line: `$( )` and pipelines, `&&` and `;` apart; the
    comment dropped."""
    inner = re.findall(r"\$\(([^)]*)\)", line)
    outer = re.sub(r"\$\([^)]*\)", "X", line)
    found = []
    for part in (outer, *inner):
        words = shlex.split(part, comments=True)
        current: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", "||", "|", ";"):
                if current:
                    found.append(current)
                current = []
            else:
                current.append(word)
    return found


def jetson_env_commands() -> list[tuple[str, list[str], str, bool]]:
    return [
        (where, argv[1:], line, block)
        for where, line, block in LINES
        for argv in commands(line)
        if Path(argv[0]).name == "jetson-env"
    ]


def _parse(argv: list[str]) -> str | None:
    """jetson-env's parser on argv: None, or what it said to refuse it."""
    said = StringIO()
    try:
        with redirect_stderr(said):
            build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code:
            return said.getvalue().strip().splitlines()[-1]
    return None


def _command_parser(argv: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the (sub)command argv names, and the command's words."""
    parser, path = build_parser(), []
    for word in argv:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers or word not in subparsers[0].choices:
            if word.startswith("-") or not subparsers:
                continue
            break
        parser, path = subparsers[0].choices[word], [*path, word]
    return parser, path


@pytest.mark.parametrize(("where", "argv", "line", "block"), jetson_env_commands(),
                         ids=[where for where, *_ in jetson_env_commands()])  # fmt: skip
def test_each_jetson_env_line_is_taken_by_its_parser(where, argv, line, block):
    parser, path = _command_parser(argv)
    if not block and path == argv:  # a command named in prose (`jetson-env bundle`): it is one
        assert path, f"{where}: `{line}`"
        return
    if SYNOPSIS.search(line):
        options = {o for a in parser._actions for o in a.option_strings}
        words = [word.strip("[]()").split("=")[0] for word in argv]
        ours = words[: words.index("--")] if "--" in words else words  # then ansible-playbook's
        named = {word for word in ours if word.startswith("-")}
        assert named <= options, f"{where}: `{line}`: jetson-env {' '.join(path)} has no " \
            f"{sorted(named - options)}"  # fmt: skip
        return
    refused = _parse(argv)
    assert refused is None, f"{where}: `{line}`: {refused}"


def cheap_lines() -> list[tuple[str, list[str]]]:
    return [
        (where, argv)
        for where, argv, line, _ in jetson_env_commands()
        if not SYNOPSIS.search(line) and any(tuple(argv[: len(c)]) == c for c in CHEAP)
    ]


@pytest.mark.parametrize(("where", "argv"), cheap_lines(),
                         ids=[where for where, _ in cheap_lines()])  # fmt: skip
def test_the_cheap_lines_run_as_printed(where, argv, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "jetson_env.cli", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, f"{where}: jetson-env {shlex.join(argv)}: {proc.stderr}"
    assert proc.stdout.strip(), where


def test_the_lines_found_include_the_readmes_and_each_commands():
    """The reader of the files finds what is there (a reader that finds nothing passes all)."""
    lines = {line for _, line, _ in LINES}
    assert "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/jetson-env doctor" \
        in lines  # fmt: skip
    named = {argv[0] for _, argv, _, _ in jetson_env_commands() if argv}
    assert {"doctor", "info", "plan", "matrix", "provision", "bundle", "images"} <= named
    assert len(cheap_lines()) >= 3


def pip_installs() -> list[tuple[str, str]]:
    return [
        (where, line)
        for where, line, _ in LINES
        for argv in commands(line)
        if (Path(argv[0]).name.startswith("pip") and argv[1:2] == ["install"])
        or argv[1:4] == ["-m", "pip", "install"]
    ]


@pytest.mark.parametrize(("where", "line"), pip_installs(),
                         ids=[where for where, _ in pip_installs()])  # fmt: skip
def test_a_pip_line_that_installs_jetson_env_says_where_from(where, line):
    """`pip install 'jetson-env[provision]'` fails on a fresh machine: "No matching
    distribution found". A path (`.[provision]`, a wheel) or --find-links is what works."""
    for argv in commands(line):
        if "--find-links" in argv or "-f" in argv:
            continue
        for word in argv:
            try:
                named = Requirement(word).name
            except InvalidRequirement:
                continue  # a path, an option
            assert named != "jetson-env", f"{where}: `{line}`: jetson-env is on no index"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jetson-env's wheel, installed into a folder of its own (PYTHONPATH): no checkout."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(site), str(project_wheel())], check=True, timeout=300)  # fmt: skip
    return site


def test_the_docs_the_help_names_are_in_the_installed_wheel(installed, tmp_path):
    """--help names docs/*.md: an installed jetson-env (its wheel, no checkout beside it)
    names its own copy by a path that opens, whole on its line."""
    named = set()
    for command in ([], ["doctor"], ["plan"], ["bundle"], ["provision"], ["images", "list"]):
        helped = subprocess.run([sys.executable, "-m", "jetson_env.cli", *command, "--help"],
                                cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(installed)},
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert helped.returncode == 0, helped.stderr
        assert "docs/" not in helped.stdout.replace("jetson_env/docs/", ""), helped.stdout
        for path in re.findall(r"(/\S+?\.md)\b", helped.stdout):
            assert Path(path).is_file() and Path(path).is_relative_to(installed), path
            named.add(Path(path).name)
    assert {"doctor.md", "json.md", "plan.md", "playbook.md"} <= named, named


def ansible_lines() -> list[tuple[str, str]]:
    return [(where, line) for where, line, block in LINES
            if block and commands(line)[0][0].startswith("ansible-")]  # fmt: skip


def test_the_ansible_lines_run_as_printed(installed, tmp_path):
    """ansible-playbook's lines load their playbook (--syntax-check added: nothing runs) with
    the collection the wheel installed, and -K's password read; ansible-galaxy's build and
    install the collection for real, in a fresh clone (where the build writes its tarball),
    as the docs name it. `fleet.yml` is a one-host inventory of this machine."""
    clone = fresh_clone(tmp_path / "jetson-env")
    (clone / "fleet.yml").write_text("all:\n  hosts:\n    localhost:\n"
                                     "      ansible_connection: local\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(installed)}
    ran = []
    for where, line in ansible_lines():
        for argv in commands(line):
            program = Path(sys.executable).parent / argv[0]
            extra = ["--syntax-check"] if argv[0] == "ansible-playbook" else []
            proc = subprocess.run([str(program), *argv[1:], *extra], cwd=clone, env=env,
                                  input="\n", capture_output=True, text=True,
                                  timeout=300)  # fmt: skip
            assert proc.returncode == 0, f"{where}: `{line}`: {proc.stdout[-2000:]}{proc.stderr}"
            ran.append(argv[:2])
    assert ["ansible-galaxy", "collection"] in ran and ["ansible-playbook", "-i"] in ran, ran
