"""The two ends of the Ansible range the playbook supports, each in a venv of its own.

newest: PyPI's newest `ansible` (so the newest ansible-core) for the newest Python on
        the machine, what `pip install` gives a user today;
oldest: ansible 9 = ansible-core 2.16, the last that drives JetPack 4's Python 3.6.
Beside them, for JetPack 5's Python 3.8 (which the newest no longer drives): JETPACK5, the
ansible-core jetson-env prescribes for it (the matrix's ansible_core table), and CONTROLLER,
a controller on the newest Python as a user installs it (jetson-env's dependencies, the newest
ansible-core), to run jetson-env itself there.
Both are PyPI's `ansible` package because it carries the collections the tests use
(community.docker's connection, ansible.posix's json callback); the playbook itself
needs only ansible-core. A venv is cached under ~/.cache/jetson-env/ansible/ keyed by its
Python, its requirement and, for `newest`, the ISO week, so new releases are picked up and a
fresh clone of the checkout (CI's) reuses what an earlier one installed (300 MB each); a new
venv removes those of its end unused for a week.
"""

import datetime
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from support.compile_ahead import venv_command
from support.hosts import CACHE, _file_lock, _run_logged, runtime_dependencies, short_hash
from support.pythons import PYENV_ROOT

VENVS = CACHE / "ansible"
LOG = VENVS / "install.log"
UNUSED_S = 7 * 24 * 3600
# ansible-core 2.20 and newer need Python 3.12+ on the controller.
NEWEST_PYTHON_MIN = (3, 12)


def _python_version(python: str) -> tuple[int, int]:
    out = subprocess.run(
        [python, "-c", "import sys; print('%d %d' % sys.version_info[:2])"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout  # fmt: skip
    major, minor = out.split()
    return int(major), int(minor)


def newest_python() -> str:
    """The newest CPython on this machine: pyenv's builds or the one running the tests."""
    candidates = [sys.executable]
    candidates += sorted(str(p) for p in PYENV_ROOT.glob("versions/3.*/bin/python3"))
    found = {_python_version(python): python for python in candidates}
    return found[max(found)]


@dataclass(frozen=True)
class AnsibleEnd:
    name: str
    requirement: str
    extra: tuple[str, ...] = ()  # more requirements installed with it
    newest: bool = False  # the newest Python and this week's releases, else the tests' Python

    @cached_property
    def python(self) -> str:
        return newest_python() if self.newest else sys.executable

    @cached_property
    def venv(self) -> Path:
        week = datetime.date.today().isocalendar()[:2] if self.newest else ""
        # The interpreter itself, not the checkout's venv that links to it.
        version = ".".join(map(str, _python_version(self.python)))
        key = short_hash(os.path.realpath(self.python), version, self.requirement, str(week),
                         *self.extra)  # fmt: skip
        return VENVS / f"{self.name}-{key}"

    def bin(self, tool: str) -> Path:
        return self.venv / "bin" / tool

    def ensure(self) -> "AnsibleEnd":
        """Create the venv once (concurrent sessions wait for one install); a stamp file
        marks a finished install, so an interrupted one is redone."""
        stamp = self.venv / ".installed"
        if not stamp.exists():
            with _file_lock(self.venv.name):
                if not stamp.exists():
                    self._remove_unused()
                    _run_logged([self.python, "-m", "venv", "--clear", self.venv], LOG)
                    # Compiled without the collections the tests do not load (compile_ahead).
                    _run_logged([self.bin("pip"), "install", "--quiet", "--no-compile",
                                 self.requirement, *self.extra], LOG)  # fmt: skip
                    _run_logged(venv_command(self.venv), LOG)
                    stamp.write_text(self.requirement + "\n")
        stamp.touch()  # used now: kept another week
        return self

    def _remove_unused(self) -> None:
        for old in VENVS.glob(f"{self.name}-*/.installed"):
            if time.time() - old.stat().st_mtime > UNUSED_S:
                shutil.rmtree(old.parent, ignore_errors=True)

    @cached_property
    def versions(self) -> str:
        """What the venv runs, e.g. 'ansible 9.13.0, ansible_core 2.16.19, Python 3.11': the
        same on every machine that installed the same releases (the slow tier's keys)."""
        installed = sorted(
            path.name.removesuffix(".dist-info").replace("-", " ")
            for path in self.venv.glob("lib/python*/site-packages/ansible*.dist-info")
        )
        python = ".".join(map(str, _python_version(self.python)))
        return ", ".join([*installed, f"Python {python}"])


# What the collection's plugins import of jetson-env's dependencies beyond ansible-core's own
# (PyYAML, packaging): a bundle manifest's schema check. A user's `pip install jetson-env`
# brings it into Ansible's Python.
PLUGIN_DEPENDENCIES = tuple(d for d in runtime_dependencies() if d.startswith("fastjsonschema"))
ANSIBLE_ENDS = {
    "newest": AnsibleEnd("newest", "ansible", PLUGIN_DEPENDENCIES, newest=True),
    "oldest": AnsibleEnd("oldest", "ansible>=9,<10", PLUGIN_DEPENDENCIES),
}
# What jetson-env prescribes for Python 3.8 targets, written out (the tests check the product's
# message against it): the ansible-core line of JetPack 5 ends with 2.19.
JETPACK5 = AnsibleEnd("jetpack5", "ansible", ("ansible-core<2.20", *PLUGIN_DEPENDENCIES))
CONTROLLER = AnsibleEnd("controller", "ansible", tuple(runtime_dependencies()), newest=True)
