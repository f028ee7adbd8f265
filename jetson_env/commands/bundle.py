"""`jetson-env bundle`: every artifact some targets need, gathered into a folder for
offline provisioning; `--verify` and `--sign` check and sign one (docs/playbook.md,
"Offline fleets").
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from jetson_env import installed
from jetson_env.checks.context import shell_word
from jetson_env.collection import roles_a_bundle
from jetson_env.commands.options import inventory, json_output, renamed, roles_option
from jetson_env.exit_codes import EXIT_FAILED, EXIT_OK
from jetson_env.matrix import Matrix
from jetson_env.sizes import size
from jetson_env.terminal import Terminal
from jetson_env.terminal import clean as terminal_clean


def run(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
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
            return _sign_made(term, directory, sign_key, bundle)
        files = _files(args, bundle)
        roles = _roles(args, bundle)
        capabilities: dict[str, set[str]] = {}
        targets = _targets(args, term, bundle, matrix, capabilities)
        with term.progress() as progress:
            result = bundle.make(
                directory,
                matrix,
                list(dict.fromkeys(targets)),
                roles,
                files,
                report=progress,
                workers=args.forks or bundle.fetching.FETCH_WORKERS,
                sign_key=sign_key,
                controller_python=None if args.no_controller else args.controller_python,
                capabilities=capabilities,
                allow_no_kernel=args.allow_no_kernel,
            )
    except bundle.BundleError as exc:
        term.error(str(exc), hint=exc.hint)
        return exc.exit_code
    steps = _next_steps(args, directory, sign_key)
    if term.as_json:
        term.json({**result.as_dict(), "next": steps})
    else:
        _show_made(args, term, directory, result, bundle, steps)
    return EXIT_OK


def _sign_made(term: Terminal, directory: Path, sign_key: Path, bundle) -> int:
    """--sign alone: sign the manifest of a bundle made before."""
    signed = bundle.sign(directory, sign_key, term.note)
    if term.as_json:
        term.json({"schema": bundle.SCHEMA, "bundle": str(directory), "signed": True,
                   "key": str(sign_key), **signed})  # fmt: skip
    else:
        term.line(f"{directory}: manifest signed with {sign_key} "
                  f"({signed['fingerprint']}); manifest sha256 "
                  f"{signed['manifest_sha256']}")  # fmt: skip
    return EXIT_OK


def _files(args: argparse.Namespace, bundle) -> dict[str, Path]:
    """--file KIND=PATH: artifacts the user supplies (a download behind a login)."""
    files = {}
    for item in args.file:
        kind, _, path = item.partition("=")
        if not path:
            raise bundle.BundleError(
                f"--file {item!r} is not KIND=PATH",
                hint="e.g. --file torch=/path/torch-2.5.0-...whl",
            )
        files[kind] = Path(path).expanduser()
    return files


def _roles(args: argparse.Namespace, bundle) -> list[str]:
    """--roles, each a role the bundle knows (every role where none is named)."""
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
    return roles


def _targets(args: argparse.Namespace, term: Terminal, bundle, matrix: Matrix,
             capabilities: dict[str, set[str]]) -> list:  # fmt: skip
    """The targets of --l4t/--x86 and the options that describe them, then the hosts of
    --inventory, each read from its facts (`capabilities` gets their GPUs')."""
    if args.inventory and not (args.l4t or args.x86):
        for option, value in (("--python-version", args.python), ("--glibc", args.glibc),
                              ("--distribution", args.distribution),
                              ("--cuda", args.cuda)):  # fmt: skip
            if value:
                raise bundle.BundleError(
                    f"{option} describes the --l4t/--x86 targets; with --inventory alone "
                    "each host's own is read from its facts",
                    hint=f"leave {option} out, or add the target it describes with --l4t "
                    "RELEASE or --x86",
                )
    targets = (
        bundle.targets_from_args(
            matrix,
            args.l4t,
            args.x86,
            args.python,
            args.glibc,
            args.distribution,
            args.cuda,
        )
        if (args.l4t or args.x86 or not args.inventory)
        else []
    )
    if args.inventory:
        targets += _inventory_targets(args, term, bundle, matrix, capabilities)
    return targets


def _show_made(args: argparse.Namespace, term: Terminal, directory: Path, result, bundle,
               steps: dict[str, str]) -> None:  # fmt: skip
    """The made bundle for a reader: sizes per target, what to supply by hand, the apt
    packages left out, the next steps."""
    term.table(
        ["target", "roles", "size"],
        [
            [key, ", ".join(result.manifest["targets"][key]["roles"]), size(nbytes)]
            for key, nbytes in result.sizes.items()
        ]
        + [["total (the whole bundle)", "", size(result.total)]],
        title=f"bundle {directory}",
    )
    term.line(
        f"{len(result.added)} file(s) added in {result.seconds:.0f} s; pip: --no-index "
        f"--find-links {shell_word(str(directory / 'pip'))}"
    )
    controller = result.as_dict()["controller"]
    if controller:
        term.line(f"jetson-env itself, offline (Python {args.controller_python}): {controller}")
    for item in result.manifest["manual"]:
        term.line(
            f"to supply by hand for {', '.join(item['targets'])}: {item['what']} -> "
            f"{directory}/{item['expected']}"
            f" (from {item['where_from']}); "
            f"{bundle.manual_line(directory, result.manifest, item)}",
            style="yellow",
        )
    for line in _kernel_lines(result.kernels):
        term.line(line, style="yellow")
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
    term.line(f"next: check it where it is used: {steps['verify']}", style="bold")
    term.line(f"then provision from it, with no network: {steps['provision']}", style="bold")


def _next_steps(args: argparse.Namespace, directory: Path, sign_key: Path | None) -> dict:
    """What to run next, wherever the folder is carried (its path as made here): `verify` it,
    then `provision` from it with no network, on the inventory it was made for if any."""
    folder = shell_word(str(directory))
    trust = f" --trust {shell_word(f'{sign_key}.pub')}" if sign_key else ""
    hosts = f" -i {shell_word(args.inventory)}" if args.inventory else ""
    return {
        "verify": installed.command(f"jetson-env bundle --verify {folder}{trust}"),
        "provision": installed.command(f"jetson-env provision --bundle {folder}{trust}{hosts}"),
    }


def _kernel_lines(findings: list[dict]) -> list[str]:
    """The wheels' verdicts that are not "runs", a line each: PTX only (compiled by the driver
    at the first load), shipped without a kernel (--allow-no-kernel, or torch requires it);
    those not judged, one
    line per target and reason, naming the wheels."""
    lines, unjudged = [], {}
    for finding in findings:
        if finding["verdict"] == "not-judged":
            unjudged.setdefault((finding["target"], finding["why"]), []).append(finding["path"])
            continue
        said = (
            "runs only after a JIT"
            if finding["verdict"] == "jit"
            else f"shipped: {finding['required_by']} requires it"
            if finding["required_by"]
            else "shipped anyway"
        )
        lines.append(
            f"kernels: {finding['path']} for {finding['target']} (compute capability "
            f"{finding['capability']}): {said} ({finding['verdict']}): {finding['why']}"
        )
    for (target, why), paths in unjudged.items():
        lines.append(f"kernels: {target}: {why}: {', '.join(paths)}")
    return lines


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
                f"still to supply by hand for {', '.join(item['targets'])}: {item['what']}; "
                f"{bundle.manual_line(directory, manifest, item)}",
                style="yellow",
            )
    return EXIT_FAILED if problems else EXIT_OK


