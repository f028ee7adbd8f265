"""--host's USER@HOST[:PORT], checked once for every use of it: the doctor's own SSH
(jetson_env.remote), --fix's ansible-playbook and the plan's printed commands. A host is an
IPv4 or IPv6 address (IPv6 in brackets) or a DNS name; nothing else reaches ssh."""

from __future__ import annotations

import contextlib
import ipaddress
import re
from dataclasses import dataclass

DEFAULT_PORT = 22
_HOST = re.compile(r"^(?:(?P<user>[^@]*)@)?(?P<host>\[[^\]]*\]|[^:\[\]]*)(?::(?P<port>\d+))?$")
_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
_UNPRINTABLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


class UsageError(ValueError):
    """--host, --identity or --password cannot be used as given (exit code 2)."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Address:
    user: str | None
    host: str
    port: int

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{user}{host}" + (f":{self.port}" if self.port != DEFAULT_PORT else "")

    @property
    def login(self) -> str:
        """What ssh takes: user@host, or host."""
        return f"{self.user}@{self.host}" if self.user else self.host


def parse_address(text: str) -> Address:
    """'user@host[:port]' -> Address; UsageError naming what is wrong otherwise."""
    form = f"--host {text!r} is not user@host[:port]"
    match = _HOST.match(text.strip())
    if not match:
        raise UsageError(form)
    user, host = match.group("user"), match.group("host")
    if user is not None and (not user or _UNPRINTABLE.search(user)):
        raise UsageError(f"{form}: the user name is empty or has blanks or control characters")
    port = int(match.group("port") or DEFAULT_PORT)
    if not 0 < port < 65536:
        raise UsageError(f"--host {text!r}: port {port} is out of range")
    return Address(user, _checked_host(host, form), port)


def _checked_host(host: str, form: str) -> str:
    if host.startswith("["):
        host = host[1:-1]
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise UsageError(f"{form}: [{host}] is not an IPv6 address") from None
    with contextlib.suppress(ValueError):
        return str(ipaddress.IPv4Address(host))
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if not host or len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise UsageError(
            f"{form}: {host!r} is not a host name (letters, digits and '-', labels of 1 to 63 "
            "characters between dots) or an IP address"
        )
    return host
