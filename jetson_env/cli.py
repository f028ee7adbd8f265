"""The `jetson-env` command line.

Exit codes: 0 ok, 1 a check failed (or crashed), 2 usage or input error, 3 the target
could not be reached or its interpreter cannot run the probes, 130 interrupted (Ctrl-C),
143 terminated (SIGTERM); every probe process is ended before it exits.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from jetson_env import doctor as doctor_mod
from jetson_env import images as images_mod
from jetson_env import info as info_mod
from jetson_env import target_python
from jetson_env.checks.context import shell_word
from jetson_env.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)
from jetson_env.matrix import Matrix, MatrixError, Release, UnknownRelease, load, normalize_l4t
from jetson_env.targets import LocalTarget, Strays, cancel_all
from jetson_env.terminal import Terminal

SHOW_PROBE_ERROR = (
    "`jetson-env doctor --check platform -v --python {python}` shows the probe's output"
)


class VersionAction(argparse.Action):
    """--version, reading the package metadata only when asked (importlib.metadata is slow)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import version

        sys.stdout.write(f"{parser.prog} {version('jetson-env')}\n")
        parser.exit()


MIN_TIMEOUT = 1  # --timeout, seconds


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the probes are ended as for Ctrl-C."""


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


def release_as_dict(release: Release, matrix: Matrix, assumed_from: str | None = None) -> dict:
    """A row and every artifact the playbook installs for it (docs/json.md)."""
    torch = release.torch
    family = matrix.raw["families"].get(release.family) or matrix.raw["x86"]
    cusparselt = release.cusparselt
    return {
        "l4t": release.l4t or None,
        "jetpack": release.jetpack or None,
        "family": release.family,
        "ubuntu": release.ubuntu or None,
        "cuda": release.cuda or None,
        "cudnn": release.cudnn or None,
        "tensorrt": release.tensorrt or None,
        "python": release.python or None,
        "torch": {
            "version": torch.version,
            "url": torch.url,
            "index": torch.index,
            "sha256": torch.sha256,
            "filename": torch.filename,
            "cuda": torch.cuda,
        },
        "torchvision": release.torchvision,
        "cusparselt": (
            {"version": cusparselt.version, "url": cusparselt.url, "sha256": cusparselt.sha256}
            if cusparselt
            else None
        ),
        "jetpack_packages": (
            {kind: list(names) for kind, names in release.jetpack_packages.items()}
            if release.jetpack_packages
            else None
        ),
        "prerequisites": {
            "apt": list(family["apt_prerequisites"]),
            "pip": list(family["pip_prerequisites"]),
            "numpy": family["numpy"],
        },
        "torch_cuda_arch_list": family.get("torch_cuda_arch_list"),
        "compute_capabilities": (
            {soc: matrix.socs[soc] for soc in family["socs"]} if "socs" in family else None
        ),
        "pycuda": matrix.pycuda_for(release.python),
        "torch2trt": dict(matrix.torch2trt),
        # The converters that work with its TensorRT and torch (x86: the default pip pin's), and
        # every TensorRT it can have with theirs (x86: per target Python).
        "converters": list(
            matrix.converters.for_host(
                release.tensorrt or matrix.x86_tensorrt.version,
                release.torch.version,
                jetson=bool(release.l4t),
            )
        ),
        "tensorrt_options": (
            matrix.tensorrt_options(release) if release.l4t else matrix.x86_tensorrt_options()
        ),
        "tensorrt_pip": None if release.l4t else tensorrt_pip_as_dict(matrix),
        "assumed_from": assumed_from,
        "sources": [matrix.source_url(name) for name in release.sources],
    }


def tensorrt_pip_as_dict(matrix: Matrix) -> dict:
    pinned = matrix.x86_tensorrt
    return {"package": pinned.package, "version": pinned.version,
            "supported": str(pinned.supported)}  # fmt: skip


def cmd_matrix(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    if args.l4t is not None and not args.l4t.strip():
        term.error("--l4t needs a release, e.g. R36.4.3", hint="`jetson-env matrix` lists them")
        return EXIT_USAGE
    if args.unsupported:
        return show_unsupported(args, term, matrix)
    resolution = matrix.resolve(args.l4t) if args.l4t else None
    releases = [resolution.release] if resolution else list(matrix.releases.values())
    assumed_from = resolution.assumed_from if resolution else None
    if args.json:
        data = {
            "schema": 1,
            "releases": [release_as_dict(r, matrix, assumed_from) for r in releases],
        }
        if not args.l4t:
            data["x86"] = release_as_dict(matrix.x86, matrix)
            data["unsupported"] = matrix.unsupported_entries()
        term.json(data)
        return EXIT_OK
    rows = [
        (
            f"R{r.l4t}",
            r.jetpack,
            r.ubuntu,
            r.cuda,
            r.cudnn,
            r.tensorrt,
            r.python,
            r.torch.version,
            r.torchvision,
        )
        for r in releases
    ]
    if not args.l4t:
        x86 = matrix.x86
        rows.append(
            (
                "x86_64",
                "-",
                "-",
                "host",
                "host",
                f"{matrix.x86_tensorrt.version} (pip)",
                "host",
                x86.torch.version,
                x86.torchvision,
            )
        )
    term.table(
        ("L4T", "JetPack", "Ubuntu", "CUDA", "cuDNN", "TensorRT", "Python", "torch", "torchvision"),
        rows,
        title="Supported releases",
    )
    if args.l4t:
        release = releases[0]
        if assumed_from:
            term.line(
                f"R{normalize_l4t(args.l4t)} has no row of its own: R{assumed_from}'s, the"
                " newest of its line, applies"
            )
        data = release_as_dict(release, matrix)
        torch = release.torch
        term.line(f"torch source: {torch.url or torch.index or 'pip index'} (CUDA {torch.cuda})")
        term.line(f"sha256: {torch.sha256 or 'recorded on first download (lock file)'}")
        if release.cusparselt:
            term.line(f"cuSPARSELt {release.cusparselt.version}: {release.cusparselt.url}")
        for kind, names in (data["jetpack_packages"] or {}).items():
            term.line(f"JetPack apt packages ({kind}): {' '.join(names)}")
        prerequisites = data["prerequisites"]
        term.line(
            "prerequisites: apt " + (" ".join(prerequisites["apt"]) or "-")
            + ", pip " + (" ".join([*prerequisites["pip"], prerequisites["numpy"]]))
        )  # fmt: skip
        term.line(
            f"built from source: torchvision {release.torchvision}, pycuda {data['pycuda']},"
            f" torch2trt {data['torch2trt']['ref'][:12]}, for CUDA archs"
            f" {data['torch_cuda_arch_list']}"
        )
        term.line("sources: " + ", ".join(matrix.source_url(s) for s in release.sources))
    return EXIT_OK


def show_unsupported(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    entries = matrix.unsupported_entries()
    if args.json:
        term.json({"schema": 1, "unsupported": entries})
        return EXIT_OK
    term.table(
        ("L4T", "JetPack", "Why it is not supported"),
        [(f"R{e['l4t']}", e["jetpack"] or "-", e["reason"]) for e in entries],
        title="Releases left out on purpose",
    )
    return EXIT_OK


def cmd_info(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    target = LocalTarget(args.python)
    with term.status(f"probing {target.description}"):
        data = info_mod.gather(target, matrix, timeout=args.timeout)
    if args.json:
        term.json(data)
    if data["errors"]:
        for name, error in data["errors"].items():
            term.error(error, hint=data["remedies"].get(name) or SHOW_PROBE_ERROR.format(
                python=shlex.quote(args.python)))  # fmt: skip
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
        return "no: see `jetson-env matrix`"
    if platform.get("assumed_from"):
        return f"no row of its own: R{platform['assumed_from']}'s, the newest of its line"
    return "yes"


def cmd_doctor(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    term.verbosity = max(term.verbosity, args.doctor_verbose)
    try:
        checks = doctor_mod.select(args.check, smoke=not args.no_smoke, quick=args.quick,
                                   engines=bool(args.engines))  # fmt: skip
    except doctor_mod.UnknownCheck as exc:
        term.error(str(exc), hint="`jetson-env doctor --list` lists the checks")
        return EXIT_USAGE
    if args.list:
        show_checks(args, term, checks if args.check else list(doctor_mod.CHECKS))
        return EXIT_OK
    if args.trust and args.fix is None:
        term.error("--trust checks the bundle that --fix installs from: give --fix --bundle DIR")
        return EXIT_USAGE
    if args.inventory is not None:
        return fleet_doctor(args, term, matrix, checks)
    if args.limit or args.forks or args.report:
        term.error("--limit, --forks and --report go with --inventory")
        return EXIT_USAGE
    if args.fix is not None:
        return cmd_doctor_fix(args, term, matrix, checks)
    report = doctor_report(args, term, matrix, checks)
    if isinstance(report, int):
        return report
    show_report(args, term, report)
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


def cmd_doctor_fix(args: argparse.Namespace, term: Terminal, matrix: Matrix, checks: list) -> int:
    """--fix on this machine or --host: fixing.fix_one's flow (docs/doctor.md, --fix)."""
    from jetson_env import fixing

    from_bundle = checked_bundle(args, term)
    if isinstance(from_bundle, int):
        return from_bundle
    try:
        setup = fixing.setup(args.fix, args.playbook_vars, from_bundle)
    except fixing.FixError as exc:
        term.error(str(exc), hint=exc.hint)
        return EXIT_USAGE
    return fixing.fix_one(
        term, setup, lambda: doctor_report(args, term, matrix, checks), host=args.host,
        identity=args.identity, python=args.python, yes=args.yes, as_json=args.json,
        password=args.password,
    )  # fmt: skip


