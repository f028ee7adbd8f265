"""pip's resolution for a target on the controller: what pip there would install (wheels
for its tags), and an sdist with its build requirements."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from jetson_env import wheels
from jetson_env.bundle import fit
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.fetching import CACHE, cache_path, check_url
from jetson_env.bundle.targets import BundleTarget

RESOLVE_TIMEOUT_S = 900
# Rounds of resolving again without the release series that did not fit (fit.py).
FIT_ROUNDS = 12
# The oldest pip the controller supports: `install --dry-run --report` came with 22.2. Older
# (Ubuntu 22.04's 22.0.2) is upgraded by installing jetson-env (its dependency pip>=22.2).
OLDEST_PIP = "22.2"


def project_of(filename: str) -> str:
    """The project a wheel or sdist file belongs to (PEP 427 / PEP 625 names), normalized;
    "" for a name that is neither."""
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[0])
        return str(parse_sdist_filename(filename)[0])
    except ValueError:
        return ""


class NoWheelFits(BundleError):
    """No release of `project` has a wheel the target installs (JetPack 4's Python 3.6 and
    termcolor: its last release for 3.6, 1.1.0, is an sdist): only its sdist can serve it."""

    def __init__(self, project: str, target: BundleTarget):
        super().__init__(
            f"no wheel of {project} installs on {target.key} (Python {target.python})",
            hint=f"pin a {project} that has a wheel for it in the role's variables",
        )
        self.project = project


def _pip_command() -> list[str]:
    return [sys.executable, "-m", "pip"]


def resolve(
    target: BundleTarget,
    requirements: list[str],
    *,
    index: str | None = None,
    no_deps: bool = False,
    python: list[str] | None = None,
    constraints: dict[str, str] | None = None,
    _pins: dict[str, str] | None = None,
) -> list[dict[str, str]]:
    """What pip would install for `target` from `requirements` (wheels for its tags only),
    preferring the `constraints` versions ({name: version}) where they fit:
    [{"name", "version", "url", "sha256", "filename"}]. Cached by inputs for a day."""
    if constraints:
        try:
            return resolve(target, requirements, index=index, no_deps=no_deps, python=python,
                           constraints=None, _pins=constraints)  # fmt: skip
        except BundleError:
            pass  # the shared versions do not fit this set: resolve it on its own
    args = [
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        # Old pips check Requires-Python against their own interpreter, not --python-version:
        # fit.judge checks it against the target's, and leaves out what does not fit.
        "--ignore-requires-python",
        "--python-version",
        target.python,
        "--implementation",
        "cp",
        "--abi",
        target.abi,
        "--abi",
        "abi3",
        "--abi",
        "none",
        *wheels.pip_platform_args(target.machine, target.glibc),
    ]
    if index:
        check_url(index)
        args += ["--index-url", index]
    if no_deps:
        args.append("--no-deps")
    pip = python or _pip_command()
    key = hashlib.sha256(
        json.dumps([args, requirements, _pins, time.strftime("%Y-%m-%d"), pip]).encode()
    ).hexdigest()[:24]
    cached = CACHE / "resolve" / f"{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    _require_pip(pip)
    wanted, excluded = list(requirements), {}
    for _round in range(FIT_ROUNDS):
        items = _pip_report(pip, args, wanted, _pins, excluded, target)
        verdict = fit.judge(items, target.python, target.machine, target.glibc, not no_deps)
        if verdict.fits:
            break
        if not verdict.too_new and set(verdict.missing) <= set(wanted):
            break
        for name, version in verdict.too_new.items():
            excluded[name] = _below(pip, args, name, version, target)
        wanted += [m for m in verdict.missing if m not in wanted]
    if not verdict.fits:
        raise BundleError(
            f"pip's set of {' '.join(requirements)} for {target.key} does not fit it: "
            + "; ".join(verdict.reasons[:6]),
            hint="pin a version the target's Python supports in the role's variables",
        )
    found = []
    for item in items:
        info = item["download_info"]
        hashes = info.get("archive_info", {}).get("hashes", {})
        url = info["url"]
        found.append(
            {
                "name": item["metadata"]["name"],
                "version": item["metadata"]["version"],
                "url": url,
                "sha256": hashes.get("sha256", ""),
                "filename": urllib.parse.unquote(Path(urllib.parse.urlsplit(url).path).name),
            }
        )
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(found))
    return found


def _below(pip: list[str], args: list[str], name: str, version: str, target: BundleTarget) -> str:
    """The constraint that leaves out `version` of `name`, which does not fit the target:
    `<=` the newest release below it whose wheel fits, as `pip download` picks it (it checks
    Requires-Python against --python-version, where `install --dry-run --target` of pip 23.2
    does not: one round instead of one per release series back to 3.6's), else `<` its
    release series (fit.judge checks whatever pip picks). NoWheelFits where pip finds none."""
    skipped = {"--ignore-requires-python", "--no-deps"}  # what the round's install adds
    argv = [a for a in args[args.index("--only-binary=:all:") :] if a not in skipped]
    with tempfile.TemporaryDirectory(prefix="jetson-env-fit-") as tmp:
        result = subprocess.run(
            [*pip, "download", "--quiet", "--no-deps", *argv, "--dest", tmp, f"{name}<{version}"],
            capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, check=False,
        )  # fmt: skip
        found = sorted(Path(tmp).glob("*.whl"))
    if result.returncode == 0 and found:
        return f"<={parse_wheel_filename(found[0].name)[1]}"
    if "requires a different Python" in result.stderr or "No matching distribution" in (
        result.stderr
    ):
        raise NoWheelFits(name, target)
    return f"<{_series(version)}"


def _series(version: str) -> str:
    """The release series a version that does not fit stands for: its major.minor (a
    Requires-Python rarely changes within one), or the version itself for a x.0.0 series."""
    parsed = Version(version)
    series = Version(f"{parsed.major}.{parsed.minor}")
    return str(series if series < parsed else parsed)


def _require_pip(pip: list[str]) -> None:
    done = subprocess.run([*pip, "--version"], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    words = done.stdout.split()
    version = words[1] if done.returncode == 0 and len(words) > 1 else ""
    if not version or Version(version) < Version(OLDEST_PIP):
        raise BundleError(
            f"the controller's pip ({version or 'not found'}: {' '.join(pip)}) is older than"
            f" {OLDEST_PIP}, the first with `install --dry-run --report`",
            hint=f"upgrade it where jetson-env is installed: `{pip[0]} -m pip install"
            f" 'pip>={OLDEST_PIP}'`",
        )


def _pip_report(pip: list[str], args: list[str], requirements: list[str],
                pins: dict[str, str] | None, excluded: dict[str, str],
                target: BundleTarget) -> list[dict[str, Any]]:  # fmt: skip
    """pip's `install --report` items for one round: `pins` preferred, `excluded` versions
    left out ({name: "<=2.4.0"}: newer ones)."""
    with tempfile.TemporaryDirectory(prefix="jetson-env-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [
            *pip,
            *args,
            "--target",
            str(Path(tmp) / "never"),
            "--report",
            str(report),
            *requirements,
        ]
        lines = [f"{name}=={version}\n" for name, version in sorted((pins or {}).items())]
        lines += [f"{name}{bound}\n" for name, bound in sorted(excluded.items())]
        if lines:
            constraints = Path(tmp) / "constraints.txt"
            constraints.write_text("".join(lines))
            cmd += ["--constraint", str(constraints)]
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, check=False
        )
        if result.returncode != 0:
            raise BundleError(
                f"pip could not resolve {' '.join(requirements)} for {target.key}: "
                + last_lines(result.stderr),
                hint="check pip's index settings (pip config list) and the target's Python "
                "and glibc",
            )
        return json.loads(report.read_text()).get("install", [])


def resolve_sdist(requirement: str, python: str) -> dict[str, Any]:
    """An sdist for a target's `python` ("3.6": its Requires-Python checked by pip download),
    its URL and sha256, its runtime requirements and its build requirements (from its
    pyproject.toml): what a target needs to build it with no network."""
    key = hashlib.sha256(
        json.dumps([requirement, python, time.strftime("%Y-%m-%d")]).encode()
    ).hexdigest()[:24]
    cached = CACHE / "resolve" / f"sdist-{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    name = Requirement(requirement).name
    with tempfile.TemporaryDirectory(prefix="jetson-env-sdist-") as tmp:
        result = subprocess.run(
            [
                *_pip_command(),
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-binary",
                name,
                "--python-version",
                python,
                "--dest",
                tmp,
                requirement,
            ],
            capture_output=True,
            text=True,
            timeout=RESOLVE_TIMEOUT_S,
            check=False,
        )
        files = list(Path(tmp).glob("*.tar.gz"))
        if result.returncode != 0 or not files:
            raise BundleError(
                f"pip could not download the sdist of {requirement}: " + last_lines(result.stderr)
            )
        sdist = files[0]
        requires, build = _sdist_requirements(sdist)
        sha = hashlib.sha256(sdist.read_bytes()).hexdigest()
        local = cache_path(sha)
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sdist, local)
    found = {
        "filename": sdist.name,
        "sha256": sha,
        "url": local.as_uri(),
        "requires": requires,
        "build_requires": build,
        "source": f"pip download {requirement} (pip's configured index)",
    }
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(found))
    return found


def _sdist_requirements(sdist: Path) -> tuple[list[str], list[str]]:
    import email.parser

    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = None
    requires: list[str] = []
    build = ["setuptools>=40.8.0", "wheel"]
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) != 2:
                continue
            if parts[1] == "PKG-INFO":
                meta = email.parser.Parser().parsestr(tar.extractfile(member).read().decode())
                requires = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
            elif parts[1] == "pyproject.toml" and tomllib is not None:
                data = tomllib.loads(tar.extractfile(member).read().decode())
                build = list(data.get("build-system", {}).get("requires", build))
    return requires, build


def last_lines(text: str, count: int = 4) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[-count:]) or "no output"


# ---------------------------------------------------------------------------------------
# Making a bundle
