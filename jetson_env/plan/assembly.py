"""`jetson-env plan`: the plan's probes on each host, the judgement, and the commands.

The facts come from read-only probes (platform, cuda, compiled, kernels, engines,
apt_upgrade) in each host's own Python, run the way the doctor runs them: here, over SSH
(--host) or through Ansible (-i, jetson_env.fleet.inventory). jetson_env.plan.judgement
judges them; this module puts the hosts' plans together with the commands that rebuild them
offline: `jetson-env bundle` before the upgrade, `jetson-env provision --bundle` and
`jetson-env doctor` after it, each argument shell-quoted, so that they run as printed.
Nothing here changes a host."""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jetson_env import installed, platform_in_matrix, target_python
from jetson_env.apt_repository import distribution_of
from jetson_env.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE
from jetson_env.matrix import Matrix, Release
from jetson_env.plan import judgement
from jetson_env.probing import WRONG_SHAPE, ProbeResult, Unusable, probe_all, wrong_shape
from jetson_env.ssh_address import DEFAULT_PORT, parse_address
from jetson_env.targets import Target, Unreachable

SCHEMA = 1
PROBES = ("platform", "cuda", "compiled", "kernels", "engines", "apt_upgrade", "docker")
REFUSED, UNREACHABLE = "refused", "unreachable"
HOST_STATUSES = (UNREACHABLE, REFUSED, *judgement.VERDICTS)  # worst first


class InputError(Exception):
    """Something in the command line to change (exit 2); `hint` says what."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


# A host's system Python: an upgrade of JetPack replaces it with the new release's.
SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/bin/python")


@dataclass(frozen=True)
class Request:
    to: Release
    engines: tuple[str, ...]
    bundle: str  # the bundle folder the commands name (absolute)
    inventory: str | None = None
    limit: str | None = None
    ssh_host: str | None = None  # --host USER@HOST[:PORT]

    def arguments(self) -> dict[str, Any]:
        return {"engines": {"folders": list(self.engines)},
                "apt_upgrade": {"suite": judgement.suite(self.to)}}  # fmt: skip


def probe_host(
    target: Target, request: Request, timeout: float | None, progress: Callable[[str], None]
) -> dict[str, ProbeResult] | str:
    """The plan's probes on one target, or why they did not run."""
    try:
        return probe_all(target, PROBES, timeout, progress, request.arguments())
    except (Unusable, Unreachable) as exc:
        remedy = getattr(exc, "remedy", None)
        return f"{exc}" + (f" ({remedy})" if remedy else "")


def host_plan(
    matrix: Matrix, name: str, results: dict[str, ProbeResult] | str, request: Request
) -> dict[str, Any]:
    """One host's plan: its rows now and after, and each part's verdict; or why none."""
    plan: dict[str, Any] = {"host": name, "status": None, "platform_label": "", "kind": None,
                            "now": None, "refused": None, "error": None, "python": None,
                            "distribution": None, "parts": [], "unmanaged": None,
                            "not_offered": []}  # fmt: skip
    if isinstance(results, str):
        return {**plan, "status": UNREACHABLE, "error": results}
    if not results["platform"].ok:
        return {**plan, "status": UNREACHABLE, "error": results["platform"].error}
    try:  # the probes' facts are the host's word: odd ones stop this host's plan only
        return _judged(matrix, plan, results, request)
    except WRONG_SHAPE as exc:
        return {**plan, "kind": None, "now": None, "parts": [], "status": UNREACHABLE,
                "error": wrong_shape(exc)}  # fmt: skip


