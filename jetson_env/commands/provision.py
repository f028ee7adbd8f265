"""`jetson-env provision`: the collection's playbook, run by ansible-playbook with Ansible's
short options, then a summary per host and one exit code (docs/playbook.md).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from jetson_env import provision_results, target_python
from jetson_env.commands.options import (
    checked_bundle,
    inventory,
    json_output,
    python_option,
    roles_option,
)
from jetson_env.exit_codes import EXIT_OK, EXIT_USAGE
from jetson_env.matrix import Matrix
from jetson_env.terminal import Terminal


def run(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    """ansible-playbook as the user would run it, its output as it comes; then what each host's
    roles changed (or would change) and the project's exit code for Ansible's."""
    from jetson_env import collection

    try:
        ansible_playbook = collection.ansible_command()
    except collection.AnsibleMissing as exc:
        term.error(str(exc), hint=exc.hint)
        return EXIT_USAGE
    unknown = collection.unknown_tags(args.tags)
    if unknown:
        term.error(
            f"--roles: no role {', '.join(unknown)} in the playbook (Ansible would run nothing)",
            hint=f"roles: {', '.join(collection.provision_roles())}",
        )
        return EXIT_USAGE
    from jetson_env import user_files

    problem = next(filter(None, map(user_files.extra_vars_problem, args.extra_vars)), None)
    problem = problem or user_files.ansible_arguments_problem(args.ansible_args)
    if problem:  # a FIFO would block Ansible, /dev/zero never ends: refused before it is read
        term.error(f"{problem}; nothing was run", hint=user_files.NotAFile.hint)
        return EXIT_USAGE
    if args.inventory:
        try:
            collection.inventory_hosts(args.inventory)
        except collection.BadInventory as exc:
            term.error(str(exc), hint=f"{exc.hint}, or leave out -i for this machine")
            return EXIT_USAGE
    from_bundle = checked_bundle(args, term)
    if isinstance(from_bundle, int):
        return from_bundle
    extra_vars = []  # what jetson-env adds is data (collection.Data): Ansible never templates it
    try:
        if args.inventory is None:
            python = target_python.local(args.python)
            variables = target_python.local_variables(python)
        elif args.python:  # the inventory's hosts' Python for this run, a path there
            python = target_python.checked(args.python)
            variables = {"jetson_facts_python": collection.Data(python)}
    except target_python.NoPython as exc:
        term.error(f"{exc}; nothing was changed", hint=exc.hint)
        return EXIT_USAGE
    if args.inventory is None or args.python:
        where = "" if args.inventory is None else " (on the inventory's hosts)"
        term.note(f"the Python to provision{where}: {python}")
        if args.inventory is None and os.geteuid() == 0:  # root needs no sudo, as --fix
            variables["ansible_become"] = False
        extra_vars.append(collection.extra_vars(variables))
    extra_vars += args.extra_vars
    if from_bundle is not None:
        if not args.tags:
            args.tags = ",".join(from_bundle.roles)
            term.note(
                f"--tags {args.tags}: what the bundle was made for, and what needs no download"
            )
        extra_vars.append(collection.extra_vars(collection.data(from_bundle.variables)))
    cmd = collection.provision_command(
        ansible_playbook, args.inventory, limit=args.limit, tags=args.tags,
        extra_vars=extra_vars, check=args.check, diff=args.diff, forks=args.forks,
        verbosity=getattr(args, "verbose", 0), ask_become_pass=args.ask_become_pass,
        passthrough=args.ansible_args,
    )  # fmt: skip
    term.note("running: " + shlex.join(cmd))
    sys.stdout.flush()
    sys.stderr.flush()
    env = {**collection.environment(ansible_playbook), **collection.STRICT_INVENTORY}
    if args.task_timeout:  # Ansible's own bound: the host it ends is named in its output
        env["ANSIBLE_TASK_TIMEOUT"] = str(args.task_timeout)
        term.note(f"--task-timeout: each task ends after {args.task_timeout} s on its host "
                  "(fatal: [HOST]: ... Timed out)")  # fmt: skip
    ansible_code, results = provision_results.run(cmd, env, output_to_stderr=term.as_json)
    code = provision_results.exit_code(ansible_code, results)
    if results is None:  # no play ran: refused, or a listing (-- --list-tasks) that is all
        if code != EXIT_OK:
            term.error(
                f"ansible-playbook exited {ansible_code} before any host's results (its "
                "output is above); nothing was summarised",
                hint="fix what Ansible names there (an option, the inventory, a variable)",
            )
        return code
    summary = provision_results.summary(results, check=args.check)
    if term.as_json:
        term.json({"schema": 1, "exit_code": code, "ansible_exit_code": ansible_code, **summary})
        return code
    term.line()
    for text, style in provision_results.lines(summary):
        term.line(text, style)
    term.line(f"exit code {code} (ansible-playbook's {ansible_code}; docs/playbook.md, "
              "\"Exit codes\")")  # fmt: skip
    return code


def register(sub) -> None:
    """The `provision` command's arguments, on the command line's subparsers."""
    provision = sub.add_parser(
        "provision",
        help="run the provisioning playbook (Ansible) on this machine or an inventory",
        description="Runs the collection's playbook jetson_env.jetson.provision with this "
        "environment's ansible-playbook: Ansible's own output, then a summary per host of what "
        "each role changed (or would change). Without -i: this machine. The short options are "
        "ansible-playbook's; arguments after `--` go to it as they are. Exit codes: 0 ok, 1 a "
        "host failed, 2 bad input, 3 a host unreachable. See docs/playbook.md.",
    )
    inventory(provision, "Ansible inventory")
    roles_option(provision, "only these roles (-t/--tags: ansible-playbook's spelling; the "
                 "roles are the playbook's tags)", "-t", "--tags", dest="tags")  # fmt: skip
    provision.add_argument(
        "-e", "--extra-vars", action="append", default=[], metavar="VARS",
        help="variables, as for ansible-playbook (key=value, JSON or @file; repeatable)",
    )  # fmt: skip
    python_option(provision, "the Python to provision (default: python3 on PATH); with -i, its "
                  "path on the inventory's hosts (their jetson_facts_python for this run)",
                  metavar="PATH")  # fmt: skip
    provision.add_argument(
        "-C", "--check", action="store_true", help="change nothing; say what would"
    )
    provision.add_argument(
        "--bundle",
        metavar="DIR",
        help="install only from this `jetson-env bundle` folder: no network",
    )
    provision.add_argument(
        "--trust",
        metavar="KEY.pub",
        help="refuse the bundle unless its maker signed it with this OpenSSH key's private half",
    )
    provision.add_argument("-D", "--diff", action="store_true", help="show the changes to files")
    provision.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS,
        help="Ansible's verbosity (-v ... -vvvv), also when given before the command",
    )  # fmt: skip
    json_output(provision, "the summary as JSON on stdout, Ansible's output on stderr")
    provision.add_argument(
        "-K", "--ask-become-pass", action="store_true", help="ask for the sudo password"
    )
    provision.add_argument(
        "--task-timeout", type=_seconds, metavar="SECONDS",
        help="end a task that runs longer on a host (a host whose Python never answers) and "
        "fail that host; Ansible's task_timeout (default: none, as Ansible's)",
    )  # fmt: skip
    provision.add_argument("ansible_args", nargs="*", metavar="-- ANSIBLE-PLAYBOOK-ARGS")
    provision.set_defaults(func=run)


def _seconds(text: str) -> int:
    """--task-timeout: whole seconds, 1 or more (Ansible's task_timeout is an integer)."""
    try:
        seconds = int(text)
    except ValueError:
        seconds = 0
    if seconds < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds, 1 or more")
    return seconds
