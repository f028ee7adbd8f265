"""Whether a set pip resolved on the controller fits its target, in `packaging`'s terms.

pip resolves a target's set on the controller (`--python-version`, `--platform`), and how
faithfully depends on its release: pip 23.2 checks Requires-Python against the Python it
runs in, not the target's (it put termcolor 3.3.0, Requires-Python >=3.10, in a set for 3.8,
and held a 3.12 controller at ansible-core 2.19), and every pip evaluates environment markers
for its own interpreter. So every set is judged here, whatever pip did: each wheel's
Requires-Python (its METADATA, as pip's report carries it) against the target's Python, its
tags (packaging.utils.parse_wheel_filename) against those the target accepts
(packaging.tags), and each Requires-Dist whose markers hold on the target met in the set.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from jetson_env import wheels


@dataclass
class Verdict:
    """What does not fit: versions to leave out (`name<version`'s series, the next round),
    requirements the set misses (to add), and the reasons, one line each."""

    too_new: dict[str, str] = field(default_factory=dict)  # name -> a version that does not fit
    missing: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.reasons


def accepted_tags(python: str, machine: str, glibc: str | None) -> set[Tag]:
    """Every wheel tag CPython `python` ("3.8") on a Linux `machine` with `glibc` installs."""
    version = tuple(int(part) for part in python.split(".")[:2])
    platforms = wheels.platform_tags(machine, glibc)
    abi = wheels.cpython_abi(python)
    return {*cpython_tags(version, [abi, "abi3", "none"], platforms),
            *compatible_tags(version, abi, platforms)}  # fmt: skip


def environment(python: str, machine: str) -> dict[str, str]:
    """Marker variables of the target (PEP 508), for markers pip evaluated for the controller."""
    env = default_environment()
    env.update(python_version=".".join(python.split(".")[:2]), python_full_version=f"{python}.0"
               if python.count(".") == 1 else python, platform_machine=machine,
               sys_platform="linux", platform_system="Linux", os_name="posix",
               implementation_name="cpython", platform_python_implementation="CPython")  # fmt: skip
    return env


def judge(items: Iterable[dict[str, Any]], python: str, machine: str, glibc: str | None,
          with_dependencies: bool = True) -> Verdict:  # fmt: skip
    """Judge pip's report items (`install` of `pip install --report`) for a target; without
    `with_dependencies` (a --no-deps set) their Requires-Dist is not asked for."""
    verdict = Verdict()
    items = list(items)
    tags = accepted_tags(python, machine, glibc)
    target_python = Version(environment(python, machine)["python_full_version"])
    have = {canonicalize_name(i["metadata"]["name"]): Version(i["metadata"]["version"])
            for i in items}  # fmt: skip
    env = environment(python, machine)
    for item in items:
        meta = item["metadata"]
        name, version = meta["name"], meta["version"]
        try:
            requires_python = SpecifierSet(meta.get("requires_python") or "")
        except InvalidSpecifier:
            requires_python = SpecifierSet()
        if target_python not in requires_python:
            verdict.too_new[name] = version
            verdict.reasons.append(f"{name} {version} requires Python {requires_python},"
                                   f" the target has {python}")  # fmt: skip
        url = urllib.parse.urlsplit(item["download_info"]["url"]).path
        filename = urllib.parse.unquote(url).rsplit("/", 1)[-1]
        if filename.endswith(".whl"):
            try:
                wheel_tags = parse_wheel_filename(filename)[3]
            except InvalidWheelFilename:
                wheel_tags = frozenset()
            if not wheel_tags & tags:
                verdict.too_new.setdefault(name, version)
                verdict.reasons.append(f"{filename}'s tags are not installable by Python {python}"
                                       f" on {machine} with glibc {glibc}")  # fmt: skip
        extras = item.get("requested_extras") or [""]
        for text in (meta.get("requires_dist") or []) if with_dependencies else []:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            marker = requirement.marker
            if marker and not any(marker.evaluate({**env, "extra": e}) for e in extras):
                continue
            found = have.get(canonicalize_name(requirement.name))
            if found is None:
                verdict.missing.append(str(requirement).split(";")[0].strip())
                verdict.reasons.append(f"{name} {version} requires {requirement.name} on the"
                                       " target, which pip left out (a marker it evaluated for"
                                       " the controller)")  # fmt: skip
    return verdict
