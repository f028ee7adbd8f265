"""This jetson-env as installed: the docs it carries, and the pip lines that work for it.

jetson-env is on no package index: a line that names it must name where it came from (the
checkout, or the folder or wheel pip recorded in direct_url.json, PEP 610).
"""

from __future__ import annotations

import json
import shlex
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