def _judged(
    matrix: Matrix, plan: dict[str, Any], results: dict[str, ProbeResult], request: Request
) -> dict[str, Any]:
    cuda = results["cuda"].data if results["cuda"].ok else {}
    platform = platform_in_matrix.describe(results["platform"].data, cuda, matrix)
    compiled = results["compiled"]
    compiled = compiled.data if compiled.ok else {"error": compiled.error}
    python = (compiled.get("python") or {}) if "error" not in compiled else {}
    plan.update(
        platform_label=_label(platform),
        python={"version": _text(python.get("version") or platform["python"]["version"]),
                "executable": _text(python.get("executable")
                                    or platform["python"]["executable"]),
                "venv": bool(python.get("venv"))},
        distribution=_text(distribution_of(platform.get("os") or {})),
        # Routes the matrix does not offer for this host, with why (CUDA 13 compat on JetPack 6).
        not_offered=matrix.routes_not_offered(platform.get("l4t"), platform.get("soc")),
    )  # fmt: skip
    try:
        current, kind = judgement.move(matrix, platform, request.to)
    except judgement.Refused as exc:
        return {**plan, "status": REFUSED, "refused": str(exc)}
    facts = {name: (r.data if r.ok else {"error": r.error}) for name, r in results.items()}
    parts = judgement.judge(matrix, platform, facts, current, request.to, kind)
    return {**plan, "kind": kind, "now": judgement.row_summary(current),
            "status": judgement.worst([p.verdict for p in parts]),
            "parts": [p.as_dict() for p in parts]}  # fmt: skip


def _text(value: Any) -> str:
    """A fact the plan keeps as text (a version, a path): TypeError for another shape."""
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a text")
    return value


def _label(platform: dict[str, Any]) -> str:
    if not platform["is_jetson"]:
        return str(platform["machine"])
    return f"L4T R{platform['l4t'] or '?'} / JetPack {platform['jetpack'] or '?'}"


def _minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def commands(request: Request, hosts: list[dict[str, Any]]) -> dict[str, list[str]]:
    """`jetson-env bundle` (before, with the network) for the target row and the Pythons the
    hosts will have; `provision --bundle` and `doctor` after. Every value shell-quoted."""
    planned = [h for h in hosts if h["kind"] is not None]
    targets = []
    for host in planned:
        if host["kind"] == judgement.APT:  # the host keeps its Python and distribution
            targets.append((_minor(host["python"]["version"]), host["distribution"] or ""))
        else:  # flashed: the row's Ubuntu and Python
            targets.append((request.to.python, ""))
    before = []
    for python, distribution in dict.fromkeys(targets):
        command = ["jetson-env", "bundle", request.bundle, "--l4t", f"R{request.to.l4t}"]
        if python != request.to.python:
            command += ["--python-version", python]
        if distribution:
            command += ["--distribution", distribution]
        before.append(installed.command(shlex.join(command)))
    if not planned:
        return {"before": before, "after": []}
    provision = ["jetson-env", "provision", "--bundle", request.bundle]
    doctor = ["jetson-env", "doctor"]
    if request.inventory is not None:
        names = ",".join(h["host"] for h in planned)
        provision += ["-i", request.inventory, "--limit", names]
        doctor += ["-i", request.inventory, "--limit", names]
    elif request.ssh_host is not None:  # provisioned through Ansible over ssh, like --fix
        address = parse_address(request.ssh_host)
        provision += ["-i", f"{address.host},"]
        connection = {"ansible_user": address.user} if address.user else {}
        if address.port != DEFAULT_PORT:
            connection["ansible_port"] = address.port
        provision += ["-e", json.dumps(connection)] if connection else []  # never key=value
        doctor += ["--host", request.ssh_host]
    pythons = {h["python"]["executable"] for h in planned if h["python"]["venv"]}
    if len(pythons) == 1 and request.inventory is None:
        (python,) = pythons
        try:  # the host's venv, for both: provision takes it as data (--python with -i)
            python = target_python.checked(python)
        except target_python.NoPython:
            python = None
        if python is not None:
            provision += ["--python", python]
            doctor += ["--python", python]
    after = [shlex.join(provision), shlex.join(doctor)]
    if request.inventory is not None or request.ssh_host is not None:  # from this controller
        after = [installed.command(line) for line in after]
    # else this machine is the one upgraded: its jetson-env then is the bundle's, by name
    return {"before": before, "after": after}


