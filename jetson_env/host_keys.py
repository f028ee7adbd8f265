"""An SSH host key that Ansible's ssh refused (unknown or changed), made actionable: the key the
host offers now, its fingerprint as `ssh-keygen -l` prints it, and the exact command that
records that very key once the user has compared it with the host's own. Nothing is
recorded here: host keys stay verified (ssh's, with the user's configuration).

The host's address, port and known_hosts file are ssh's own answer for the inventory's
values (`ssh -G`, so ~/.ssh/config applies); the key is read with `ssh-keyscan`, of the type
ssh named in its refusal.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass

from jetson_env import collection

SCAN_SECONDS = 10
# The inventory's options for ssh, which can name the known_hosts file or the port.
SSH_ARGS_VARIABLES = ("ansible_ssh_common_args", "ansible_ssh_extra_args")
# What ssh says of the key it refused: the type (unknown key), or type and fingerprint (changed).
_UNKNOWN = re.compile(r"No (\w+) host key is known for")
_CHANGED = re.compile(
    r"fingerprint for the (\w+) key sent by the remote host is\s+(SHA256:[A-Za-z0-9+/]+)"
)
_KEYSCAN_TYPES = {"ED25519": "ed25519", "ECDSA": "ecdsa", "RSA": "rsa", "DSA": "dsa"}
_KEY_LINE = re.compile(r"^(\S+) ((?:ssh|ecdsa-sha2|sk-ssh|sk-ecdsa)-[\w@.-]+) ([A-Za-z0-9+/]+=*)$")


def refused(message: str) -> bool:
    """Whether ssh refused the host's key (Ansible's unreachable message quotes ssh)."""
    return "host key verification failed" in message.lower()


def fingerprint(blob: bytes) -> str:
    """SHA256:... of a public key's wire form, as `ssh` and `ssh-keygen -lf` print it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def known_hosts_name(host: str, port: int) -> str:
    """How ssh names the host in known_hosts (and `ssh-keygen -F/-R` takes it)."""
    return host if port == 22 else f"[{host}]:{port}"


@dataclass(frozen=True)
class Endpoint:
    host: str  # the address ssh connects to
    port: int
    known_hosts: str  # the user's known_hosts file ssh reads first and records into
    alias: str  # the name ssh looks up in known_hosts (HostKeyAlias, else the host)
    algorithms: tuple[str, ...] = ()  # ssh's HostKeyAlgorithms, in its order of preference

    @property
    def name(self) -> str:
        return known_hosts_name(self.alias, self.port)


def inventory_endpoint(inventory: str, host: str) -> Endpoint | None:
    """Where ssh connects for `host` of the inventory (its ansible_host and ansible_port
    through ssh's own configuration); None where it cannot be told (templated values, an
    inventory host that is not reached over ssh)."""
    try:
        command = collection.ansible_command("ansible-inventory")
        shown = subprocess.run(
            [command, "-i", inventory, "--host", host], capture_output=True, text=True,
            timeout=60, env=collection.environment(command),
        )  # fmt: skip
        variables = json.loads(shown.stdout) if shown.returncode == 0 else {}
    except (collection.AnsibleMissing, OSError, subprocess.SubprocessError, ValueError):
        return None
    if variables.get("ansible_connection", "ssh") not in ("ssh", "ansible.builtin.ssh", "smart"):
        return None
    address = str(variables.get("ansible_host") or variables.get("ansible_ssh_host") or host)
    port = str(variables.get("ansible_port") or variables.get("ansible_ssh_port") or "")
    if "{{" in address + port or address.startswith("-") or (port and not port.isdigit()):
        return None
    options = " ".join(str(variables.get(name) or "") for name in SSH_ARGS_VARIABLES)
    try:
        ssh_args = shlex.split(options)
    except ValueError:
        return None
    return ssh_endpoint(address, int(port) if port else None, ssh_args)


