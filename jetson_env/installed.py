"""This jetson-env as installed: the docs it carries, the pip lines that work for it, and
every command line it prints for the user (command()); and what runs (--version).

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
from typing import Any
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


VERSION_SCHEMA = 1


def _distribution(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _collection_version() -> str | None:
    """galaxy.yml's version of the collection this jetson-env carries."""
    from jetson_env import collection, yaml_files

    try:
        return str(yaml_files.safe_load((collection.PATH / "galaxy.yml").read_text())["version"])
    except (OSError, KeyError, TypeError):
        return None


def version_facts() -> dict[str, Any]:
    """`jetson-env --version`: what runs, as a bug report needs it (docs/version.schema.json);
    a part that is missing is null. ansible-core: this environment's (what provision runs),
    else the ansible-playbook on PATH it would run, else how to get it."""
    import platform

    from jetson_env import collection
    from jetson_env.matrix import MatrixError, load

    try:
        checked, matrix_error = load().raw["checked"], None
    except MatrixError as exc:
        checked, matrix_error = None, str(exc)
    core = _distribution("ansible-core")
    playbook = program("ansible-playbook")
    return {
        "schema": VERSION_SCHEMA,
        "jetson_env": _distribution(DISTRIBUTION),
        "installed_at": str(PACKAGE),
        "collection": {"name": collection.FQCN, "version": _collection_version()},
        "ansible_core": core,
        "ansible_playbook": playbook,
        "ansible_core_hint": None if core or playbook else collection.install_hint(),
        "matrix_checked": checked,
        "matrix_error": matrix_error,
        "python": {"version": platform.python_version(), "executable": sys.executable},
    }


def version_lines(data: dict[str, Any]) -> list[str]:
    """The text of --version: the first line as `prog --version` always says it."""
    unknown = "(version unknown)"
    playbook = data["ansible_playbook"]
    core = (
        f"{data['ansible_core']} ({playbook})" if data["ansible_core"]
        else f"of another environment: {playbook} (`{playbook} --version` says which)" if playbook
        else f"not installed ({data['ansible_core_hint']})"
    )  # fmt: skip
    matrix = (f"checked {data['matrix_checked']}" if data["matrix_checked"]
              else f"unreadable: {data['matrix_error']}")  # fmt: skip
    return [
        f"jetson-env {data['jetson_env'] or unknown} ({data['installed_at']})",
        f"collection {data['collection']['name']} {data['collection']['version'] or unknown}",
        f"ansible-core {core}",
        f"version matrix {matrix}",
        f"Python {data['python']['version']} ({data['python']['executable']})",
    ]


def show_version(as_json: bool) -> None:
    """--version's answer on stdout; `as_json`: one document."""
    data = version_facts()
    text = json.dumps(data, indent=2) if as_json else "\n".join(version_lines(data))
    sys.stdout.write(text + "\n")
