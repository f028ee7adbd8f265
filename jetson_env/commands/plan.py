"""`jetson-env plan --to RELEASE`: what an upgrade breaks on each host, and the commands that
rebuild it offline (docs/plan.md). The plan itself: jetson_env.plan.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jetson_env import installed
from jetson_env.commands import options
from jetson_env.exit_codes import EXIT_USAGE
from jetson_env.matrix import Matrix
from jetson_env.terminal import Terminal


def run(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    """`jetson-env plan`: check the input (exit 2 before any probe), plan, show, write --report."""
    from jetson_env.fleet import inventory as fleet
    from jetson_env.plan import assembly, judgement
    from jetson_env.plan import page as plan_page

    to = judgement.target_release(matrix, args.to)  # UnknownRelease: the CLI's exit 2
    problem = None
    if args.inventory is not None and args.host:
        problem = "--inventory and --host exclude each other"
    elif args.inventory is None and (args.limit or args.forks):
        problem = "--limit and --forks go with --inventory"
    elif (args.inventory is not None and "," not in args.inventory
          and not Path(args.inventory).exists()):  # fmt: skip
        problem = f"no inventory at {args.inventory}"
    problem = problem or options.report_problem(args.report)
    if problem is not None:
        term.error(
            problem, hint=f"`{installed.command('jetson-env plan --help')}` shows the options"
        )
        return EXIT_USAGE
    if args.inventory is not None and (refused := options.refused_with_inventory(args, term)):
        return refused
    if args.inventory is None and not args.host and (missing := options.missing_folder(args, term)):
        return missing
    args.python = "python3" if args.python is None else args.python
    bundle = Path(args.bundle or f"jetson-env-bundle-r{to.l4t}").expanduser().resolve()
    inventory = args.inventory
    if inventory is not None and "," not in inventory:  # the commands run from any folder
        inventory = str(Path(inventory).expanduser().resolve())
    request = assembly.Request(to, tuple(args.engines), str(bundle), inventory, args.limit,
                      args.host)  # fmt: skip
    try:
        with term.progress() as progress:
            hosts, split = assembly.gather(matrix, request, args, progress)
    except (fleet.FleetError, assembly.InputError) as exc:
        term.error(str(exc), hint=exc.hint)
        return EXIT_USAGE
    data = assembly.document(request, hosts, split)
    if args.json:
        term.json(data)
    else:
        term.plan(data)
    if args.report is not None:
        page = plan_page.render(data, Path(args.report).suffix)
        code = options.write_report(term, args.report, page, data["exit_code"], shown="the plan")
        if code != data["exit_code"]:
            return code
    matrix_command = installed.command("jetson-env matrix")
    refused = [h["refused"] for h in data["hosts"] if h["status"] == assembly.REFUSED]
    if refused and not args.json and not all(matrix_command in reason for reason in refused):
        # the table said each refusal once: what is left to say is where the releases are
        term.note(f"`{matrix_command}` lists the releases and their lines")
    return data["exit_code"]


def register(sub) -> None:
    """The `plan` command's arguments, on the command line's subparsers."""
    plan = sub.add_parser(
        "plan",
        help="what a JetPack upgrade or an OTA to RELEASE breaks, and the commands that rebuild "
        "it offline",
        description="Reads this machine (or --host, or every host of -i) with read-only probes "
        "and says, per installed part (torch, torchvision, compiled packages, TensorRT engines, "
        "apt packages), whether it survives the upgrade to RELEASE or must be reinstalled or "
        "rebuilt, what blocks it, and why; then the bundle to make before and the commands to "
        "run after. Changes nothing. Exit codes: 0 nothing blocks, 1 something blocks, 2 bad "
        "input or a refused target (a downgrade, another line), 3 a host not reached. See "
        "docs/plan.md.",
    )
    plan.add_argument(
        "--to", required=True, metavar="RELEASE", help="the L4T release, e.g. R36.5.0"
    )
    plan.add_argument(
        "--engines",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder with TensorRT engines on the hosts (repeatable)",
    )
    plan.add_argument(
        "--bundle",
        metavar="DIR",
        help="the bundle folder the commands name (default ./jetson-env-bundle-rRELEASE)",
    )
    options.python_option(plan, "target interpreter (default python3; not with -i: each "
                          "host's ansible_python_interpreter)")  # fmt: skip
    plan.add_argument("--host", metavar="USER@HOST[:PORT]", help="plan a remote host over SSH")
    plan.add_argument("--identity", metavar="FILE", help="SSH private key (--host)")
    plan.add_argument("--password", action="store_true", help="ask for an SSH password (--host)")
    plan.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="accept and record an unknown host key (--host)",
    )
    options.inventory(plan, "every host of this Ansible inventory, through Ansible")
    plan.add_argument(
        "--report", metavar="FILE", help="also write the host x part grid: FILE.html or FILE.md"
    )
    plan.add_argument(
        "--timeout", type=options.seconds, help="seconds per probe (default: per probe)"
    )
    options.json_output(plan)
    plan.set_defaults(func=run)
