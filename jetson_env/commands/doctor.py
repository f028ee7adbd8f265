"""`jetson-env doctor`: this machine, --host over SSH, or every host of -i through
Ansible; --fix applies the roles that fix the findings (docs/doctor.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from jetson_env import doctor as doctor_mod
from jetson_env import installed, target_python
from jetson_env.check_catalogue import UnknownCheck
from jetson_env.checks import CHECKS
from jetson_env.commands.options import (
    checked_bundle,
    inventory,
    json_output,
    missing_folder,
    python_option,
    refused_with_inventory,
    report_problem,
    roles_option,
    seconds,
    write_report,
)
from jetson_env.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)
from jetson_env.matrix import Matrix
from jetson_env.targets import LocalTarget
from jetson_env.terminal import Terminal


def run(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    try:
        checks = doctor_mod.select(args.check, smoke=not args.no_smoke, quick=args.quick,
                                   engines=bool(args.engines))  # fmt: skip
    except UnknownCheck as exc:
        term.error(
            str(exc), hint=f"`{installed.command('jetson-env doctor --list')}` lists the checks"
        )
        return EXIT_USAGE
    if args.list:
        show_checks(args, term, checks if args.check else list(CHECKS))
        return EXIT_OK
    if args.fix_roles is not None:  # --fix --roles A,B is --fix A,B
        if args.fix is None:
            term.error("--roles chooses the roles that --fix applies: give --fix --roles "
                       f"{args.fix_roles}")  # fmt: skip
            return EXIT_USAGE
        args.fix = [*args.fix, args.fix_roles]
    if args.trust and args.fix is None:
        term.error("--trust checks the bundle that --fix installs from: give --fix --bundle DIR")
        return EXIT_USAGE
    if args.inventory is not None:
        bundle_alone = {
            "bundle": "--bundle with --inventory goes with --fix (the roles take "
            "what they need from it); for one host: --host HOST --bundle DIR"
        }
        refused = refused_with_inventory(args, term, None if args.fix is not None else bundle_alone)
        if refused is not None:
            return refused
        return run_fleet(args, term, matrix, checks)
    args.python = target_python.DEFAULT if args.python is None else args.python
    if args.limit or args.forks:
        term.error("--limit and --forks go with --inventory")
        return EXIT_USAGE
    if args.report and args.fix is not None:
        term.error("--report with --fix goes with --inventory",
                   hint="for one host, write its page after the fix: --report FILE")  # fmt: skip
        return EXIT_USAGE
    if problem := report_problem(args.report):
        term.error(problem, hint="FILE.html or FILE.md, in a folder you can write")
        return EXIT_USAGE
    if not args.host and (missing := missing_folder(args, term)):
        return missing
    if args.fix is not None:
        return run_fix(args, term, matrix, checks)
    report = doctor_report(args, term, matrix, checks)
    if isinstance(report, int):
        return report
    show_report(args, term, report)
    if args.report:
        from jetson_env import fixing
        from jetson_env.fleet import page as doctor_pages

        page = doctor_pages.host_render(report.as_dict(), Path(args.report).suffix,
                                        [*(args.engines or []), args.bundle],
                                        fixing.target_options(args.host, args.identity,
                                                              args.python))  # fmt: skip
        return write_report(term, args.report, page, report.exit_code)
    return report.exit_code


def doctor_report(
    args: argparse.Namespace, term: Terminal, matrix: Matrix, checks: list
) -> doctor_mod.Report | int:
    """The doctor's report for this machine or --host, or an exit code for a usage error."""
    if args.host:
        from jetson_env import remote

        try:
            target = remote.open_target(
                args.host,
                args.python,
                identity=args.identity,
                ask_for_password=args.password,
                accept_new_host_key=args.accept_new_host_key,
                again=["jetson-env", *sys.argv[1:]],  # as typed, for the host key's remedy
            )
        except remote.UsageError as exc:
            term.error(str(exc), hint=exc.hint)
            return EXIT_USAGE
        except remote.ConnectError as exc:
            return doctor_mod.unreachable(exc.target, str(exc), exc.remedy)
        for note in target.notes:
            term.note(note)
    else:
        target = LocalTarget(args.python)
    try:
        with term.progress() as progress:
            return doctor_mod.run(target, matrix, checks, args.timeout, progress,
                                  engine_arguments(args))  # fmt: skip
    finally:
        close = getattr(target, "close", None)
        if close is not None:
            close()


