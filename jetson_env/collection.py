"""The Ansible face of jetson-env: the collection jetson_env.jetson, where it is, and how
ansible-playbook is started to run its playbooks.

The wheel carries the collection as a top-level `ansible_collections/jetson_env/jetson/`
beside the `jetson_env` package (the checkout has the same layout). ansible-core scans
sys.path for `ansible_collections` folders, so an ansible-playbook of this environment
finds it with no setting at all; only where that scan cannot see it (an editable install,
an ansible-playbook from another environment) is ANSIBLE_COLLECTIONS_PATH given, with
this folder first. Nothing is written into the current directory and no ansible.cfg is
imposed: the user's own (ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg) applies.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from jetson_env import installed, yaml_files

NAMESPACE, NAME = "jetson_env", "jetson"
FQCN = f"{NAMESPACE}.{NAME}"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # site-packages, or the checkout
PATH = PACKAGE_ROOT / "ansible_collections" / NAMESPACE / NAME
PROVISION = f"{FQCN}.provision"
DOCTOR = f"{FQCN}.doctor"
# Where Ansible looks for collections when nothing is configured (ansible-core's default).
DEFAULT_COLLECTIONS_PATH = "~/.ansible/collections:/usr/share/ansible/collections"


class BadVariables(ValueError):
    """--playbook-vars that are not a JSON object: refused before anything runs."""


# Levels of lists and objects a --playbook-vars value may nest: far past any role's variables,
# far short of the depth at which writing them for Ansible (YAML) runs out of stack.
VARS_DEPTH = 64


def playbook_vars(text: str | None) -> dict:
    """--playbook-vars (doctor --fix, images build): a JSON object of playbook variables."""
    if not text:
        return {}
    try:
        variables = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise BadVariables(f"--playbook-vars is not JSON: {str(exc)[:200]}") from None
    if not isinstance(variables, dict):
        raise BadVariables("--playbook-vars must be a JSON object")
    if _depth(variables) > VARS_DEPTH:
        raise BadVariables(f"--playbook-vars nests deeper than {VARS_DEPTH} levels")
    return variables


def _depth(value: Any) -> int:
    """How deep lists and objects nest in `value` (1 for a flat object), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (item.values() if isinstance(item, dict)
                    else item if isinstance(item, list) else None)  # fmt: skip
        if children is not None:
            deepest = max(deepest, level)
            if level <= VARS_DEPTH:
                stack.extend((child, level + 1) for child in children)
    return deepest


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


class Data(str):
    """A text for Ansible that is data, never a template: what a target, an inventory or a
    bundle said (a probed Python's path, a remedy's values). Written as `!unsafe`, which
    every supported ansible-core (2.16 to 2.21) reads as plain text it never evaluates."""