def fleet_doctor(args: argparse.Namespace, term: Terminal, matrix: Matrix, checks: list) -> int:
    """--inventory: every host through Ansible, one summary (docs/doctor.md, Fleets)."""
    from jetson_env import fleet, fleet_page

    if args.host:
        term.error("--inventory and --host exclude each other")
        return EXIT_USAGE
    inventory = Path(args.inventory)
    if "," not in args.inventory and not inventory.exists():
        term.error(f"no inventory at {args.inventory}", hint="an Ansible inventory file or folder")
        return EXIT_USAGE
    report_path = Path(args.report) if args.report else None
    if report_path is not None:
        if report_path.suffix.lower() not in fleet_page.FORMATS:
            term.error(f"--report {args.report}: the file name must end in "
                       f"{' or '.join(fleet_page.FORMATS)}")  # fmt: skip
            return EXIT_USAGE
        if not report_path.parent.is_dir():
            term.error(f"--report {args.report}: no folder {report_path.parent}")
            return EXIT_USAGE
        if problem := fleet_page.unwritable(report_path):
            term.error(f"--report {args.report}: {problem}", hint="give a file you can write")
            return EXIT_USAGE
    if args.fix is not None:
        from jetson_env import fixing

        if args.json:
            term.error("--inventory --fix has no --json: run --fix --json for one host with --host")
            return EXIT_USAGE
        from_bundle = checked_bundle(args, term)
        if isinstance(from_bundle, int):
            return from_bundle
        try:
            setup = fixing.setup(args.fix, args.playbook_vars, from_bundle)
        except fixing.FixError as exc:
            term.error(str(exc), hint=exc.hint)
            return EXIT_USAGE
    try:
        with term.progress() as progress:
            report = fleet.run(args.inventory, args.limit, matrix, checks, args.timeout,
                               args.forks, progress, engine_arguments(args))  # fmt: skip
        if args.fix is not None:
            report = fleet.fix(term, setup, report, matrix, checks, yes=args.yes,
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
    if report_path is not None:
        try:  # the run is shown above whatever happens to the file
            report_path.write_text(fleet_page.render(data, report_path.suffix), encoding="utf-8")
        except OSError as exc:
            term.error(f"--report {args.report} was not written: {exc.strerror or exc}",
                       hint="the report is above; give a file you can write")  # fmt: skip
            return max(report.exit_code, EXIT_USAGE)
        term.note(f"report written to {report_path}")
    return report.exit_code


def cmd_provision(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    """ansible-playbook in this process's place: its output, its exit code, its signals."""
    from jetson_env import collection

    try:
        ansible_playbook = collection.ansible_command()
    except collection.AnsibleMissing as exc:
        term.error(str(exc), hint=exc.hint)
        return EXIT_USAGE
    unknown = collection.unknown_tags(args.tags)
    if unknown:
        term.error(
            f"--tags: no role {', '.join(unknown)} in the playbook (Ansible would run nothing)",
            hint=f"roles: {', '.join(collection.provision_roles())}",
        )
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
        extra_vars=extra_vars, check=args.check, diff=args.diff,
        ask_become_pass=args.ask_become_pass, passthrough=args.ansible_args,
    )  # fmt: skip
    term.note("running: " + shlex.join(cmd))
    sys.stdout.flush()
    sys.stderr.flush()
    env = {**collection.environment(ansible_playbook), **collection.STRICT_INVENTORY}
    os.execve(ansible_playbook, cmd, env)


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


def cmd_bundle(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    """Gather every artifact for some targets into a folder (or check one: --verify)."""
    from jetson_env import bundle

    directory = Path(args.directory).expanduser().resolve()
    try:
        if args.verify:
            return _bundle_verify(args, term, directory, bundle)
        if args.trust:
            raise bundle.BundleError("--trust goes with --verify (or provision --bundle)")
        sign_key = Path(args.sign).expanduser() if args.sign else None
        if sign_key and not (args.l4t or args.x86 or args.inventory):
            signed = bundle.sign(directory, sign_key, term.note)  # a bundle made before
            if term.as_json:
                term.json({"schema": bundle.SCHEMA, "bundle": str(directory), "signed": True,
                           "key": str(sign_key), **signed})  # fmt: skip
            else:
                term.line(f"{directory}: manifest signed with {sign_key} "
                          f"({signed['fingerprint']}); manifest sha256 "
                          f"{signed['manifest_sha256']}")  # fmt: skip
            return EXIT_OK
        files = {}
        for item in args.file:
            kind, _, path = item.partition("=")
            if not path:
                raise bundle.BundleError(
                    f"--file {item!r} is not KIND=PATH",
                    hint="e.g. --file torch=/path/torch-2.5.0-...whl",
                )
            files[kind] = Path(path).expanduser()
        roles = (
            [r.strip() for r in args.roles.split(",") if r.strip()]
            if args.roles
            else list(bundle.ROLES)
        )
        unknown = [r for r in roles if r not in bundle.ROLES]
        if unknown:
            raise bundle.BundleError(
                f"--roles: unknown role(s) {', '.join(unknown)}; known: {', '.join(bundle.ROLES)}"
            )
        targets = (
            bundle.targets_from_args(
                matrix, args.l4t, args.x86, args.python, args.glibc, args.distribution
            )
            if (args.l4t or args.x86 or not args.inventory)
            else []
        )
        if args.inventory:
            targets += _inventory_targets(args, term, bundle)
        with term.progress() as progress:
            result = bundle.make(
                directory,
                matrix,
                list(dict.fromkeys(targets)),
                roles,
                files,
                report=progress,
                workers=args.jobs,
                sign_key=sign_key,
                controller_python=None if args.no_controller else args.controller_python,
            )
    except bundle.BundleError as exc:
        term.error(str(exc), hint=exc.hint)
        return exc.exit_code
    data = result.as_dict()
    if term.as_json:
        term.json(data)
        return EXIT_OK
    term.table(
        ["target", "roles", "size"],
        [
            [key, ", ".join(result.manifest["targets"][key]["roles"]), _mib(size)]
            for key, size in result.sizes.items()
        ]
        + [["total (the whole bundle)", "", _mib(result.total)]],
        title=f"bundle {directory}",
    )
    term.line(
        f"{len(result.added)} file(s) added in {result.seconds:.0f} s; pip: --no-index "
        f"--find-links {shell_word(str(directory / 'pip'))}"
    )
    if data["controller"]:
        term.line(
            f"jetson-env itself, offline (Python {args.controller_python}): {data['controller']}"
        )
    for item in result.manifest["manual"]:
        term.line(
            f"to supply by hand for {', '.join(item['targets'])}: {item['what']} -> "
            f"{directory}/{item['expected']}"
            f" (from {item['where_from']}); add it with --file {shell_word(item['kind'])}=PATH",
            style="yellow",
        )
    for key, apt in result.manifest["apt"].items():
        if apt["repo"]:
            term.line(f"apt for {key}: repository {directory}/{apt['repo']}")
        if apt["not_bundled"]:
            why = "; ".join(sorted(set(apt["why_not"].values())))
            term.line(
                f"apt for {key} (not bundled: {why}): {' '.join(apt['not_bundled'])}; on a "
                f"connected machine of {apt['distribution'] or 'its distribution'}: "
                f"{apt['download']}",
                style="dim",
            )
    return EXIT_OK


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _bundle_verify(args: argparse.Namespace, term: Terminal, directory: Path, bundle) -> int:
    """--verify [--trust]: the manifest read once; its files, its apt repositories (the
    preflight's own checks) and, with --trust, its signature checked on those bytes."""
    manifest, manifest_sha256 = bundle.read_manifest_sha256(directory)
    problems = bundle.verify(directory, manifest)
    signature = None
    if args.trust:
        key = Path(args.trust).expanduser()
        fingerprint = bundle.check_signature(directory, key, manifest)
        signature = {"key": str(key), "fingerprint": fingerprint}
    data = {
        "schema": bundle.SCHEMA,
        "bundle": str(directory),
        "ok": not problems,
        "artifacts": len(manifest["artifacts"]),
        "problems": problems,
        "manual": manifest["manual"],
        "manifest_sha256": manifest_sha256,
        "signature": signature,
    }
    if term.as_json:
        term.json(data)
    elif problems:
        for problem in problems:
            remedy = "" if problem["problem"] == "missing" else "delete it, then "
            term.error(
                f"{problem['path']}: {problem['problem']}",
                hint=f"{remedy}run `{problem['fix']}`",
            )
    else:
        term.line(
            f"{directory}: all {len(manifest['artifacts'])} artifact(s) match the manifest's sha256"
        )
    if not term.as_json:
        if signature is not None:
            term.line(f"signature: good, made with the key {signature['fingerprint']} "
                      f"({signature['key']}); manifest sha256 {manifest_sha256}")  # fmt: skip
        for item in manifest["manual"]:
            term.line(
                f"still to supply by hand for {', '.join(item['targets'])}: {item['what']} "
                f"(--file {shell_word(item['kind'])}=PATH)",
                style="yellow",
            )
    return EXIT_FAILED if problems else EXIT_OK


def _inventory_targets(args: argparse.Namespace, term: Terminal, bundle) -> list:
    """The targets an inventory's hosts are, from their facts (read-only, through Ansible)."""
    import subprocess
    import tempfile

    from jetson_env import collection

    try:
        ansible_playbook = collection.ansible_command()
        collection.inventory_hosts(args.inventory)  # parsed whole, or no host is read
    except (collection.AnsibleMissing, collection.BadInventory) as exc:
        raise bundle.BundleError(str(exc), hint=exc.hint) from None
    with tempfile.TemporaryDirectory(prefix="jetson-env-facts-") as tmp:
        cmd = [
            ansible_playbook,
            f"{collection.FQCN}.bundle_facts",
            "-i",
            args.inventory,
            "-e",
            collection.extra_vars(collection.data({"jetson_env_bundle_facts_dir": tmp})),
        ]
        if args.limit:
            cmd += ["--limit", args.limit]
        term.note("reading the hosts' facts: " + shlex.join(cmd))
        result = subprocess.run(
            cmd,
            env={**collection.environment(ansible_playbook), **collection.STRICT_INVENTORY},
            capture_output=True,
            text=True,
            check=False,
        )
        facts = sorted(Path(tmp).glob("*.json"))
        if result.returncode != 0 or not facts:
            tail = " ".join(
                (result.stdout.strip() + "\n" + result.stderr.strip()).strip().splitlines()[-6:]
            )
            raise bundle.BundleError(
                f"reading the facts of {args.inventory}'s hosts failed: {tail}",
                hint="`jetson-env doctor -i INVENTORY` shows which hosts answer",
            )
        targets = []
        for path in facts:
            data = json.loads(path.read_text())
            target = bundle.target_from_facts(data["platform"], data["python"])
            term.note(f"{path.stem}: {target.key}")
            targets.append(target)
    return targets


def cmd_plan(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    from jetson_env import upgrading

    return upgrading.run_command(args, term, matrix)


def forks(text: str) -> int:
    """--forks: a positive whole number."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text!r}")
    return int(text)


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
    term.findings(data)
    if "bundle" in data:
        offline = data["bundle"]
        for fix in offline["fixes"]:
            verdict = "the bundle can apply it" if fix["applies"] else "not from the bundle"
            term.line(f"{fix['check']} ({fix['role']}): {verdict}: {fix['why']}",
                      style="green" if fix["applies"] else "yellow")  # fmt: skip
        if offline["command"]:
            term.line(f"offline fix: {offline['command']}")


def cmd_images(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    repo = args.repository
    if args.images_command == "list":
        rows = [images_mod.describe(image, matrix, repo) for image in matrix.images]
        if args.json:
            term.json({"schema": 1, "images": rows})
        else:
            term.table(
                ("Tag", "Runs on host L4T", "Base", "CUDA", "TensorRT", "Python", "torch",
                 "torchvision", "Builds"),
                [(r["tag"], r["hosts"], r["base"], r["cuda"] or "base's", r["tensorrt"] or "base's",
                  r["python"] or "base's", r["torch"], r["torchvision"],
                  "no" if r["cannot_build"] else "yes") for r in rows],
                title="Images (jetson-env images build NAME)",
            )  # fmt: skip
            for row in rows:
                if row["cannot_build"]:
                    term.note(row["cannot_build"])
        return EXIT_OK
    if args.images_command == "tag":
        if args.l4t:
            host = images_mod.HostPlatform(True, "aarch64", args.l4t)
        else:
            facts = info_mod.gather(LocalTarget(args.python), matrix)
            if facts["errors"]:
                for error in facts["errors"].values():
                    term.error(error)
                return EXIT_FAILED
            p = facts["platform"]
            host = images_mod.HostPlatform(p["is_jetson"], p["machine"], p["l4t"])
        try:
            image = images_mod.image_for(host, matrix)
        except images_mod.NoImage as exc:
            term.error(str(exc), hint="`jetson-env images list` shows which host runs which image")
            return EXIT_FAILED
        if host.l4t and matrix.resolve(host.l4t).assumed:
            term.note(
                f"L4T R{normalize_l4t(host.l4t)} has no row of its own: R"
                f"{matrix.resolve(host.l4t).assumed_from}'s, the newest of its line, applies"
            )
        if args.json:
            term.json({"schema": 1, "image": images_mod.describe(image, matrix, repo)})
        else:
            term.line(images_mod.tag(image, repo))
            if images_mod.cannot_build(image):
                term.note(images_mod.cannot_build(image))
        return EXIT_OK
    try:
        image = images_mod.find(args.name, matrix)
    except UnknownRelease as exc:
        term.error(str(exc), hint="`jetson-env images list` lists the images")
        return EXIT_USAGE
    if images_mod.cannot_build(image) and not args.base:
        term.error(images_mod.cannot_build(image), hint=images_mod.build_hint(image))
        return EXIT_USAGE
    from jetson_env import collection

    try:
        playbook_vars = collection.playbook_vars(args.playbook_vars) or None
    except collection.BadVariables as exc:
        term.error(str(exc))
        return EXIT_USAGE
    log = Path(args.log or f".cache/images/{image.name}.log")
    with term.status(f"building {images_mod.tag(image, repo)}") as status:
        try:
            built = images_mod.build(
                image, matrix, repository=repo, log_path=log, base=args.base,
                playbook_vars=playbook_vars,
                on_line=lambda line: status.update(f"{image.name}: {line[:100]}"),
            )  # fmt: skip
        except (images_mod.BuildFailed, images_mod.DockerUnavailable) as exc:
            term.error(str(exc), hint=f"the whole build log is in {log}")
            return EXIT_FAILED
    if args.json:
        term.json({"schema": 1, "image": images_mod.describe(image, matrix, repo), **built})
    else:
        term.line(f"built {built['tag']} ({built['id'][:19]})")
        term.line(f"size {built['size_bytes'] / 2**20:.0f} MiB, largest layer "
                  f"{built['largest_layer_bytes'] / 2**20:.0f} MiB; log: {log}")  # fmt: skip
    return EXIT_OK


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

    matrix = sub.add_parser("matrix", help="the supported L4T releases and their versions")
    matrix.add_argument("--l4t", metavar="RELEASE", help="one release, e.g. R36.4.3")
    matrix.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    matrix.add_argument(
        "--unsupported", action="store_true", help="the releases left out on purpose, and why"
    )
    matrix.set_defaults(func=cmd_matrix)

    info = sub.add_parser("info", help="what this machine is (model, L4T, JetPack, GPU, CUDA)")
    info.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    info.add_argument("--python", default=target_python.DEFAULT,
                      help="target interpreter (default python3 on PATH)")  # fmt: skip
    info.add_argument("--timeout", type=seconds, help="seconds per probe (default: per probe)")
    info.set_defaults(func=cmd_info)

    doctor = sub.add_parser(
        "doctor",
        help="what is broken and the command that fixes it; then a model converted and run",
        description="Checks this machine (or --host) for PyTorch -> TensorRT conversion and "
        f"runs a smoke conversion. Exit codes: {EXIT_OK} healthy (ok, warn, skip), {EXIT_FAILED} "
        f"a check failed or crashed, {EXIT_USAGE} usage error, {EXIT_UNREACHABLE} the target "
        "could not be reached or its Python cannot run the probes, "
        f"{EXIT_INTERRUPTED} interrupted. See docs/doctor.md.",
    )
    doctor.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    doctor.add_argument("--python", default=target_python.DEFAULT,
                        help="target interpreter (default python3 on PATH)")  # fmt: skip
    doctor.add_argument("--host", metavar="USER@HOST[:PORT]", help="check a remote host over SSH")
    doctor.add_argument(
        "--engines", action="append", metavar="DIR",
        help="also say, per TensorRT engine file under DIR on the host(s), whether it loads "
        "there, must be rebuilt, or is unknown (repeatable; docs/doctor.md)",
    )  # fmt: skip
    doctor.add_argument("--identity", metavar="FILE", help="SSH private key (--host)")
    doctor.add_argument(
        "-i",
        "--inventory",
        metavar="INVENTORY",
        help="check every host of this Ansible inventory, through Ansible (its connection "
        "settings, become and forks; each host's ansible_python_interpreter)",
    )
    doctor.add_argument(
        "--limit", metavar="PATTERN", help="only these hosts of --inventory (Ansible's --limit)"
    )
    doctor.add_argument(
        "--forks", type=forks, metavar="N", help="hosts at once (--inventory; Ansible's --forks)"
    )
    doctor.add_argument(
        "--report",
        metavar="FILE",
        help="also write a page for people: FILE.html (self-contained) or FILE.md (--inventory)",
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
        help="apply the playbook's roles that fix the findings (only these roles, if given): "
        "show the plan (--check --diff), ask, apply, check again; needs Ansible",
    )
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
    doctor.add_argument(
        "-v", "--verbose", dest="doctor_verbose", action="count", default=0, help="details"
    )
    doctor.set_defaults(func=cmd_doctor)

    provision = sub.add_parser(
        "provision",
        help="run the provisioning playbook (Ansible) on this machine or an inventory",
        description="Runs the collection's playbook jetson_env.jetson.provision with this "
        "environment's ansible-playbook: Ansible's own output and exit code. Without -i: this "
        "machine. Arguments after `--` go to ansible-playbook as they are. See docs/playbook.md.",
    )
    provision.add_argument("-i", "--inventory", metavar="INVENTORY", help="Ansible inventory")
    provision.add_argument("--limit", metavar="PATTERN", help="only these hosts")
    provision.add_argument("--tags", metavar="ROLE[,ROLE]", help="only these roles")
    provision.add_argument(
        "-e", "--extra-vars", action="append", default=[], metavar="VARS",
        help="variables, as for ansible-playbook (key=value, JSON or @file; repeatable)",
    )  # fmt: skip
    provision.add_argument(
        "--python",
        metavar="PATH",
        help="the Python to provision (default: python3 on PATH); with -i, its path on the "
        "inventory's hosts (their jetson_facts_python for this run)",
    )
    provision.add_argument("--check", action="store_true", help="change nothing; say what would")
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
    provision.add_argument("--diff", action="store_true", help="show the changes to files")
    provision.add_argument(
        "-K", "--ask-become-pass", action="store_true", help="ask for the sudo password"
    )
    provision.add_argument("ansible_args", nargs="*", metavar="-- ANSIBLE-PLAYBOOK-ARGS")
    provision.set_defaults(func=cmd_provision)

    bundle = sub.add_parser(
        "bundle",
        help="gather every artifact for some targets into a folder, for offline provisioning",
        description="Fetches (in parallel) everything the provisioning playbook would fetch for "
        "the targets into DIR: wheels, source archives, a manifest with "
        "sha256 and sizes; names what must be supplied by hand. Running it again adds to DIR "
        "and never replaces a file. `jetson-env provision --bundle DIR` then needs no network. "
        'See docs/playbook.md, "Offline fleets".',
    )
    bundle.add_argument("directory", metavar="DIR", help="the bundle folder (created if missing)")
    bundle.add_argument(
        "--l4t",
        action="append",
        default=[],
        metavar="RELEASE",
        help="a Jetson target by its L4T release, e.g. R36.4.3 (repeatable)",
    )
    bundle.add_argument(
        "--x86", action="store_true", help="an x86_64 target (the matrix's x86 profile)"
    )
    bundle.add_argument(
        "--python", metavar="X.Y", help="the targets' Python (default: the row's; x86: this one's)"
    )
    bundle.add_argument(
        "--glibc",
        metavar="2.N",
        help="the targets' glibc (default: the row's Ubuntu; x86: this one's)",
    )
    bundle.add_argument(
        "--distribution",
        metavar="ID/CODENAME",
        help="the targets' apt distribution, e.g. debian/bookworm (default: the row's Ubuntu; "
        "x86: this one's); its .debs are bundled where this machine's apt mirrors serve it",
    )
    bundle.add_argument(
        "-i", "--inventory", metavar="INVENTORY", help="targets from these hosts' facts"
    )
    bundle.add_argument("--limit", metavar="PATTERN", help="only these hosts of the inventory")
    bundle.add_argument(
        "--roles", metavar="ROLE[,ROLE]", help="only what these roles need (default: all)"
    )
    bundle.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="KIND=PATH",
        help="a file this machine cannot download (torch, torchvision, torch2trt, "
        "tensorrt, cusparselt), added for the targets given",
    )
    bundle.add_argument("--jobs", type=forks, default=4, help="parallel downloads (default 4)")
    bundle.add_argument(
        "--controller-python",
        metavar="X.Y",
        default=f"{sys.version_info.major}.{sys.version_info.minor}",
        help="the Python of the offline controller, for jetson-env[provision]'s wheels in "
        "DIR/controller (default: this one's)",
    )
    bundle.add_argument(
        "--no-controller",
        action="store_true",
        help="leave jetson-env's own wheels out (the offline controller has it already)",
    )
    bundle.add_argument(
        "--sign",
        metavar="KEY",
        help="sign the manifest with this OpenSSH private key (ssh-keygen -Y sign); alone, "
        "signs DIR as it is",
    )
    bundle.add_argument(
        "--trust",
        metavar="KEY.pub",
        help="with --verify: also check that this key's private half signed DIR",
    )
    bundle.add_argument(
        "--verify", action="store_true", help="check every file of DIR against its sha256"
    )
    bundle.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    bundle.set_defaults(func=cmd_bundle)

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
    plan.add_argument("--python", default="python3", help="target interpreter (default python3)")
    plan.add_argument("--host", metavar="USER@HOST[:PORT]", help="plan a remote host over SSH")
    plan.add_argument("--identity", metavar="FILE", help="SSH private key (--host)")
    plan.add_argument("--password", action="store_true", help="ask for an SSH password (--host)")
    plan.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="accept and record an unknown host key (--host)",
    )
    plan.add_argument(
        "-i",
        "--inventory",
        metavar="INVENTORY",
        help="every host of this Ansible inventory, through Ansible",
    )
    plan.add_argument("--limit", metavar="PATTERN", help="only these hosts of --inventory")
    plan.add_argument("--forks", type=forks, metavar="N", help="hosts at once (--inventory)")
    plan.add_argument(
        "--report", metavar="FILE", help="also write the host x part grid: FILE.html or FILE.md"
    )
    plan.add_argument("--timeout", type=seconds, help="seconds per probe (default: per probe)")
    plan.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    plan.set_defaults(func=cmd_plan)

    images = sub.add_parser("images", help="container images: list, build, the tag for this host")
    images.add_argument(
        "--repository", default=images_mod.DEFAULT_REPOSITORY, help="image repository (name)"
    )
    images_sub = images.add_subparsers(dest="images_command", required=True, metavar="ACTION")
    listing = images_sub.add_parser("list", help="every image with its versions")
    listing.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    tag = images_sub.add_parser("tag", help="the image that runs on this host (its L4T)")
    tag.add_argument("--l4t", metavar="RELEASE", help="for a Jetson of this L4T instead")
    tag.add_argument("--python", default=target_python.DEFAULT, help="interpreter for the probes")
    tag.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    build = images_sub.add_parser("build", help="build one image (docker engine needed)")
    build.add_argument("name", help="image name from `images list`, e.g. r36.4.0 or x86_64")
    build.add_argument("--base", help="FROM image instead of the matrix's (e.g. a local mirror)")
    build.add_argument(
        "--playbook-vars",
        metavar="JSON",
        help="more variables for the playbook in the build, e.g. files staged in images/inputs/",
    )
    build.add_argument("--log", help="build log path (default .cache/images/NAME.log)")
    build.add_argument("--json", action="store_true", help="JSON on stdout (docs/json.md)")
    images.set_defaults(func=cmd_images)
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