def engine_arguments(args: argparse.Namespace) -> dict[str, Any] | None:
    """`doctor --engines DIR`: the engines probe's folders (data, never code)."""
    return {"engines": {"folders": args.engines}} if args.engines else None


def checked_fix_request(args: argparse.Namespace, term: Terminal):
    """--fix's request (its bundle checked, its roles and variables read) before any host is
    touched, or an exit code."""
    from jetson_env import fixing

    from_bundle = checked_bundle(args, term)
    if isinstance(from_bundle, int):
        return from_bundle
    try:
        return fixing.fix_request(args.fix, args.playbook_vars, from_bundle)
    except fixing.FixError as exc:
        term.error(str(exc), hint=exc.hint)
        return EXIT_USAGE


def run_fix(args: argparse.Namespace, term: Terminal, matrix: Matrix, checks: list) -> int:
    """--fix on this machine or --host: fixing.fix_one's flow (docs/doctor.md, --fix)."""
    from jetson_env import fixing

    request = checked_fix_request(args, term)
    if isinstance(request, int):
        return request
    return fixing.fix_one(
        term, request, lambda: doctor_report(args, term, matrix, checks), host=args.host,
        identity=args.identity, python=args.python, yes=args.yes, as_json=args.json,
        password=args.password,
    )  # fmt: skip


def run_fleet(args: argparse.Namespace, term: Terminal, matrix: Matrix, checks: list) -> int:
    """--inventory: every host through Ansible, one summary (docs/doctor.md, Fleets)."""
    from jetson_env.fleet import inventory as fleet
    from jetson_env.fleet import page as fleet_page

    if args.host:
        term.error("--inventory and --host exclude each other")
        return EXIT_USAGE
    inventory = Path(args.inventory)
    if "," not in args.inventory and not inventory.exists():
        term.error(f"no inventory at {args.inventory}", hint="an Ansible inventory file or folder")
        return EXIT_USAGE
    if problem := report_problem(args.report):
        term.error(problem, hint="FILE.html or FILE.md, in a folder you can write")
        return EXIT_USAGE
    if args.fix is not None:
        if args.json:
            term.error("--inventory --fix has no --json: run --fix --json for one host with --host")
            return EXIT_USAGE
        request = checked_fix_request(args, term)
        if isinstance(request, int):
            return request
    try:
        with term.progress() as progress:
            report = fleet.run(args.inventory, args.limit, matrix, checks, args.timeout,
                               args.forks, progress, engine_arguments(args))  # fmt: skip
        if args.fix is not None:
            report = fleet.fix(term, request, report, matrix, checks, yes=args.yes,
                               timeout=args.timeout, forks=args.forks)  # fmt: skip
    except fleet.FleetError as exc:
        term.error(str(exc), hint=exc.hint)
        return EXIT_USAGE
    if isinstance(report, int):
        return report
    data = report.as_dict()
    if args.json:
        term.json(data)
    else:
        term.fleet(data)
    if args.report:  # the run is shown above whatever happens to the file
        page = fleet_page.render(data, Path(args.report).suffix)
        return write_report(term, args.report, page, report.exit_code)
    return report.exit_code


def show_checks(args: argparse.Namespace, term: Terminal, checks: list) -> None:
    if args.json:
        term.json({"schema": doctor_mod.SCHEMA, "checks": [c.as_dict() for c in checks]})
    else:
        term.table(
            ("Check", "Area", "What it checks"), [(c.name, c.area, c.summary) for c in checks]
        )


