"""`jetson-env info`: what the probes see on this machine, read against the matrix.

`info` is the doctor with no checks (gather); `images tag` reads the platform the same way.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from jetson_env import doctor, installed, target_python
from jetson_env.commands.options import json_output, python_option, seconds
from jetson_env.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE
from jetson_env.matrix import Matrix
from jetson_env.targets import LocalTarget, Target
from jetson_env.terminal import Terminal

SCHEMA = 1

SHOW_PROBE_ERROR = "`{command}` shows the probe's output"


def run(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    target = LocalTarget(args.python)
    with term.status(f"probing {target.description}"):
        data = gather(target, matrix, timeout=args.timeout)
    if args.json:
        term.json(data)
    if data["errors"]:
        for name, error in data["errors"].items():
            term.error(error, hint=data["remedies"].get(name) or SHOW_PROBE_ERROR.format(
                command=installed.command("jetson-env doctor --check platform -v --python "
                                          + shlex.quote(args.python))))  # fmt: skip
        return EXIT_UNREACHABLE if "interpreter" in data["errors"] else EXIT_FAILED
    if args.json:
        return EXIT_OK
    p = data["platform"]
    unknown = p["unknown"]

    def show(key: str, value: Any) -> str:
        return str(value) if value not in (None, "") else f"unknown ({unknown.get(key, 'n/a')})"

    gpus = ", ".join(f"{g['name']} (sm {g['compute_capability']})" for g in p["gpus"])
    rows = [
        ("Jetson", "yes" if p["is_jetson"] else "no"),
        ("Architecture", p["machine"]),
        ("Model", show("model", p["model"]) if p["is_jetson"] else gpus or "no NVIDIA GPU"),
    ]
    if p["is_jetson"]:
        rows += [
            ("L4T", show("l4t", p["l4t"] and f"R{p['l4t']} (from {p['l4t_source']})")),
            ("JetPack", show("jetpack", p["jetpack"])),
            ("SoC", show("soc", p["soc"])),
        ]
    rows += [
        ("Compute capability", show("compute_capability", p["compute_capability"])),
        ("CUDA", show("cuda", p["cuda"]["version"])),
        ("OS", p["os"]["pretty_name"] or "unknown"),
        ("Python", f"{p['python']['version']} ({p['python']['executable']})"),
        ("In the matrix", in_the_matrix(p)),
    ]
    term.table(("", "This machine"), rows)
    return EXIT_OK


def in_the_matrix(platform: dict[str, Any]) -> str:
    if not platform["supported"]:
        return f"no: see `{installed.command('jetson-env matrix')}`"
    if platform.get("assumed_from"):
        return f"no row of its own: R{platform['assumed_from']}'s, the newest of its line"
    return "yes"


def gather(target: Target, matrix: Matrix, timeout: float | None = None) -> dict[str, Any]:
    """`info` is the doctor with no checks: its probes (platform, cuda), its interpreter and
    shape errors, its description of the platform. A failed probe is reported under
    `errors`, not raised; an interpreter that cannot run probes at all is one error,
    `interpreter`, with what to do under `remedies`."""
    report = doctor.run(target, matrix, [], timeout)
    if not report.reached:
        (finding,) = report.findings
        remedy = finding.remedy.shell if finding.remedy else None
        return {"schema": SCHEMA, "platform": None, "errors": {"interpreter": finding.summary},
                "remedies": {"interpreter": remedy} if remedy else {}}  # fmt: skip
    failed = {name: r.error or "no result" for name, r in report.results.items() if not r.ok}
    if failed or report.platform is None:
        return {"schema": SCHEMA, "platform": None, "errors": failed, "remedies": {}}
    return {"schema": SCHEMA, "platform": report.platform, "errors": {}, "remedies": {}}


def register(sub) -> None:
    """The `info` command's arguments, on the command line's subparsers."""
    info = sub.add_parser("info", help="what this machine is (model, L4T, JetPack, GPU, CUDA)")
    json_output(info)
    python_option(
        info, "target interpreter (default python3 on PATH)", default=target_python.DEFAULT
    )
    info.add_argument("--timeout", type=seconds, help="seconds per probe (default: per probe)")
    info.set_defaults(func=run)
