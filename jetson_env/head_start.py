"""The doctor's head start: a plain `jetson-env doctor` on this machine starts its probes
before the command line's own imports (the checks, rich, PyYAML, packaging: a third of a
second, more on a busy or small machine), so that they overlap torch's import in the target
instead of coming before it.

The probes come from the checks' catalogue (jetson_env.check_catalogue, plain data), which
the doctor selects with too. Only the command lines whose probes are known without the
command line's imports start early: `doctor`
with none but --json, --no-smoke, --quick, --python, -v, -q and --no-color (before or after
the command; --no-color sets NO_COLOR first, as the command line does, so the launcher has the
run's environment). The run that follows takes the launcher only if it asks for the same
interpreter, script and environment (jetson_env.targets.LocalTarget.launch), else ends it and
starts its own: a guess that went stale costs one process start, never a different report.
"""

from __future__ import annotations

import os
import sys

from jetson_env import check_catalogue, probing, targets
from jetson_env.exit_codes import EXIT_INTERRUPTED

QUIET = ("-q", "--quiet", "--verbose", "--no-color")  # and -v, -vv ...: what changes no probe


def plain_doctor(argv: list[str]) -> tuple[str, list[str]] | None:
    """(the target interpreter, the probes, in the registry's order) for a plain doctor's
    command line, else None. The probes are the doctor's: its checks' from the catalogue."""
    words = list(argv)
    while words and _quiet(words[0]):
        words.pop(0)
    if not words or words.pop(0) != "doctor":
        return None
    python, smoke, quick = None, True, False
    while words:
        word = words.pop(0)
        if word == "--no-smoke":
            smoke = False
        elif word == "--quick":
            quick = True
        elif word == "--python" and words:
            python = words.pop(0)
        elif word.startswith("--python="):
            python = word.partition("=")[2]
        elif word != "--json" and not _quiet(word):
            return None
    needed = check_catalogue.needed_probes(check_catalogue.select(None, smoke, quick))
    names = [probe.name for probe in probing.PROBES if probe.name in needed]
    return (targets.DEFAULT_PYTHON if python is None else python), names


def _quiet(word: str) -> bool:
    return word in QUIET or (len(word) > 1 and word.strip("v") == "-")


def begin(argv: list[str]) -> None:
    """Start the probes of a plain doctor's command line now (nothing for any other)."""
    plain = plain_doctor(argv)
    if plain is None:
        return
    python, names = plain
    if "--no-color" in argv:
        plain_output()
    timeouts, groups = probing.launch_plan(names, None, together=False)
    targets.start_early(python, probing.launcher_script(groups, timeouts))


def plain_output() -> None:
    """--no-color: NO_COLOR for this process and what it starts (the probes, Ansible, pip:
    no-color.org)."""
    os.environ["NO_COLOR"] = "1"


def main() -> int:
    """The `jetson-env` command: the head start, then the command line (jetson_env.cli)."""
    try:
        begin(sys.argv[1:])
        from jetson_env import cli

        return cli.main()
    except KeyboardInterrupt:  # before the command handles it: during its imports
        sys.stderr.write("error: interrupted\n")
        return EXIT_INTERRUPTED
    finally:
        targets.end_early()