def show_report(args: argparse.Namespace, term: Terminal, report: doctor_mod.Report) -> None:
    data = report.as_dict()
    if getattr(args, "bundle", None):
        from jetson_env import bundle

        target = [*(["--host", args.host] if args.host else []),
                  *(["--identity", args.identity] if args.identity else [])]  # fmt: skip
        data["bundle"] = bundle.doctor_fixes(args.bundle, data, target)
    if args.json:
        term.json(data)
        return
    from jetson_env import fixing

    term.findings(data, fixing.target_options(args.host, args.identity, args.python),
                  data.get("bundle"))  # fmt: skip


def register(sub) -> None:
    """The `doctor` command's arguments, on the command line's subparsers."""
    doctor = sub.add_parser(
        "doctor",
        help="what is broken and the command that fixes it; then a model converted and run",
        description="Checks this machine (or --host) for PyTorch -> TensorRT conversion and "
        f"runs a smoke conversion. Exit codes: {EXIT_OK} healthy (ok, warn, skip), {EXIT_FAILED} "
        f"a check failed or crashed, {EXIT_USAGE} usage error, {EXIT_UNREACHABLE} the target "
        "could not be reached or its Python cannot run the probes, "
        f"{EXIT_INTERRUPTED} interrupted. See docs/doctor.md.",
    )
    json_output(doctor)
    python_option(doctor, "target interpreter (default python3 on PATH; not with --inventory: "
                  "each host's ansible_python_interpreter)")  # fmt: skip
    doctor.add_argument("--host", metavar="USER@HOST[:PORT]", help="check a remote host over SSH")
    doctor.add_argument(
        "--engines", action="append", metavar="DIR",
        help="also say, per TensorRT engine file under DIR on the host(s), whether it loads "
        "there, must be rebuilt, or is unknown (repeatable; docs/doctor.md)",
    )  # fmt: skip
    doctor.add_argument("--identity", metavar="FILE", help="SSH private key (--host)")
    inventory(
        doctor, "check every host of this Ansible inventory, through Ansible (its connection "
        "settings, become and forks; each host's ansible_python_interpreter)"
    )  # fmt: skip
    doctor.add_argument(
        "--report",
        metavar="FILE",
        help="also write a page for people: FILE.html (self-contained) or FILE.md, for one host or "
        "the inventory",
    )
    doctor.add_argument(
        "--password", action="store_true", help="ask for an SSH password (--host; keys otherwise)"
    )
    doctor.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="accept and record an unknown host key (ssh's StrictHostKeyChecking=accept-new)",
    )
    doctor.add_argument(
        "--no-smoke",
        action="store_true",
        help="skip the smoke conversion and all GPU work (no CUDA context)",
    )
    doctor.add_argument(
        "--quick",
        action="store_true",
        help="import no framework: platform, loader and file checks, versions from package "
        "metadata (no smoke)",
    )
    doctor.add_argument(
        "--bundle", metavar="DIR",
        help="say which fixes this `jetson-env bundle` folder can apply with no network; with "
        "--fix, apply them from it as `provision --bundle DIR` does",
    )  # fmt: skip
    doctor.add_argument(
        "--trust", metavar="KEY.pub",
        help="--fix --bundle: refuse the bundle unless its maker signed it with this OpenSSH "
        "key's private half",
    )  # fmt: skip
    doctor.add_argument(
        "--fix",
        nargs="?",
        const=[],
        type=lambda text: [text],
        metavar="ROLE[,ROLE]",
        help="apply the playbook's roles that fix the findings (only these roles, if given: "
        "the same as --fix --roles ROLE,...): show the plan (--check --diff), ask, apply, check "
        "again; needs Ansible",
    )
    roles_option(doctor, "with --fix: only these roles", dest="fix_roles")
    doctor.add_argument("--yes", action="store_true", help="--fix without asking")
    doctor.add_argument(
        "--playbook-vars", metavar="JSON", help="--fix: more variables for the playbook"
    )
    doctor.add_argument("--list", action="store_true", help="list the checks and exit")
    doctor.add_argument(
        "--check", action="append", metavar="NAME", help="run only this check (repeatable)"
    )
    doctor.add_argument(
        "--timeout", type=seconds, help="seconds per probe (default: per probe, see docs/doctor.md)"
    )
    doctor.set_defaults(func=run)
