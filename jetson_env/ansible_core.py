"""Which ansible-core manages which target Python: the matrix's `ansible_core` block.

ansible-core runs its modules in the target's Python, and each release line supports targets
from some Python on (ansible-core's support matrix): JetPack 4's Python 3.6 is managed by 2.16
alone, JetPack 5's 3.8 by 2.16 to 2.19, 3.9 and newer by the newest. The playbook's preflight
(filter `jetson_env.jetson.ansible_core_refusal`), `doctor -i`, `plan -i`, `doctor --fix -i`
and the bundle's controller/ wheels all ask this module, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from jetson_env import installed

LINE = re.compile(r"^\d+\.\d+$")
RANGE = re.compile(r"^(\d+\.\d+)-(\d+\.\d+)$")
# What a host may say its Python's version is: ASCII digits, and short (a version string of
# 100,000 digits is no version, and int() refuses it past 4,300).
PYTHON_VERSION = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?([A-Za-z0-9.+]{0,32})")
SHOWN = 80  # characters of an unreadable version quoted back


def _line(version: str) -> Version:
    """'2.19.14' -> Version('2.19'); '3.8.18' -> Version('3.8')."""
    parsed = Version(str(version))
    return Version(f"{parsed.major}.{parsed.minor}")


def readable(python_version: object) -> bool:
    """Whether a Python version a host reported is one (`3.8.18`, `3.14.0rc1`): anything else
    (several lines, escape sequences, other digits than ASCII, a number of 100,000 digits) is
    that host's to explain, never parsed."""
    text = python_version if isinstance(python_version, str) else ""
    if not PYTHON_VERSION.fullmatch(text):
        return False
    try:
        Version(text)
    except ValueError:
        return False
    return True


def shown(said: object) -> str:
    """What a host said, for a message: escaped (ascii()), and cut."""
    text = str(said)
    return ascii(text[:SHOWN]) + (f" (cut at {SHOWN} of {len(text)} characters)"
                                  if len(text) > SHOWN else "")  # fmt: skip


@dataclass(frozen=True)
class Line:
    """An ansible-core release line: the oldest target Python it runs modules with, and the
    controller Pythons it runs on (first, last)."""

    name: str  # "2.19"
    oldest_target: Version
    controller: tuple[str, str]


@dataclass(frozen=True)
class Support:
    lines: tuple[Line, ...]  # oldest line first
    source: str  # the support matrix's URL

    def oldest_target(self, core_version: str) -> Version:
        """The oldest target Python `core_version` manages; a line newer than the table's
        newest is taken to manage what the newest does."""
        wanted = _line(core_version)
        known = [line for line in self.lines if Version(line.name) <= wanted]
        return (known[-1] if known else self.lines[0]).oldest_target

    def manages(self, core_version: str, python_version: str) -> bool:
        return _line(python_version) >= self.oldest_target(core_version)

    def newest_line_for(self, python_version: str) -> Line | None:
        """The newest line that manages `python_version`; None when the newest line does
        (no upper bound needed) or none does."""
        python = _line(python_version)
        managing = [line for line in self.lines if python >= line.oldest_target]
        if not managing or managing[-1] is self.lines[-1]:
            return None
        return managing[-1]

    def requirement(self, python_versions: Iterable[str]) -> str | None:
        """The pip requirement for an ansible-core that manages every one of these target
        Pythons (the oldest decides): 'ansible-core<2.20' for 3.8; None when the newest
        does, or when no line manages the oldest (unsupported() says so)."""
        pythons = [v for v in python_versions if v and readable(v)]
        if not pythons:
            return None
        oldest = min(pythons, key=_line)
        line = self.newest_line_for(oldest)
        if line is None:
            return None
        after = self.lines[self.lines.index(line) + 1]
        return f"ansible-core<{after.name}"

    def unsupported(self, python_version: str) -> bool:
        """A target Python no line of the table manages (older than the oldest line's)."""
        return _line(python_version) < self.lines[0].oldest_target

    def refusal(self, core_version: str, python_version: str, host: str = "the host") -> str:
        """Why ansible-core `core_version` cannot manage `host` whose modules run in Python
        `python_version`, with the way out; "" when it can."""
        if not python_version:
            return ""
        if not readable(python_version):
            return (
                f"{host} runs Ansible's modules with a Python that says its version is"
                f" {shown(python_version)}, which is no Python version: jetson-env cannot tell"
                f" whether ansible-core {core_version} manages it. Set ansible_python_interpreter"
                f" for {host} in the inventory to a Python 3.6 or newer."
            )
        if self.manages(core_version, python_version):
            return ""
        python = _line(python_version)
        oldest = self.oldest_target(core_version)
        said = (
            f"{host} runs Ansible's modules with Python {python_version} and ansible-core"
            f" {core_version} (this controller's) supports Python {oldest} and newer on targets"
            f" ({self.source})."
        )
        if self.unsupported(python_version):
            return f"{said} No ansible-core that jetson-env supports manages Python {python}."
        line = self.newest_line_for(python_version)
        requirement = self.requirement([python_version])
        first, last = line.controller
        return (
            f"{said} Python {python} targets need ansible-core {line.name} or older: run"
            f" jetson-env for them from a second controller venv, of a Python {first} to {last}:"
            f" `python3 -m venv ~/jetson-env-py{python.major}{python.minor} &&"
            f" ~/jetson-env-py{python.major}{python.minor}/bin/pip install"
            f" {installed.requirement()} '{requirement}'`."
        )


def parse(section: Any, check_sources: Callable[[str, dict[str, Any]], tuple[str, ...]],
          source_url: Callable[[str], str]) -> Support:  # fmt: skip
    """The matrix's `ansible_core` block, validated; ValueError names what is wrong."""
    (cited, *_rest) = check_sources("ansible_core", section)
    table = section.get("lines")
    if not isinstance(table, dict) or not table:
        raise ValueError("ansible_core: 'lines' must map release lines to their Pythons")
    lines = []
    for name, entry in table.items():
        name = str(name)
        target = str((entry or {}).get("oldest_target_python", ""))
        controller = RANGE.match(str((entry or {}).get("controller_python", "")))
        if not LINE.match(name) or not LINE.match(target) or controller is None:
            raise ValueError(
                f"ansible_core: line {name!r} needs oldest_target_python like '3.8' and"
                " controller_python like '3.11-3.13'"
            )
        lines.append(Line(name, Version(target), (controller[1], controller[2])))
    lines.sort(key=lambda line: Version(line.name))
    targets = [line.oldest_target for line in lines]
    if targets != sorted(targets):
        raise ValueError("ansible_core: a newer line cannot manage an older Python than an older")
    return Support(tuple(lines), source_url(cited))