def exit_code(hosts: list[dict[str, Any]]) -> int:
    statuses = {h["status"] for h in hosts}
    if UNREACHABLE in statuses:
        return EXIT_UNREACHABLE
    if REFUSED in statuses:
        return EXIT_USAGE
    return EXIT_FAILED if "blocked" in statuses else EXIT_OK


def document(request: Request, hosts: list[dict[str, Any]], split: str = "") -> dict[str, Any]:
    """The whole plan (docs/plan.schema.json): worst host first; `split`: gather's."""
    ordered = sorted(hosts, key=lambda h: (HOST_STATUSES.index(h["status"]), h["host"]))
    counts = Counter(h["status"] for h in ordered)
    return {
        "schema": SCHEMA,
        "kind": "plan",
        "to": f"R{request.to.l4t}",
        "after": judgement.row_summary(request.to),
        "inventory": request.inventory,
        "limit": request.limit,
        "status": ordered[0]["status"] if ordered else "survives",
        "exit_code": exit_code(ordered),
        "counts": {status: counts.get(status, 0) for status in HOST_STATUSES},
        "ansible_core_split": split or None,
        "hosts": ordered,
        "bundle": request.bundle,
        "commands": commands(request, ordered),
    }


def gather(
    matrix: Matrix, request: Request, args: Any, progress: Callable[[str], None]
) -> tuple[list[dict[str, Any]], str]:
    """Every host's plan: the inventory's through Ansible, --host's over SSH, or this
    machine; and for an inventory, why no one ansible-core manages its hosts after the
    upgrade (ansible_core.Support.split), "" when one does."""
    if request.inventory is not None:
        from jetson_env.fleet import inventory as fleet

        found = fleet.recorded(request.inventory, request.limit, set(PROBES), args.timeout,
                               args.forks, progress, request.arguments())  # fmt: skip
        hosts = []
        pythons = []  # the Pythons Ansible runs modules with after the upgrade, by host
        for name, target in found.items():
            if not isinstance(target, fleet.RecordedTarget):
                hosts.append(host_plan(matrix, name, target.findings[0].summary, request))
                continue
            planned = host_plan(matrix, name, probe_host(target, request, args.timeout,
                                                         progress), request)  # fmt: skip
            after, platform = target_after(target, request, planned)
            hosts.append({**planned, "unmanaged": after.unmanaged(matrix, platform) or None})
            pythons.append(after.module_python_version(platform))
        return hosts, matrix.ansible_core.split(pythons)
    if request.ssh_host is not None:
        from jetson_env import remote

        try:
            target = remote.open_target(request.ssh_host, args.python, identity=args.identity,
                                        ask_for_password=args.password,
                                        accept_new_host_key=args.accept_new_host_key,
                                        again=["jetson-env", *sys.argv[1:]])  # fmt: skip
        except remote.UsageError as exc:
            raise InputError(str(exc), exc.hint) from None
        except remote.ConnectError as exc:
            return [host_plan(matrix, exc.target, f"{exc} ({exc.remedy})", request)], ""
        try:
            return [
                host_plan(
                    matrix,
                    target.description,
                    probe_host(target, request, args.timeout, progress),
                    request,
                )
            ], ""
        finally:
            target.close()
    from jetson_env.targets import LocalTarget

    target = LocalTarget(args.python)
    done = probe_host(target, request, args.timeout, progress)
    return [host_plan(matrix, target.description, done, request)], ""


def target_after(target: Any, request: Request, planned: dict[str, Any]) -> tuple[Any, dict]:
    """A host of the inventory as the after-upgrade commands' provisioning meets it, and its
    platform, for fleet.RecordedTarget.unmanaged and module_python_version: with the system
    Python running its modules, that of the release it moves to."""
    module_python = target.ansible.get("module_python", "")
    if module_python in SYSTEM_PYTHONS and request.to.python:
        after = {**target.ansible, "module_python_version": request.to.python}
        target = type(target)(target.description, target.python, target.recording, after)
    return target, {"python": planned["python"] or {}}
