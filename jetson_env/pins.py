"""An exact pin and the release a user has: what a fix may move.

The matrix pins numpy exactly on some rows (numpy==1.26.1 on JetPack 6: NVIDIA's torch
wheels are built against numpy 1.x). That pin is what a Python without numpy gets; a numpy
the user already has is theirs to keep while it is of the pin's major release (numpy's ABI
changes between majors, 1.x -> 2.x, not within one). A range (numpy>=1.26,<3) goes to pip as
it is: pip keeps an installed release inside it and moves one outside it.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version


def exact_pin(requirement: str) -> Version | None:
    """The release of an exact pin (`name==X.Y.Z`), None for anything else."""
    try:
        specifiers = list(Requirement(requirement).specifier)
        if len(specifiers) != 1 or specifiers[0].operator not in ("==", "==="):
            return None
        if specifiers[0].version.endswith("*"):
            return None
        return Version(specifiers[0].version)
    except (InvalidRequirement, InvalidVersion):
        return None


def requirement_for(requirement: str, installed: str | None, move: bool = False) -> str:
    """`requirement` as pip is to get it, or "" where the installed release is kept: an exact
    pin (`name==X.Y.Z`) with an installed release of the same major, unless `move` (a fix for
    this package itself, or the user's own pin)."""
    if move or not installed:
        return requirement
    pinned = exact_pin(requirement)
    try:
        have = Version(installed)
    except InvalidVersion:
        return requirement
    if pinned is None:
        return requirement
    return "" if have.major == pinned.major else requirement
