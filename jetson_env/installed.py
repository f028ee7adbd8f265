"""This jetson-env as installed: the docs it carries, the pip lines that work for it, and
every command line it prints for the user (command()).

jetson-env is on no package index: a line that names it must name where it came from (the
checkout, or the folder or wheel pip recorded in direct_url.json, PEP 610). README's first
line leaves it in a venv that is not on PATH: a printed `jetson-env ...` or `ansible ...`
must name the program as this process runs it, or the pasted line is "command not found".
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from packaging.requirements import Requirement

PACKAGE = Path(__file__).resolve().parent
DOCS = PACKAGE / "docs"  # docs/ of the checkout, shipped in the wheel (pyproject's package-data)
DISTRIBUTION = "jetson-env"


def doc(name: str) -> Path:
    """docs/NAME of the project, where this jetson-env has it."""
    return DOCS / name


def command(line: str) -> str:
    """`line`, a command as a user types it (`jetson-env doctor --fix torch`, `ansible HOST
    -m ansible.builtin.ping`; its arguments already quoted), with its program named as this
    process runs it: the bare name where the shell's PATH finds that very program, else its
    full path (this jetson-env's console script; Ansible's of this environment, else PATH's).
    Every hint, remedy and plan step that names jetson-env or Ansible goes through here."""
    name, _, rest = line.partition(" ")
    return f"{_program(name)} {rest}".rstrip()


def program(name: str) -> str | None:
    """The program `name` of this interpreter's environment (jetson-env's console script,
    Ansible's of the provision extra), else PATH's; None where there is neither."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def _program(name: str) -> str:
    """`name` as a shell word that starts, from any folder, the program this process means."""
    if name == DISTRIBUTION:
        running = Path(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else None
        if running is not None and running.name == name and os.access(running, os.X_OK):
            found = str(running)
        else:  # `python -m jetson_env.cli`: the console script of this environment, if any
            found = program(name)
        if found is None:
            return shlex.join([sys.executable, "-m", "jetson_env.cli"])
    else:
        found = program(name)
        if found is None:  # not installed: the name, as the install hint beside it says
            return name
    on_path = shutil.which(name)
    try:
        if on_path is not None and os.path.samefile(on_path, found):
            return name
    except OSError:
        pass
    return shlex.quote(found)


def install_line(*args: str) -> str:
    """`pip install ARGS` with the pip of jetson-env's own environment, from any folder."""
    return shlex.join([sys.executable, "-m", "pip", "install", *args])


def extra_line(extra: str = "provision") -> str:
    """The command that adds `extra`'s requirements to jetson-env's own environment, from any
    folder: what `pip install 'jetson-env[EXTRA]'` would add, read from the metadata."""
    from importlib import metadata  # slow to import (0.1 s): only where it is read

    needs = []
    for line in metadata.requires(DISTRIBUTION) or ():
        needed = Requirement(line)
        if needed.marker and needed.marker.evaluate({"extra": extra}):
            needed.marker = None
            needs.append(str(needed))
    return install_line(*needs)


def requirement(extra: str | None = "provision") -> str:
    """jetson-env (with `extra`) as pip takes it here, quoted for a shell: from the checkout it
    runs from, or from the folder or wheel pip installed it from while that is still there; by
    name where pip got it from an index or a wheel folder (no direct_url.json); else '.[EXTRA]',
    for a jetson-env checkout."""
    extras = f"[{extra}]" if extra else ""
    if (PACKAGE.parent / "pyproject.toml").is_file():  # a checkout, or its editable install
        return shlex.quote(f"{PACKAGE.parent}{extras}")
    from importlib import metadata  # slow to import (0.1 s): only where it is read

    try:
        recorded = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        recorded = None
    if not recorded:
        return shlex.quote(f"{DISTRIBUTION}{extras}")
    url = urlparse(json.loads(recorded).get("url", ""))
    where = Path(unquote(url.path))
    if url.scheme == "file" and where.exists():
        return shlex.quote(f"{where}{extras}")
    return shlex.quote(f".{extras}")