def _inventory_targets(
    args: argparse.Namespace, term: Terminal, bundle, matrix: Matrix, gpus: dict[str, set[str]]
) -> list:
    """The targets an inventory's hosts are, from their facts (read-only, through Ansible);
    `gpus` gets each target's compute capabilities (a Jetson's SoC's, another host's first
    GPU's: Matrix.device_capability), by target key."""
    import subprocess
    import tempfile

    from jetson_env import collection, lifeline

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
        if args.forks:
            cmd += ["--forks", str(args.forks)]
        term.note("reading the hosts' facts: " + shlex.join(cmd))
        result = subprocess.run(
            cmd,
            env={**collection.environment(ansible_playbook), **collection.STRICT_INVENTORY},
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=lifeline.ends_with_us(),
        )
        facts = sorted(Path(tmp).glob("*.json"))
        if result.returncode != 0 or not facts:
            tail = " ".join(
                (result.stdout.strip() + "\n" + result.stderr.strip()).strip().splitlines()[-6:]
            )
            raise bundle.BundleError(
                f"reading the facts of {args.inventory}'s hosts failed: {tail}",
                hint=f"`{installed.command('jetson-env doctor -i INVENTORY')}` shows which hosts "
                "answer",
            )
        targets = []
        for path in facts:
            target, capability = _host_target(path, bundle, matrix)
            term.note(f"{path.stem}: {target.key}")
            targets.append(target)
            if capability:
                gpus.setdefault(target.key, set()).add(capability)
    return targets


