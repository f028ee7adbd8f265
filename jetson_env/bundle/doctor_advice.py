"""The doctor's advice from a bundle (`doctor --bundle`): which fixes it can apply on
that host with no network, and the line that does it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jetson_env import installed
from jetson_env.bundle.needs import ROLES
from jetson_env.bundle.preflight import OFFLINE_ROLES, check_role, host_plan
from jetson_env.bundle.untrusted import read_manifest
from jetson_env.checks.context import shell_word
from jetson_env.collection import role_registry

# Roles a bundle cannot serve because they install apt packages it does not carry.
APT_ROLES = tuple(r.name for r in role_registry() if r.bundle == "none" and r.apt)


def _host_facts(report: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The doctor's platform facts and its Python as host_plan reads them."""
    platform = report.get("platform") or {}
    version = str((platform.get("python") or {}).get("version") or "")
    libc = (platform.get("python") or {}).get("libc")
    python = {"major_minor": ".".join(version.split(".")[:2]), "version": version, "libc": libc}
    return platform, python


def roles_left_out(
    directory: str | Path, report: dict[str, Any], roles: Sequence[str]
) -> dict[str, str]:
    """Those of `roles` the bundle cannot serve on the doctor's host, each with why and where
    its files go: the playbook's preflight skips them for want of their files (jetson_facts'
    bundle_check), so `doctor --fix --bundle` leaves them out instead of running them."""
    served = [role for role in roles if role in ROLES]
    if not served:
        return {}
    platform, python = _host_facts(report)
    plan = host_plan(Path(directory), platform, python, {role: True for role in served})
    return dict(plan.get("skipped") or {})


def doctor_fixes(
    directory: str | Path, report: dict[str, Any], target: Sequence[str] = ()
) -> dict[str, Any]:
    """For a doctor report (its JSON form): which of its fixes the bundle can apply on that
    host with no network, the `jetson-env doctor --fix ROLES --bundle DIR` line that
    applies them (as `provision --bundle DIR` would) to the Python the doctor checked on the
    same target (`target`: the doctor's --host and --identity words), and the one
    `jetson-env bundle ... --roles A,B` line that adds every role it was not made with for
    that host (`add`)."""
    directory = Path(directory).expanduser().resolve()
    platform, python = _host_facts(report)
    fixes = []
    absent: list[str] = []  # roles the bundle was not made with for this host
    add_line = ""
    for finding in report.get("findings", []):
        playbook = finding.get("playbook")
        if finding["status"] not in ("fail", "warn", "crash") or not playbook:
            continue
        role = playbook["role"]
        if role in OFFLINE_ROLES:
            applies, why = True, "needs nothing from the network"
        elif role in APT_ROLES:
            applies, why = False, "installs apt packages, which a bundle does not carry"
        elif role not in ROLES:
            applies, why = False, f"{role} is not a role a bundle serves"
        else:
            plan = host_plan(directory, platform, python, {role: True})
            why = plan["error"] or plan["skipped"].get(role)
            if why is not None and plan["error"] is None and role not in _made_with(plan):
                absent.append(role)
                add_line = plan["add_line"]
                why = f"the bundle was not made with {role} for {plan['target']}"
            if why is None:  # the role's files, as the playbook checks them before using them
                why = check_role(plan, role)["error"]
            applies = why is None
            why = why or f"from the bundle (target {plan['target']})"
        fixes.append({"check": finding["check"], "role": role, "applies": applies, "why": why})
    roles = list(dict.fromkeys(f["role"] for f in fixes if f["applies"]))
    # The Python the doctor checked is the one to provision (jetson_env.target_python).
    probed = (platform.get("python") or {}).get("executable")
    words = ["jetson-env", "doctor", *target, *(["--python", probed] if probed else []),
             "--fix", ",".join(roles), "--bundle", str(directory)]  # fmt: skip
    command = installed.command(" ".join(shell_word(word) for word in words)) if roles else None
    absent = list(dict.fromkeys(absent))
    add = (
        {"roles": absent, "command": f"{add_line} --roles {shell_word(','.join(absent))}"}
        if absent
        else None
    )
    return {"directory": str(directory), "fixes": fixes, "roles": roles, "command": command,
            "add": add}  # fmt: skip


def _made_with(plan: dict[str, Any]) -> set[str]:
    """The roles the bundle was made with for host_plan's target (its manifest, as pinned)."""
    manifest = read_manifest(Path(plan["directory"]), plan["manifest_sha256"]) or {}
    return set(manifest.get("targets", {}).get(plan["target"], {}).get("roles", []))
