"""Argument types and checks that several commands share."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from jetson_env.exit_codes import EXIT_USAGE
from jetson_env.terminal import Terminal

MIN_TIMEOUT = 1  # --timeout, seconds


def seconds(text: str) -> float:
    """--timeout: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    if value < MIN_TIMEOUT:  # no interpreter starts sooner: it would be blamed for the timeout
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_TIMEOUT:g} seconds (an interpreter's start), not {text}"
        )
    return value


def forks(text: str) -> int:
    """--forks: a positive whole number."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text!r}")
    return int(text)


def json_output(parser: argparse.ArgumentParser, what: str = "JSON on stdout") -> None:
    """--json, as every command that shows data has it (docs/json.md)."""
    parser.add_argument("--json", action="store_true", help=f"{what} (docs/json.md)")


def python_option(
    parser: argparse.ArgumentParser, help: str, metavar: str | None = None, default=None
) -> None:
    """--python, the interpreter the probes or the playbook run on the target, in every command
    that runs one (doctor, plan, provision, info, images tag); bundle's targets are not here to
    run: their Python is a version (--python-version)."""
    parser.add_argument("--python", metavar=metavar, default=default, help=help)


def inventory(parser: argparse.ArgumentParser, help: str, forks_help: str | None = None) -> None:
    """-i/--inventory, then -l/--limit and -f/--forks, as ansible-playbook spells them, in
    every command that takes an inventory (doctor, plan, provision, bundle). -f/--forks is the
    one word for "this many at once" (bundle's: downloads, `forks_help` with its default)."""
    parser.add_argument("-i", "--inventory", metavar="INVENTORY", help=help)
    parser.add_argument(
        "-l", "--limit", metavar="PATTERN", help="only these hosts of the inventory (Ansible's "
        "--limit)"
    )  # fmt: skip
    parser.add_argument("-f", "--forks", type=forks, metavar="N",
                        help=forks_help or "hosts at once (Ansible's --forks)")  # fmt: skip


ROLES_METAVAR = "ROLE[,ROLE]"


def roles_option(parser: argparse.ArgumentParser, help: str, *aliases: str, dest: str) -> None:
    """--roles ROLE[,ROLE]: which of the playbook's roles, spelled so in every command that
    takes some (doctor --fix, provision, bundle); `aliases`: provision's -t/--tags, as
    ansible-playbook spells them (the roles are the playbook's tags)."""
    action = parser.add_argument("--roles", *aliases, dest=dest, metavar=ROLES_METAVAR,
                                 help=help)  # fmt: skip
    action.completer = _complete_roles  # argcomplete's (docs/completion.md)


def _complete_roles(prefix: str, **_kwargs) -> list[str]:
    """The playbook's roles that complete the last of `prefix`'s comma-separated words."""
    from jetson_env import collection

    done, _, last = prefix.rpartition(",")
    given = set(done.split(","))
    lead = f"{done}," if done else ""
    return [lead + role for role in collection.provision_roles()
            if role.startswith(last) and role not in given]  # fmt: skip


def renamed(parser: argparse.ArgumentParser, old: str, new: str, why: str) -> None:
    """An option's old spelling, refused (exit 2, the command's usage) with the sentence that
    names the new one: nothing is run with a word whose meaning changed."""

    class Renamed(argparse.Action):
        instead = new.split()[0]  # what a misspelling of `old` is offered (cli.Parser)

        def __call__(self, parser, namespace, values, option_string=None):
            parser.error(f"{old} is now {new}: {why}")

    parser.add_argument(old, action=Renamed, nargs="?", help=argparse.SUPPRESS)


def checked_bundle(args: argparse.Namespace, term: Terminal):
    """--bundle DIR [--trust KEY.pub] of `provision` and `doctor --fix`, checked before any
    host is touched (bundle.check_before_provision): the bundle's Provisioning, None without
    --bundle, or an exit code."""
    if args.trust and not args.bundle:
        term.error("--trust checks a bundle's signature: give the bundle with --bundle DIR")
        return EXIT_USAGE
    if not args.bundle:
        return None
    from jetson_env import bundle

    try:
        return bundle.check_before_provision(args.bundle, Path(args.trust) if args.trust else None)
    except bundle.BundleError as exc:
        term.error(str(exc), hint=exc.hint)
        return exc.exit_code


def missing_folder(args: argparse.Namespace, term: Terminal) -> int | None:
    """EXIT_USAGE for an --engines folder this machine does not have, when the command checks
    this machine (a mistyped path is bad input, as a missing -i file is: said before any
    probe, never a passing run); None when each is a folder. On another host the engines
    check says so in a finding of its own (checks/engines.py)."""
    for folder in args.engines or []:
        path = Path(folder)
        if not path.is_dir():
            what = "not a folder" if path.exists() else "no such folder"
            term.error(f"--engines {folder}: {what} on this machine",
                       hint="give the folder that holds the engine files (.engine, .plan, .trt); "
                       "a folder on another host: --host USER@HOST or -i INVENTORY")  # fmt: skip
            return EXIT_USAGE
    return None


# What the user sets instead, per option that has no meaning with -i (Ansible reaches the
# hosts with the inventory's settings).
INSTEAD_WITH_INVENTORY = {
    "python": "set ansible_python_interpreter (or jetson_facts_python) for those hosts in "
    "the inventory",
    "identity": "set ansible_ssh_private_key_file for those hosts in the inventory, or load "
    "the key into ssh-agent",
    "password": "use a key (ssh-agent, ansible_ssh_private_key_file), or run "
    "ansible-playbook's --ask-pass yourself",
    "accept_new_host_key": "record the host's key first, as the report of an unknown host "
    "key says (its fingerprint and the command that records it), or set "
    "ansible_ssh_common_args='-o StrictHostKeyChecking=accept-new' for those hosts",
}


def refused_with_inventory(
    args: argparse.Namespace, term: Terminal, instead: dict[str, str] | None = None
) -> int | None:
    """EXIT_USAGE, with the reason and what to do instead, for an option given with -i that
    only --host or this machine reads (Ansible reaches an inventory's hosts with the
    inventory's own settings); None when there is none. `instead`: this command's own."""
    for name, what in {**INSTEAD_WITH_INVENTORY, **(instead or {})}.items():
        if getattr(args, name, None) not in (None, False, []):
            option = "--" + name.replace("_", "-")
            term.error(f"{option} does not apply to --inventory: Ansible reaches its hosts with "
                       "the inventory's settings", hint=what)  # fmt: skip
            return EXIT_USAGE
    return None


def report_problem(report: str | None) -> str | None:
    """Why --report FILE cannot be written (said before any host is probed); None when it
    can, or without --report. One rule for the doctor's pages and the plan's."""
    if report is None:
        return None
    from jetson_env.fleet import page as fleet_page

    path = Path(report)
    if path.suffix.lower() not in fleet_page.FORMATS:
        return f"--report {report}: the file name must end in {' or '.join(fleet_page.FORMATS)}"
    if not path.parent.is_dir():
        return f"--report {report}: no folder {path.parent}"
    if why := fleet_page.unwritable(path):
        return f"--report {report}: {why}"
    return None


def write_report(term: Terminal, report: str, page: str, exit_code: int,
                 shown: str = "the report") -> int:  # fmt: skip
    """The page written to --report FILE after the run was shown: the run's exit code, or
    EXIT_USAGE when the file could not be written (said, with the run above it)."""
    try:
        Path(report).write_text(page, encoding="utf-8")
    except OSError as exc:
        term.error(f"--report {report} was not written: {exc.strerror or exc}",
                   hint=f"{shown} is above; give a file you can write")  # fmt: skip
        return max(exit_code, EXIT_USAGE)
    term.note(f"report written to {report}")
    return exit_code