FACTS_LIMIT = 1 << 20  # bytes of one host's facts file: platform, Python and CUDA facts


def _host_target(path: Path, bundle, matrix: Matrix):
    """The target a host's facts file (the bundle_facts playbook's) says it is, and its
    compute capability (None where not known); BundleError,
    naming the host, for facts of another shape than the facts module's: what a host reports
    is data, and a bundle for part of the fleet would be half done."""
    from jetson_env import user_files
    from jetson_env.probing import WRONG_SHAPE

    try:
        data = json.loads(user_files.read_named(path, "the facts of", FACTS_LIMIT))
        platform, python, cuda = data["platform"], data["python"], data.get("cuda")
        if not isinstance(platform, dict) or not isinstance(python, dict):
            raise TypeError("its platform and python facts are not objects")
        target = bundle.target_from_facts(platform, python, cuda if isinstance(cuda, dict) else {})
        return target, matrix.device_capability(platform)[0]
    except (user_files.NotAFile, RecursionError, *WRONG_SHAPE) as exc:
        said = terminal_clean(f"{type(exc).__name__}: {exc}")[:300]
        raise bundle.BundleError(
            f"host {path.stem} reported facts of another shape than jetson-env's ({said}): "
            "no bundle was made",
            hint=f"`{installed.command(f'jetson-env doctor -i INVENTORY --limit {path.stem}')}` "
            "shows what the host says; leave it out with --limit",
        ) from None


def register(sub) -> None:
    """The `bundle` command's arguments, on the command line's subparsers."""
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
        "--python-version",
        dest="python",
        metavar="X.Y",
        help="the targets' Python version (default: the row's; x86: this one's)",
    )
    renamed(bundle, "--python", "--python-version X.Y",
            "a bundle's targets are not here to run, so their Python is a version; --python "
            "names an interpreter to run, in doctor, plan, info and provision")  # fmt: skip
    bundle.add_argument(
        "--glibc",
        metavar="2.N",
        help="the targets' glibc (default: the row's Ubuntu; x86: this one's)",
    )
    bundle.add_argument(
        "--cuda",
        metavar="X.Y",
        help="the targets' CUDA toolkit, whose major picks cuda-python (default: the row's; "
        "x86: its torch's; -i: each host's)",
    )
    bundle.add_argument(
        "--distribution",
        metavar="ID/CODENAME",
        help="the targets' apt distribution, e.g. debian/bookworm (default: the row's Ubuntu; "
        "x86: this one's); its .debs are bundled where this machine's apt mirrors serve it",
    )
    inventory(bundle, "targets from these hosts' facts",
              forks_help="downloads at once (default 4); with -i, hosts whose facts are read at "
              "once")  # fmt: skip
    renamed(bundle, "--jobs", "-f/--forks N",
            "one word for \"this many at once\" in every command, as Ansible's")  # fmt: skip
    roles_option(
        bundle,
        f"only what these roles need, of {', '.join(roles_a_bundle('files'))} (default: all)",
        dest="roles",
    )
    bundle.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="KIND=PATH",
        help="a file this machine cannot download (torch, torchvision, torch2trt, "
        "tensorrt, cusparselt), added for the targets given",
    )
    bundle.add_argument(
        "--controller-python",
        metavar="X.Y",
        default=f"{sys.version_info.major}.{sys.version_info.minor}",
        help="the Python of the offline controller, for jetson-env[provision]'s wheels in "
        "DIR/controller (default: this one's)",
    )
    bundle.add_argument(
        "--allow-no-kernel",
        action="store_true",
        help="ship a wheel even where it has no kernel for a target's GPU (by default it is "
        "refused for that target, with the verdict); the manifest records the verdict",
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
    json_output(bundle)
    bundle.set_defaults(func=run)
