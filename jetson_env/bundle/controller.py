"""The controller in the bundle: the wheels that install jetson-env with its `provision`
extra (ansible-core and every dependency) on a machine with no network, for the
controller's Python (`--controller-python`), in `DIR/controller/`:

    pip install --no-index --find-links DIR/controller 'jetson-env[provision]'

jetson-env's own wheel is built from the checkout it runs from (pip wheel), or, installed
from a wheel (the README's `pip install .`, an index), made again from its installed files
(jetson_env/bundle/own_wheel.py): no index is asked for it. pip then resolves the extra for
that Python, this machine's architecture and glibc, like every other pip set of a bundle.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from jetson_env import collection, installed, matrix
from jetson_env.bundle import own_wheel
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.fetching import CACHE
from jetson_env.bundle.pip_resolution import RESOLVE_TIMEOUT_S, last_lines, resolve
from jetson_env.bundle.targets import BundleTarget, controller_glibc

FOLDER = "controller"
ROLE = "controller"
DISTRIBUTION = "jetson-env"
REPRODUCIBLE_EPOCH = "315532800"  # 1980-01-01, the oldest time a zip file holds


def install_line(directory: Path) -> str:
    return f"pip install --no-index --find-links {directory / FOLDER} '{DISTRIBUTION}[provision]'"


def target(python: str) -> BundleTarget:
    return BundleTarget(platform.machine(), python, controller_glibc())


def requirements(python: str, served: list[str] = ()) -> list[dict[str, str]]:
    """What pip installs for `jetson-env[provision]` on a controller with `python`: this
    jetson-env's wheel (kept in the cache by its sha256) and every dependency, with an
    ansible-core that manages every target Python of the bundle (`served`; the oldest
    decides: the matrix's ansible_core table)."""
    wheel = _own_wheel()
    wanted = [f"{DISTRIBUTION}[provision] @ {wheel.as_uri()}"]
    core = matrix.load().ansible_core.requirement(served)
    return resolve(target(python), wanted + ([core] if core else []))


def _own_wheel() -> Path:
    """This jetson-env as a wheel, in the controller's cache: built from the checkout it runs
    from (or its editable install's), else made again from its installed files."""
    root = collection.PACKAGE_ROOT
    with tempfile.TemporaryDirectory(prefix="jetson-env-controller-") as tmp:
        if (root / "pyproject.toml").is_file():  # a checkout (or an editable install)
            built = _built_from(root, Path(tmp))
        else:
            from importlib import metadata  # slow to import: only where it is read

            try:
                built = own_wheel.rebuild(metadata.distribution(DISTRIBUTION), Path(tmp))
            except own_wheel.NotRebuildable as exc:
                raise BundleError(
                    f"jetson-env's own wheel could not be made for the bundle: {exc}",
                    hint="reinstall jetson-env ("
                    f"{installed.install_line('--force-reinstall', installed.requirement(None))}"
                    "), or "
                    "leave it out with --no-controller where the controller has jetson-env",
                ) from None
        sha = hashlib.sha256(built.read_bytes()).hexdigest()
        kept = CACHE / "controller" / sha / built.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, kept)
    return kept


@contextlib.contextmanager
def one_build_of(source: Path) -> Iterator[None]:
    """setuptools builds a checkout in its build/ folder, and two builds at once remove each
    other's files there ("[Errno 2] No such file or directory"): one at a time, whichever
    process asks (two `jetson-env bundle` at once, a test's wheel), by an flock on the
    checkout's folder itself."""
    descriptor = os.open(source, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # and with it the lock


def _built_from(source: Path, folder: Path) -> Path:
    argv = ["wheel", "--no-deps", "--wheel-dir", str(folder), str(source)]
    with one_build_of(source):
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *argv],
            # One wheel for one source: zip timestamps fixed, so running the command again
            # adds nothing instead of meeting "another sha256" for the same file name.
            env={**os.environ, "SOURCE_DATE_EPOCH": REPRODUCIBLE_EPOCH},
            capture_output=True,
            text=True,
            timeout=RESOLVE_TIMEOUT_S,
            check=False,
        )
    built = sorted(folder.glob("jetson_env-*.whl"))
    if proc.returncode != 0 or not built:
        raise BundleError(
            "jetson-env's own wheel could not be made for the bundle: " + last_lines(proc.stderr),
            hint="leave it out with --no-controller where the controller has jetson-env",
        )
    return built[0]
