"""Which ansible-core manages which target Python: the matrix's `ansible_core` block.

ansible-core runs its modules in the target's Python, and each release line supports a range of
target Pythons and of controller Pythons (ansible-core's support matrix): JetPack 4's Python 3.6
is managed by 2.16 alone (targets up to 3.12, controllers 3.10 to 3.12), JetPack 5's 3.8 by 2.16
to 2.19, Ubuntu 26.04's 3.14 by 2.20 and newer only: a fleet of both needs two controller venvs.
The playbook's preflight (filter `jetson_env.jetson.ansible_core_refusal`), `doctor -i`,
`plan -i`, `doctor --fix -i` and the bundle (its controller/ wheels, and the check before it
fetches) all ask this module, so they cannot disagree.
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
    """An ansible-core release line: the oldest and newest target Python it runs modules with,
    and the controller Pythons it runs on (first, last)."""

    name: str  # "2.19"
    oldest_target: Version
    controller: tuple[str, str]
    newest_target: Version | None = None  # None: no upper bound known

    def manages(self, python: Version) -> bool:
        return python >= self.oldest_target and (
            self.newest_target is None or python <= self.newest_target
        )

    def runs_on(self, controller_python: str) -> bool:
        first, last = (Version(v) for v in self.controller)
        return first <= _line(controller_python) <= last

    def targets(self) -> str:
        newest = f"to {self.newest_target}" if self.newest_target else "and newer"
        return f"{self.name} manages target Python {self.oldest_target} {newest}"


@dataclass(frozen=True)
class Support:
    lines: tuple[Line, ...]  # oldest line first
    source: str  # the support matrix's URL

    def line_of(self, core_version: str) -> Line:
        """The table's line of `core_version`; a line newer than the table's newest is taken to
        manage what the newest does."""
        wanted = _line(core_version)
        known = [line for line in self.lines if Version(line.name) <= wanted]
        return known[-1] if known else self.lines[0]

    def oldest_target(self, core_version: str) -> Version:
        """The oldest target Python `core_version` manages."""
        return self.line_of(core_version).oldest_target

    def manages(self, core_version: str, python_version: str) -> bool:
        """Whether `core_version` runs modules with `python_version` (2.16 manages 3.6 to 3.12,
        not Ubuntu 26.04's 3.14)."""
        return self.line_of(core_version).manages(_line(python_version))

    def newest_managing(self, python_versions: Iterable[str]) -> Line | None:
        """The newest line that manages every one of these Pythons, or None: JetPack 4's 3.6
        and Ubuntu 26.04's 3.14 have no line in common."""
        pythons = [_line(v) for v in python_versions if v and readable(v)]
        managing = [line for line in self.lines if all(line.manages(p) for p in pythons)]
        return managing[-1] if managing else None

    def newest_line_for(self, python_version: str) -> Line | None:
        """The newest line that manages `python_version`; None when the newest line does
        (no upper bound needed) or none does."""
        line = self.newest_managing([python_version])
        return None if line is None or line is self.lines[-1] else line

    def requirement(self, python_versions: Iterable[str]) -> str | None:
        """The pip requirement for an ansible-core that manages every one of these target
        Pythons: 'ansible-core<2.20' for 3.8; None when the newest does, or when no line
        manages them all (split() says so)."""
        line = self.newest_managing(python_versions)
        if line is None or line is self.lines[-1]:
            return None
        after = self.lines[self.lines.index(line) + 1]
        return f"ansible-core<{after.name}"

    def split(self, python_versions: Iterable[str], controller_python: str | None = None) -> str:
        """Why one controller cannot manage targets of all these Pythons, with the controller
        venvs that do, or "": no line manages them all (JetPack 4/5 with Ubuntu 26.04), or
        none of the lines that do runs on `controller_python` (2.16, for JetPack 4, on a
        Python 3.14 controller; 3.11 targets on a 3.11 controller have 2.16 to 2.19)."""
        pythons = sorted({_line(v) for v in python_versions if v and readable(v)})
        if not pythons or any(self.unsupported(str(p)) for p in pythons):
            return ""  # refusal() names a target no line manages
        line = self.newest_managing(map(str, pythons))
        if line is not None:
            fitting = [
                ln for ln in self.lines if all(ln.manages(p) for p in pythons)
                and (not controller_python or ln.runs_on(controller_python))
            ]  # fmt: skip
            if not fitting:
                first, last = line.controller
                return (
                    f"ansible-core {line.name}, the line that manages target Python"
                    f" {', '.join(map(str, pythons))}, runs on a controller Python {first} to"
                    f" {last}, not {_line(controller_python)} ({self.source}): give"
                    f" --controller-python {last} (from a controller venv of that Python)."
                )
            return ""
        groups: list[tuple[Line, list[Version]]] = []
        for python in pythons:
            if groups and groups[-1][0].manages(python):
                groups[-1][1].append(python)
                continue
            rest = [p for p in pythons if p >= python]
            newest = [ln for ln in self.lines if ln.manages(python)]
            best = max(newest, key=lambda ln: (sum(ln.manages(p) for p in rest), ln.name))
            groups.append((best, [python]))
        venvs = []
        for line, group in groups:
            first, last = line.controller
            named = "/".join(f"{p.major}{p.minor}" for p in group)
            pin = self.requirement(map(str, group))
            venvs.append(
                f"for Python {', '.join(map(str, group))} targets, a venv of a Python {first} to"
                f" {last}: `python3 -m venv ~/jetson-env-py{named.replace('/', '-')} &&"
                f" ~/jetson-env-py{named.replace('/', '-')}/bin/pip install"
                f" {installed.requirement()}{f' {pin!r}' if pin else ''}`"
            )
        return (
            f"No ansible-core line manages target Python {', '.join(map(str, pythons))} at once"
            f" ({'; '.join(ln.targets() for ln, _ in groups)}; {self.source}): run jetson-env"
            f" from {len(groups)} controller venvs, {'; '.join(venvs)}."
        )

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
        mine = self.line_of(core_version)
        newest = f" to {mine.newest_target}" if mine.newest_target else " and newer"
        said = (
            f"{host} runs Ansible's modules with Python {python_version} and ansible-core"
            f" {core_version} (this controller's) supports Python {mine.oldest_target}{newest}"
            f" on targets ({self.source})."
        )
        if self.unsupported(python_version):
            return f"{said} No ansible-core that jetson-env supports manages Python {python}."
        line = self.newest_line_for(python_version)
        if line is None:  # newer than this line manages: the newest line does
            line = self.lines[-1]
            first, last = line.controller
            return (
                f"{said} Python {python} targets need ansible-core {line.name}: run jetson-env"
                f" for them from a second controller venv, of a Python {first} to {last}:"
                f" `python3 -m venv ~/jetson-env-py{python.major}{python.minor} &&"
                f" ~/jetson-env-py{python.major}{python.minor}/bin/pip install"
                f" {installed.requirement()}`."
            )
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
        newest = str((entry or {}).get("newest_target_python", ""))
        controller = RANGE.match(str((entry or {}).get("controller_python", "")))
        if (
            not LINE.match(name)
            or not LINE.match(target)
            or not LINE.match(newest)
            or controller is None
        ):
            raise ValueError(
                f"ansible_core: line {name!r} needs oldest_target_python and newest_target_python"
                " like '3.8' and controller_python like '3.11-3.13'"
            )
        lines.append(Line(name, Version(target), (controller[1], controller[2]), Version(newest)))
    lines.sort(key=lambda line: Version(line.name))
    targets = [line.oldest_target for line in lines]
    if targets != sorted(targets):
        raise ValueError("ansible_core: a newer line cannot manage an older Python than an older")
    return Support(tuple(lines), source_url(cited))