def data(value: Any) -> Any:
    """`value` with every text in it (dict values, list items) marked as Data."""
    if isinstance(value, str):
        return Data(value)
    if isinstance(value, dict):
        return {key: data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [data(item) for item in value]
    return value


class _VarsDumper(yaml.SafeDumper):
    pass


_VarsDumper.add_representer(
    Data, lambda dumper, text: dumper.represent_scalar("!unsafe", str(text), style='"')
)


def extra_vars(variables: dict[str, Any]) -> str:
    """Playbook variables for `ansible-playbook -e` (as they are, or in an `@FILE`): YAML in
    one line (it starts with "{", so Ansible reads it as YAML, not key=value), Data tagged
    `!unsafe`; the rest (the user's own --playbook-vars and -e) stays as given."""
    return yaml.dump(variables, Dumper=_VarsDumper, default_flow_style=True, width=2**31 - 1,
                     allow_unicode=True, sort_keys=False).strip()  # fmt: skip


def install_hint() -> str:
    return f"install Ansible with jetson-env (its provision extra): {installed.extra_line()}"


class AnsibleMissing(Exception):
    """No ansible-playbook to run: nothing was changed."""

    @property
    def hint(self) -> str:
        return install_hint()


def ansible_command(name: str = "ansible-playbook") -> str:
    """An Ansible command of this interpreter's environment (the provision extra), else
    PATH's (installed.program)."""
    found = installed.program(name)
    if found is None:
        raise AnsibleMissing(f"{name} is not installed")
    return found


def environment(command: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for an Ansible `command` that must find this collection."""
    env = dict(os.environ if base is None else base)
    same_environment = Path(command).parent == Path(sys.executable).parent
    # Installed into this environment's site-packages: ansible-playbook's own sys.path has it.
    # (Not sys.path: it holds this process's working directory, a checkout's root under
    # `python -m`, which ansible-playbook does not scan.)
    installed = {_resolved(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    if same_environment and PACKAGE_ROOT in installed:
        return env
    configured = env.get("ANSIBLE_COLLECTIONS_PATH") or DEFAULT_COLLECTIONS_PATH
    env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([str(PACKAGE_ROOT), configured])
    return env


def _resolved(entry: str) -> Path:
    return Path(entry or ".").resolve()


def playbook_file(name: str) -> Path:
    return PATH / "playbooks" / f"{name}.yml"


REGISTRY = PATH / "meta" / "roles.yml"
BUNDLE_SERVES = ("files", "offline", "none")  # a registry entry's `bundle` (meta/roles.yml)


@dataclass(frozen=True)
class Role:
    """One provisioning role as the registry (meta/roles.yml) describes it."""

    name: str  # also its tag and its switch NAME_enabled
    fixes: tuple[str, ...]  # the doctor's checks whose remedies it applies
    fetches: tuple[str, ...]  # what it may download, and from where
    apt: bool  # it installs apt packages
    bundle: str  # files, offline or none: how a bundle serves it
    keeps_installed: bool  # it may keep what the host has (torch, torchvision)


@cache
def role_registry() -> tuple[Role, ...]:
    """The provisioning roles, in the playbook's order (meta/roles.yml)."""
    entries = yaml_files.safe_load(REGISTRY.read_text(encoding="utf-8"))["roles"]
    return tuple(Role(e["name"], tuple(e["fixes"]), tuple(e["fetches"]), bool(e["apt"]),
                      e["bundle"], bool(e["keeps_installed"])) for e in entries)  # fmt: skip


def provision_roles() -> list[str]:
    """The roles the playbook provisions (the names --fix, --tags and bundle --roles take),
    in its order."""
    return [role.name for role in role_registry()]


def roles_a_bundle(serves: str) -> tuple[str, ...]:
    """The roles a bundle serves so (BUNDLE_SERVES): `files`, `offline` or `none`."""
    return tuple(role.name for role in role_registry() if role.bundle == serves)


def role_fixing(check: str) -> str | None:
    """The role whose remedies fix the doctor's `check`, if any."""
    return next((role.name for role in role_registry() if check in role.fixes), None)


# Tags Ansible itself gives meaning to.
ANSIBLE_TAGS = ("all", "always", "never", "tagged", "untagged")
# Every inventory source must parse whole: Ansible otherwise skips what it cannot read with
# a warning (3 of 5 hosts dropped from a run that then succeeds).
STRICT_INVENTORY = {
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
}
INVENTORY_TIMEOUT_S = 120


def unknown_tags(tags: str | None) -> list[str]:
    """The names of `--tags ROLE[,ROLE]` that are neither a role of the provision playbook
    nor one of Ansible's own tags (Ansible runs nothing for them, and says ok)."""
    known = set(provision_roles()) | set(ANSIBLE_TAGS)
    return [tag for tag in (t.strip() for t in (tags or "").split(",")) if tag and tag not in known]


class BadInventory(ValueError):
    """An inventory with no host, or one Ansible reads only in part: nothing was run."""

    @property
    def hint(self) -> str:
        graph = installed.command("ansible-inventory -i INVENTORY --graph")
        return f"`{graph}` shows what Ansible reads; fix the inventory"


def inventory_hosts(inventory: str) -> list[str]:
    """The hosts of `inventory` as Ansible reads it, every source parsed whole; BadInventory
    when it is missing, unreadable, partly parsed or has no host, or not a file or folder
    (a FIFO, a device: refused before Ansible reads it, user_files.inventory_problem). Every
    `-i` of every command goes through it first."""
    import subprocess

    from jetson_env.user_files import inventory_problem

    problem = inventory_problem(inventory)
    if problem:
        raise BadInventory(problem)
    try:
        command = ansible_command("ansible-inventory")
    except AnsibleMissing as exc:
        raise BadInventory(f"{exc}: it reads the inventory ({install_hint()})") from None
    env = {**environment(command), **STRICT_INVENTORY}
    try:
        proc = subprocess.run(
            [command, "-i", inventory, "--list"], capture_output=True, text=True, env=env,
            timeout=INVENTORY_TIMEOUT_S, check=False,
        )  # fmt: skip
        data = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise BadInventory(f"ansible-inventory could not read {inventory}: {exc}") from None
    if data is None:
        errors = [line for line in proc.stderr.splitlines() if "ERROR" in line or "WARNING" in line]
        raise BadInventory(
            f"Ansible cannot read the whole inventory {inventory}: "
            + (" ".join(errors)[-600:] or proc.stderr.strip()[-600:])
        )
    hosts = sorted((data.get("_meta") or {}).get("hostvars") or {})
    for group in data.values():
        if isinstance(group, dict):
            hosts += [h for h in group.get("hosts", []) if h not in hosts]
    if not hosts:
        raise BadInventory(f"the inventory {inventory} has no host")
    return hosts


def role_defaults_file(role: str) -> Path:
    return PATH / "roles" / role / "defaults" / "main.yml"


def provision_command(
    ansible_playbook: str,
    inventory: str | None,
    *,
    limit: str | None = None,
    tags: str | None = None,
    extra_vars: list[str] = (),
    check: bool = False,
    diff: bool = False,
    forks: int | None = None,
    verbosity: int = 0,
    ask_become_pass: bool = False,
    passthrough: list[str] = (),
) -> list[str]:
    """`jetson-env provision`'s ansible-playbook command: the packaged provision playbook
    with the user's inventory (this machine, over the local connection, without one) and
    Ansible's own options, passed as given."""
    target = ["-i", inventory] if inventory else ["-i", "localhost,", "-c", "local"]
    cmd = [ansible_playbook, PROVISION, *target]
    for option, value in (("--limit", limit), ("--tags", tags), ("--forks", forks)):
        if value:
            cmd += [option, str(value)]
    for value in extra_vars:
        cmd += ["-e", value]
    cmd += [flag for flag, on in (("--check", check), ("--diff", diff),
                                  ("--ask-become-pass", ask_become_pass)) if on]  # fmt: skip
    if verbosity > 0:
        cmd.append("-" + "v" * verbosity)
    return cmd + list(passthrough)
