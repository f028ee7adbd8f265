"""Which wheels another machine can install: its platform tags, for `pip download --platform`.

pip matches `--platform` tags exactly: asking for `manylinux_2_36_x86_64` does not admit
a `manylinux_2_28_x86_64` wheel. Fetching for a target on the controller therefore
names every tag the target's glibc accepts, the way pip on the target would.
"""

from __future__ import annotations

import re

# Oldest glibc of a manylinux tag per architecture (PEP 600; packaging.tags does the same).
OLDEST_GLIBC_MINOR = {"x86_64": 5, "i686": 5}
DEFAULT_OLDEST_GLIBC_MINOR = 17
# PEP 513/571/599 names of glibc 2.5, 2.12 and 2.17.
LEGACY_MANYLINUX = {5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}
GLIBC = re.compile(r"^2\.(\d+)$")


def platform_tags(machine: str, glibc: str | None) -> list[str]:
    """Platform tags a Linux `machine` with `glibc` ("2.36"; None: not glibc) accepts,
    most specific first, as pip on that machine would try them."""
    tags = []
    match = GLIBC.match(glibc or "")
    if match:
        oldest = OLDEST_GLIBC_MINOR.get(machine, DEFAULT_OLDEST_GLIBC_MINOR)
        for minor in range(int(match.group(1)), oldest - 1, -1):
            tags.append(f"manylinux_2_{minor}_{machine}")
            legacy = LEGACY_MANYLINUX.get(minor)
            if legacy:
                tags.append(f"{legacy}_{machine}")
    tags.append(f"linux_{machine}")
    return tags


def cpython_abi(python: str) -> str:
    """CPython's ABI tag for `python` ("3.6"): cp36m below 3.8, whose default build added the
    pymalloc flag `m` (PEP 3149; 3.8 dropped it), so JetPack 4's numpy is cp36-cp36m."""
    major, minor = (int(part) for part in python.split(".")[:2])
    return f"cp{major}{minor}" + ("m" if (major, minor) < (3, 8) else "")


def pip_platform_args(machine: str, glibc: str | None) -> list[str]:
    """`--platform TAG` for each of those tags."""
    return [arg for tag in platform_tags(machine, glibc) for arg in ("--platform", tag)]


def glibc_accepts(host_glibc: str, built_for: str) -> bool:
    """Whether a host with `host_glibc` installs what was chosen for `built_for` (wheels of
    manylinux tags up to it): the one rule of the bundle's preflight and doctor --bundle.
    An unknown host glibc ("") is not refused here: pip on the host is the last word."""
    if not host_glibc:
        return True
    return _version(built_for) <= _version(host_glibc)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())