def ssh_endpoint(
    address: str, port: int | None, ssh_args: list[str] | None = None
) -> Endpoint | None:
    """ssh's own resolution of address[:port] with the inventory's ssh arguments (`ssh -G`,
    which connects nowhere: ~/.ssh/config's and those options' HostName, Port,
    UserKnownHostsFile, HostKeyAlias)."""
    command = ["ssh", "-G", *(ssh_args or []), *(["-p", str(port)] if port else []), "--", address]
    try:
        shown = subprocess.run(command, capture_output=True, text=True, timeout=SCAN_SECONDS,
                               stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    options: dict[str, str] = {}
    for line in shown.stdout.splitlines():
        key, _, value = line.partition(" ")
        options.setdefault(key.lower(), value)
    if shown.returncode != 0 or not options.get("port", "").isdigit():
        return None
    hostname = options.get("hostname", address)
    known = (options.get("userknownhostsfile") or "~/.ssh/known_hosts").split()[0]
    algorithms = tuple(options.get("hostkeyalgorithms", "").split(","))
    return Endpoint(hostname, int(options["port"]), known,
                    options.get("hostkeyalias") or hostname, algorithms)  # fmt: skip


def key_type_of(algorithm: str) -> str:
    """The plain key type a host key algorithm takes (rsa-sha2-512 signs with an ssh-rsa
    key); "" for a certificate's (ssh-keyscan reads plain keys)."""
    if "-cert-" in algorithm:
        return ""
    return "ssh-rsa" if algorithm.startswith("rsa-sha2-") else algorithm


def scan(endpoint: Endpoint, key_type: str = "") -> tuple[str, str, str] | None:
    """The key the host offers now that ssh would check first (of ssh's key type, ED25519 ...,
    where ssh named it): (its type, `<known_hosts name> <type> <base64>` as ssh records it,
    its fingerprint); None where none can be read."""
    wanted = ["-t", _KEYSCAN_TYPES[key_type.upper()]] if key_type.upper() in _KEYSCAN_TYPES else []
    command = ["ssh-keyscan", "-T", "5", "-p", str(endpoint.port), *wanted, endpoint.host]
    try:
        shown = subprocess.run(command, capture_output=True, text=True, timeout=SCAN_SECONDS,
                               stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    offered: dict[str, tuple[str, str, str]] = {}
    for line in shown.stdout.splitlines():
        match = _KEY_LINE.match(line.strip())
        if not match:
            continue
        try:
            blob = base64.b64decode(match.group(3), validate=True)
        except (binascii.Error, ValueError):
            continue
        kind = match.group(2)
        offered.setdefault(kind, (kind, f"{endpoint.name} {kind} {match.group(3)}",
                                  fingerprint(blob)))  # fmt: skip
    preferred = [key_type_of(a) for a in endpoint.algorithms if key_type_of(a) in offered]
    return offered[preferred[0]] if preferred else next(iter(offered.values()), None)


def recorded(endpoint: Endpoint) -> bool:
    """Whether the user's known_hosts has a key for the host (`ssh-keygen -F`, hashed names
    included): ssh refusing the host then means its key changed."""
    known = os.path.expanduser(endpoint.known_hosts)
    try:
        shown = subprocess.run(["ssh-keygen", "-F", endpoint.name, "-f", known],
                               capture_output=True, text=True, timeout=SCAN_SECONDS,
                               stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return shown.returncode == 0 and bool(shown.stdout.strip())


def _path(path: str) -> str:
    """A path for the shell: quoted, a leading ~/ left for the shell to expand."""
    return "~/" + shlex.quote(path[2:]) if path.startswith("~/") else shlex.quote(path)


def remedy(endpoint: Endpoint | None, message: str, then: str) -> str | None:
    """What to do about the refused key: the fingerprint the host offers, where to compare it,
    and the command that records exactly that key; `then` is the command to run after. None
    where the endpoint is not known."""
    if endpoint is None:
        return None
    named = _CHANGED.search(message) or _UNKNOWN.search(message)
    scanned = scan(endpoint, named.group(1) if named else "")
    name = shlex.quote(endpoint.name)
    if scanned is None:
        look = shlex.join(["ssh-keyscan", "-p", str(endpoint.port), endpoint.host])
        return (f"the host key of {endpoint.name} could not be read from here; see it with "
                f"`{look} | ssh-keygen -lf -` and compare it with the host's own (on the host: "
                f"`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`); then {then}")  # fmt: skip
    kind, line, seen = scanned
    short = kind.removeprefix("ssh-").split("-")[0]  # ed25519, ecdsa, rsa
    on_host = f"ssh-keygen -lf /etc/ssh/ssh_host_{short}_key.pub"
    record = f"printf '%s\\n' {shlex.quote(line)} >> {_path(endpoint.known_hosts)}"
    changed = _CHANGED.search(message)
    if changed and changed.group(2) != seen:
        return (f"the host key of {endpoint.name} CHANGED: ssh was offered {changed.group(2)}, "
                f"and {seen} when read again from here: something between you and the host "
                "answers; record neither before you know why")  # fmt: skip
    if changed or recorded(endpoint):
        known = _path(endpoint.known_hosts)
        return (f"the host key of {endpoint.name} CHANGED: it offers {kind} {seen}, and "
                f"{endpoint.known_hosts} holds another (`ssh-keygen -F {name} -f {known}` shows "
                f"it). Only if the host was reinstalled or rekeyed for a reason you know and "
                f"{seen} is what the host itself shows (on the host: `{on_host}`), replace it: "
                f"`ssh-keygen -R {name} -f {known} && {record}`; then {then}")  # fmt: skip
    return (f"the host key of {endpoint.name} is not in {endpoint.known_hosts}: it offers "
            f"{kind} {seen}. Only if that is what the host itself shows (on the host: "
            f"`{on_host}`), record it: `{record}`; then {then}")  # fmt: skip
