"""The `jetson-env` command line: the global options, then each command's module
(jetson_env.commands) adds its own arguments and runs it.

Exit codes: 0 ok, 1 a check failed (or crashed), 2 usage or input error, 3 the target
could not be reached or its interpreter cannot run the probes, 130 interrupted (Ctrl-C),
143 terminated (SIGTERM); every probe process is ended before it exits.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import textwrap

from jetson_env import head_start, installed
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
    """--version: what runs (installed.show_version: what it reads is read only when asked);
    as JSON where --json is on the command line too. `argv`: the command line main() parses."""

    argv: tuple[str, ...] = ()

    def __init__(self, option_strings, dest, **kwargs):
        what = "jetson-env, its collection, ansible-core, the matrix's date, the Python"
        super().__init__(option_strings, dest, nargs=0, help=f"show what runs ({what}); exit")

    def __call__(self, parser, namespace, values, option_string=None):
        installed.show_version(as_json="--json" in self.argv)
        parser.exit()


class Parser(argparse.ArgumentParser):
    """The command line's parser, and each command's (argparse makes a command's parser of its
    parent's class): what it does not know it refuses itself, with its own usage (`doctor`'s
    for `doctor --enignes`, not the top level's), and names the nearest option or command."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:  # nothing in jetson-env takes unknown arguments: `--` passes them on
            options = [extra.partition("=")[0] for extra in extras if extra.startswith("-")]
            # A hidden old spelling (options.renamed) is offered as its new one.
            known = {
                name: getattr(action, "instead", name)
                for name, action in self._option_string_actions.items()
                if action.help != argparse.SUPPRESS or hasattr(action, "instead")
            }
            self.error(f"unrecognized arguments: {' '.join(extras)}"
                       + _nearest(options, known))  # fmt: skip
        return namespace, extras

    def _check_value(self, action, value):
        """An invalid choice (a command's name, `--check NAME`) with the nearest valid one."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            choices = {str(choice): str(choice) for choice in action.choices}
            raise argparse.ArgumentError(
                action, exc.message + _nearest([str(value)], choices)
            ) from None


def _nearest(typed: list[str], known: dict[str, str]) -> str:
    """What to append to the error: `; did you mean X?`, X what `known` offers for the name
    closest to each word typed (difflib's measure, as Python 3.14's argparse uses); empty when
    none is close. difflib is imported here, off every command's start."""
    import difflib

    near = [known[match] for word in typed
            for match in difflib.get_close_matches(word, list(known), n=1)]  # fmt: skip
    return f"; did you mean {', '.join(dict.fromkeys(near))}?" if near else ""


class HelpFormatter(argparse.HelpFormatter):
    """argparse's wrapping, between words only: a path (an installed doc's) stays whole."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False,
                             break_on_hyphens=False)  # fmt: skip

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent,
                             subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False)  # fmt: skip


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the probes are ended as for Ctrl-C."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="jetson-env",
        description="From a freshly flashed Jetson or x86 GPU host to working PyTorch -> "
        "TensorRT conversion, and proof that it works.",
        epilog=f"Documentation: {installed.DOCS}",
        formatter_class=HelpFormatter,
    )
    _global_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    for command_parser in _command_parsers(parser):
        _global_options(command_parser, after_the_command=True)
        _name_installed_docs(command_parser)
        command_parser.formatter_class = HelpFormatter
    return parser


def _global_options(parser: argparse.ArgumentParser, after_the_command: bool = False) -> None:
    """--version, --no-color, -q, -v: before the command or after it, as people type them. A
    command's own option of the same name (doctor's -v) is the command's. After the command,
    an option absent leaves what was given before it (SUPPRESS); -v counts in both places."""
    taken = parser._option_string_actions if after_the_command else {}
    kept = {"default": argparse.SUPPRESS} if after_the_command else {}
    options = (
        (("--version",), {"action": VersionAction}),
        (("--no-color",), {"action": "store_true", "help": "plain output, no escape sequences "
                           "(also NO_COLOR, and whenever stdout is not a terminal)", **kept}),
        (("-q", "--quiet"), {"action": "store_true", "help": "no progress or notes on stderr",
                             **kept}),
        (("-v", "--verbose"), {"action": "count", "dest": "verbose_after" if after_the_command
                               else "verbose", "default": kept.get("default", 0),
                               "help": "more details"}),
    )  # fmt: skip
    group = parser.add_argument_group("global options") if after_the_command else parser
    for names, settings in options:
        names = tuple(name for name in names if name not in taken)
        if names:
            group.add_argument(*names, **settings)


def _command_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every command's parser, the nested ones (`images list`) too."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command_parser in dict.fromkeys(action.choices.values()):
                found += [command_parser, *_command_parsers(command_parser)]
    return found


_DOC = re.compile(r"\bdocs/([\w-]+\.(?:md|json))")


def _name_installed_docs(parser: argparse.ArgumentParser) -> None:
    """Help texts name docs as the README does (docs/doctor.md); an installed jetson-env has
    its own copy, which --help names instead: the path that opens here."""

    def here(text: str | None) -> str | None:
        return text and _DOC.sub(lambda match: str(installed.doc(match.group(1))), text)

    parser.description = here(parser.description)
    parser.epilog = here(parser.epilog)
    for action in parser._actions:
        action.help = here(action.help)


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
    VersionAction.argv = tuple(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (docs/completion.md)
        _complete(parser)
    args = parser.parse_args(argv)
    if args.no_color:
        head_start.plain_output()
    term = Terminal(
        as_json=getattr(args, "json", False),
        verbosity=-1 if args.quiet else args.verbose + getattr(args, "verbose_after", 0),
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


def _complete(parser: argparse.ArgumentParser) -> None:
    """argcomplete's answer to the shell, then exit; without jetson-env[completion], none."""
    try:
        import argcomplete
    except ImportError:
        sys.exit(EXIT_USAGE)
    argcomplete.autocomplete(parser)


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
        term.error(
            str(exc), hint=f"`{installed.command('jetson-env matrix')}` lists what is supported"
        )
        return EXIT_USAGE
    except MatrixError as exc:
        term.error(str(exc), hint="fix the named row of the matrix file")
        return EXIT_USAGE
    except KeyboardInterrupt:
        cancel_all()
        term.error("interrupted: every process it started was ended")
        return EXIT_INTERRUPTED
    except Terminated:
        cancel_all()
        term.error("terminated: every process it started was ended")
        return EXIT_TERMINATED
    finally:
        strays.end()


def _raise_terminated(_signum, _frame) -> None:
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())
