"""The `jetson-env` command line: the global options, then each command's module
(jetson_env.commands) adds its own arguments and runs it.

Exit codes: 0 ok, 1 a check failed (or crashed), 2 usage or input error, 3 the target
could not be reached or its interpreter cannot run the probes, 130 interrupted (Ctrl-C),
143 terminated (SIGTERM); every probe process is ended before it exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from jetson_env.commands import COMMANDS
from jetson_env.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from jetson_env.matrix import MatrixError, UnknownRelease, load
from jetson_env.targets import Strays, cancel_all
from jetson_env.terminal import Terminal


class VersionAction(argparse.Action):
    """--version, reading the package metadata only when asked (importlib.metadata is slow)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import version

        sys.stdout.write(f"{parser.prog} {version('jetson-env')}\n")
        parser.exit()


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the probes are ended as for Ctrl-C."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jetson-env",
        description="From a freshly flashed Jetson or x86 GPU host to working PyTorch -> "
        "TensorRT conversion, and proof that it works.",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--no-color", action="store_true", help="plain output (also NO_COLOR)")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        if sys.stderr is not None:
            sys.stderr.write(
                "error: stdout is closed: jetson-env writes its answer there\n"
                "  -> run it with stdout open (a terminal, a file or a pipe)\n"
            )
        return EXIT_USAGE
    for stream in (sys.stdout, sys.stderr):  # a path the locale cannot encode is still shown
        stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    term = Terminal(
        as_json=getattr(args, "json", False),
        color=not args.no_color or None,
        verbosity=args.verbose,
    )
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        code = _run(args, term)
        if term.as_json and not term.printed_json:  # --json: one document, also on failure
            message, hint = term.last_error or (None, None)
            term.json({"schema": 1, "exit_code": code, "error": message, "hint": hint})
        sys.stdout.flush()
    except OSError as exc:
        if not _stdout_fails():
            raise
        # /dev/full, a closed pipe: said once, and no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        term.error(f"stdout could not be written: {exc.strerror or exc}",
                   hint="give stdout a file or a pipe that takes it")  # fmt: skip
        return EXIT_FAILED
    return code


def _stdout_fails() -> bool:
    """Whether stdout refuses a write (the OSError being handled was stdout's)."""
    try:
        sys.stdout.write("\n")
        sys.stdout.flush()
    except OSError:
        return True
    return False


def _run(args: argparse.Namespace, term: Terminal) -> int:
    """The command, with the exits every command shares (bad matrix, Ctrl-C, SIGTERM)."""
    strays = Strays()  # what a probe or Ansible leaves behind ends with the doctor
    try:
        matrix = load()
        return args.func(args, term, matrix)
    except UnknownRelease as exc:
        term.error(str(exc), hint="`jetson-env matrix` lists what is supported")
        return EXIT_USAGE
    except MatrixError as exc:
        term.error(str(exc), hint="fix the named row of the matrix file")
        return EXIT_USAGE
    except KeyboardInterrupt:
        cancel_all()
        term.error("interrupted: every probe process was ended")
        return EXIT_INTERRUPTED
    except Terminated:
        cancel_all()
        term.error("terminated: every probe process was ended")
        return EXIT_TERMINATED
    finally:
        strays.end()


def _raise_terminated(_signum, _frame) -> None:
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())
