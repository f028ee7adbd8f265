"""`jetson-env bundle`: every artifact the playbook would fetch for some targets, gathered
once into a folder, so that provisioning from it needs no network at all.

A bundle folder holds:

- `manifest.json`: its targets (machine, Python, glibc, L4T release, the `jetson-env
  bundle` arguments that add them), every artifact (path, sha256, size, role, which
  targets use it, where it came from), what must be supplied by hand and where it goes,
  and the apt packages each target needs with the line that downloads them;
- `pip/`: wheels and sdists; `simple/` is a PEP 503 index of them (pip's `--index-url
  file://DIR/simple` or `--find-links DIR/pip`);
- `files/`: source archives and tarballs (torchvision, torch2trt, cuSPARSELt, TensorRT);
- `apt/<distribution>-<arch>/`: a flat apt repository of the .debs the roles install, with
  their dependencies, where the controller's own apt mirrors serve the target's
  distribution (jetson_env.apt_repository); otherwise the manifest lists the packages and
  the `apt-get download` line to run on a connected machine of that distribution.

pip resolves what each target installs (`pip install --dry-run --report` with the target's
wheel tags, its Python and `--only-binary=:all:`, through pip's own configured indexes),
and the files are then fetched in parallel, https only (or copied from a local `file:`
index), each checked against the sha256 the index or the matrix gives. Running the command
again adds to a bundle; a file already there with another sha256 is an error, never
silently replaced.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import html
import json
import os
import platform as platform_mod
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jetson_env import apt_repository, wheels
from jetson_env import roles as role_defaults
from jetson_env.matrix import Matrix, normalize_l4t

MANIFEST = "manifest.json"
SCHEMA = 1
ROLES = ("python_base", "torch", "torchvision", "pycuda", "tensorrt", "torch2trt")
# Ubuntu release of an L4T row -> (apt's suite name, its glibc: the manylinux tags its
# pip accepts).
UBUNTU = {
    "18.04": ("bionic", "2.27"),
    "20.04": ("focal", "2.31"),
    "22.04": ("jammy", "2.35"),
    "24.04": ("noble", "2.39"),
}
# What a --file KIND=PATH can bring in (files NVIDIA serves behind a login or from hosts
# this machine cannot reach).
FILE_KINDS = ("torch", "torchvision", "torch2trt", "tensorrt", "cusparselt")
FETCH_WORKERS = 4
CHUNK = 1 << 20
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jetson-env" / "bundle"
RESOLVE_TIMEOUT_S = 900


class BundleError(Exception):
    """The bundle cannot be made or used as asked; nothing was replaced. `hint` says what
    to do next."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Target:
    """One kind of host a bundle serves: its matrix row (an L4T release, or x86), machine,
    Python and glibc."""

    machine: str
    python: str  # "3.11"
    glibc: str  # "2.36"
    l4t: str = ""  # "36.4.3"; "" = the x86 profile
    distribution: str = ""  # "debian/bookworm": which apt repository fits; "" = unknown

    @property
    def key(self) -> str:
        row = f"l4t{self.l4t}" if self.l4t else "x86"
        return f"{self.machine}-{row}-cp{self.python.replace('.', '')}"

    @property
    def abi(self) -> str:
        return f"cp{self.python.replace('.', '')}"

    def bundle_args(self) -> str:
        """The `jetson-env bundle` arguments that add this target."""
        row = f"--l4t R{self.l4t}" if self.l4t else "--x86"
        distribution = f" --distribution {self.distribution}" if self.distribution else ""
        return f"{row} --python {self.python} --glibc {self.glibc}{distribution}"

    def as_dict(self) -> dict[str, str]:
        return {
            "machine": self.machine,
            "python": self.python,
            "glibc": self.glibc,
            "l4t": self.l4t,
            "distribution": self.distribution,
            "args": self.bundle_args(),
        }


def controller_glibc() -> str:
    name, version = platform_mod.libc_ver()
    return version if name == "glibc" and version else "2.17"


def targets_from_args(
    matrix: Matrix,
    l4ts: Iterable[str],
    x86: bool,
    python: str | None,
    glibc: str | None,
    distribution: str | None = None,
) -> list[Target]:
    """Targets from `--l4t R36.4.3 ... --x86 --python 3.12 --glibc 2.39`: a Jetson target
    takes its row's Python, Ubuntu's glibc and Ubuntu release unless given; x86 the
    controller's."""
    if python and not re.fullmatch(r"3\.\d{1,2}", python):
        raise BundleError(f"--python {python!r} is not a Python version like 3.12")
    if glibc and not re.fullmatch(r"2\.\d{1,2}", glibc):
        raise BundleError(f"--glibc {glibc!r} is not a glibc version like 2.39")
    if distribution and not apt_repository.DISTRIBUTION.fullmatch(distribution):
        raise BundleError(
            f"--distribution {distribution!r} is not ID/CODENAME like debian/bookworm "
            "(os-release's ID and VERSION_CODENAME)"
        )
    targets = []
    for l4t in l4ts:
        release = matrix.release(l4t)  # UnknownRelease lists the supported ones
        targets.append(
            Target(
                "aarch64",
                python or release.python,
                glibc or (UBUNTU[release.ubuntu][1] if release.ubuntu in UBUNTU else "2.17"),
                normalize_l4t(release.l4t),
                distribution
                or (f"ubuntu/{UBUNTU[release.ubuntu][0]}" if release.ubuntu in UBUNTU else ""),
            )
        )
    if x86:
        current = f"{sys.version_info.major}.{sys.version_info.minor}"
        targets.append(
            Target(
                "x86_64",
                python or current,
                glibc or controller_glibc(),
                distribution=distribution or apt_repository.controller_distribution(),
            )
        )
    if not targets:
        raise BundleError(
            "no target given", hint="name targets with --l4t R36.4.3, --x86, or -i INVENTORY"
        )
    return list(dict.fromkeys(targets))


def target_from_facts(platform: dict[str, Any], python: dict[str, Any]) -> Target:
    """The target a host with these jetson_env facts is (the playbook's bundle preflight and
    `bundle -i` use the same rule)."""
    major_minor = str(
        python.get("major_minor") or ".".join(str(python.get("version", "")).split(".")[:2])
    )
    libc = str(python.get("libc") or "")
    glibc = libc if re.fullmatch(r"2\.\d+", libc) else ""  # "": not known
    l4t = normalize_l4t(str(platform.get("l4t") or "")) if platform.get("is_jetson") else ""
    distribution = apt_repository.distribution_of(platform.get("os") or {})
    return Target(str(platform.get("machine") or ""), major_minor, glibc, l4t, distribution)


# ---------------------------------------------------------------------------------------
# What a target needs


@dataclass
class PipSet:
    """Requirements pip resolves for a target (wheels only, the target's tags)."""

    role: str
    requirements: list[str]
    index: str | None = None  # None: pip's configured indexes
    no_deps: bool = False
    # Where pip cannot resolve the set (wheels NVIDIA serves only from its own index), this
    # goes to the manifest's "supply by hand" list instead of failing the bundle.
    unresolved: Manual | None = None


@dataclass
class UrlFile:
    """A file from an https URL (or a local file given with --file), into files/ or pip/."""

    role: str
    what: str
    url: str
    filename: str
    sha256: str | None
    folder: str = "files"


@dataclass
class Manual:
    """Something the bundle cannot fetch: what, where it goes, where to get it."""

    role: str
    what: str
    expected: str  # path inside the bundle
    where_from: str
    kind: str  # the --file KIND that brings it in
    sha256: str | None = None
    target: str = ""


@dataclass
class Needs:
    pip: list[PipSet] = field(default_factory=list)
    urls: list[UrlFile] = field(default_factory=list)
    manual: list[Manual] = field(default_factory=list)
    sdists: list[tuple[str, str]] = field(default_factory=list)  # (role, "pycuda==2025.1.3")
    apt: dict[str, list[str]] = field(default_factory=dict)  # role -> the apt packages it installs


def github_archive(git_url: str, ref: str) -> str:
    """A GitHub repository's source archive of a tag or commit (https)."""
    base = git_url.removesuffix(".git")
    return f"{base}/archive/{ref}.tar.gz"


def needs_for(
    matrix: Matrix, target: Target, roles: Iterable[str], files: dict[str, Path]
) -> Needs:
    """What the playbook fetches for `target` with `roles` (the matrix row, the roles'
    defaults), and what a `--file KIND=PATH` supplies instead."""
    roles = set(roles)
    needs = Needs()
    if target.l4t:
        release = matrix.release(target.l4t)
        family = matrix.family(release.family)
        row = {
            "apt_prerequisites": list(family["apt_prerequisites"]),
            "pip_prerequisites": list(family["pip_prerequisites"]),
            "numpy": family["numpy"],
        }
        torch, torchvision, cusparselt = release.torch, release.torchvision, release.cusparselt
    else:
        raw = matrix.raw["x86"]
        row = raw
        torch, torchvision, cusparselt = matrix.x86.torch, matrix.x86.torchvision, None
    if "python_base" in roles:
        needs.pip.append(
            PipSet("python_base", [row["numpy"], *row["pip_prerequisites"], "termcolor"])
        )
        needs.apt["python_base"] = list(row["apt_prerequisites"])
    if "torch" in roles:
        if "torch" in files:
            needs.urls.append(
                UrlFile(
                    "torch",
                    "torch wheel",
                    files["torch"].resolve().as_uri(),
                    files["torch"].name,
                    None,
                    "pip",
                )
            )
        elif torch.url:
            needs.urls.append(
                UrlFile(
                    "torch",
                    "torch wheel",
                    torch.url,
                    torch.filename or Path(urllib.parse.urlsplit(torch.url).path).name,
                    torch.sha256,
                    "pip",
                )
            )
        else:
            needs.pip.append(
                PipSet("torch", [f"torch=={torch.version}"], torch.index, no_deps=True)
            )
        # torch's own dependencies: resolved once the wheel is here (see Bundler._torch_deps).
        if cusparselt is not None:
            if "cusparselt" in files:
                needs.urls.append(
                    UrlFile(
                        "torch",
                        "cuSPARSELt archive",
                        files["cusparselt"].resolve().as_uri(),
                        files["cusparselt"].name,
                        cusparselt.sha256,
                    )
                )
            else:
                needs.urls.append(
                    UrlFile(
                        "torch",
                        "cuSPARSELt archive",
                        cusparselt.url,
                        Path(urllib.parse.urlsplit(cusparselt.url).path).name,
                        cusparselt.sha256,
                    )
                )
            needs.apt["torch"] = role_defaults.default("torch", "cusparselt_apt_packages")
    if "torchvision" in roles:
        pins = matrix.raw.get("torchvision_archives", {}).get("sha256", {})
        if "torchvision" in files:
            # A release tarball of another version (Debian's pytorch-vision_0.21.0.orig.tar.gz):
            # the matrix's pin for the version its name carries.
            named = re.search(r"(\d+\.\d+\.\d+)", files["torchvision"].name)
            version = named.group(1) if named else torchvision
            source = files["torchvision"].resolve().as_uri()
            filename = files["torchvision"].name
        else:
            version = torchvision
            source = github_archive(
                "https://github.com/pytorch/vision.git", f"refs/tags/v{version}"
            )
            filename = f"vision-{version}.tar.gz"
        needs.urls.append(
            UrlFile(
                "torchvision", "torchvision source archive", source, filename, pins.get(version)
            )
        )
        needs.pip.append(PipSet("torchvision", ["pillow", row["numpy"], "setuptools", "wheel"]))
        needs.apt["torchvision"] = role_defaults.default("torchvision", "apt_packages")
    if "pycuda" in roles:
        needs.sdists.append(("pycuda", f"pycuda=={matrix.pycuda_for(target.python)}"))
    if "torch2trt" in roles:
        ref = matrix.torch2trt["ref"]
        if "torch2trt" in files:
            url = files["torch2trt"].resolve().as_uri()
        else:
            url = github_archive(matrix.torch2trt["git"], ref)
        needs.urls.append(
            UrlFile(
                "torch2trt",
                f"torch2trt {ref[:12]} source archive",
                url,
                f"torch2trt-{ref}.tar.gz" if "torch2trt" not in files else files["torch2trt"].name,
                None,
            )
        )
        needs.pip.append(PipSet("torch2trt", ["packaging", "setuptools", "wheel"]))
        needs.apt["torch2trt"] = role_defaults.default("torch2trt", "cmake_apt_packages")
    if "tensorrt" in roles:
        if target.l4t:
            needs.apt["tensorrt"] = role_defaults.default("tensorrt", "apt_packages")
        elif "tensorrt" in files:
            needs.urls.append(
                UrlFile(
                    "tensorrt",
                    "TensorRT tarball",
                    files["tensorrt"].resolve().as_uri(),
                    files["tensorrt"].name,
                    None,
                )
            )
        else:
            # x86's TensorRT from pip (the matrix's pin): PyPI has tensorrt-cuXX only as an
            # sdist and no tensorrt-cuXX-libs wheels; NVIDIA's own pip index has the wheels.
            requirement = matrix.x86_tensorrt.requirement
            needs.pip.append(
                PipSet(
                    "tensorrt",
                    [requirement],
                    unresolved=Manual(
                        "tensorrt",
                        f"TensorRT wheels ({requirement} with its -libs and -bindings)",
                        f"pip/{matrix.x86_tensorrt.package.replace('-', '_')}*-*.whl",
                        "NVIDIA's pip index (pip resolves only wheels here and PyPI has none of"
                        f" {matrix.x86_tensorrt.package}'s libraries): add that index to pip's"
                        " configuration (pip config set global.extra-index-url URL) and run"
                        " this bundle command again, or bring a TensorRT tarball with"
                        " --file tensorrt=PATH",
                        "tensorrt",
                        target=target.key,
                    ),
                )
            )
    needs.apt = {role: packages for role, packages in needs.apt.items() if packages}
    return needs


def apt_download_line(packages: list[str]) -> str:
    """What to run on a connected machine of the target's distribution to get the .debs,
    dependencies included."""
    names = " ".join(shlex.quote(p) for p in packages)
    return (
        "apt-get download $(apt-cache depends --recurse --no-recommends --no-suggests "
        "--no-conflicts --no-breaks --no-replaces --no-enhances "
        f"{names} | grep '^[a-z0-9]' | sort -u)"
    )


# ---------------------------------------------------------------------------------------
# The manifest


def load_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        return {"schema": SCHEMA, "targets": {}, "artifacts": {}, "manual": [], "apt": {}}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BundleError(
            f"{path} cannot be read: {exc}",
            hint="restore it, or start a new bundle in an empty folder",
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BundleError(f"{path} is not a jetson-env bundle manifest of schema {SCHEMA}")
    return data


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    tmp.replace(directory / MANIFEST)


def normalize_project(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_of(filename: str) -> str:
    """The project a wheel or sdist file belongs to (PEP 427 / PEP 625 names)."""
    if filename.endswith(".whl"):
        return normalize_project(filename.split("-")[0])
    stem = re.sub(r"\.(tar\.gz|zip|tar\.bz2)$", "", filename)
    return normalize_project(stem.rsplit("-", 1)[0])


def write_index(directory: Path, manifest: dict[str, Any]) -> None:
    """PEP 503's simple index of every file under pip/, rebuilt from the manifest."""
    projects: dict[str, list[dict[str, Any]]] = {}
    for path, entry in sorted(manifest["artifacts"].items()):
        if path.startswith("pip/"):
            projects.setdefault(project_of(Path(path).name), []).append({"path": path, **entry})
    simple = directory / "simple"
    tmp = directory / ".simple.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    links = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
    (tmp / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    for project, files in projects.items():
        (tmp / project).mkdir()
        anchors = "".join(
            f'<a href="../../{html.escape(f["path"])}#sha256={f["sha256"]}">'
            f"{html.escape(Path(f['path']).name)}</a>\n"
            for f in files
        )
        (tmp / project / "index.html").write_text(
            f"<!DOCTYPE html>\n<html><body>\n{anchors}</body></html>\n"
        )
    shutil.rmtree(simple, ignore_errors=True)
    tmp.replace(simple)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(directory: Path) -> list[dict[str, str]]:
    """Every artifact of the manifest checked against its sha256 and size: the problems,
    each with the path, what is wrong and the `jetson-env bundle` line that adds it again."""
    manifest = load_manifest(directory)
    if not (directory / MANIFEST).exists():
        raise BundleError(
            f"{directory} has no {MANIFEST}: it is not a bundle",
            hint=f"make one with `jetson-env bundle {directory} --x86` (or --l4t, -i)",
        )
    problems = []
    for path, entry in sorted(manifest["artifacts"].items()):
        problem = artifact_problem(directory, path, entry)
        if problem:
            problems.append(
                {"path": path, "problem": problem, "fix": readd_line(directory, manifest, entry)}
            )
    for repo, entry in sorted(manifest.get("apt_repos", {}).items()):
        packages = directory / repo / "Packages"
        if not packages.is_file() or sha256_of(packages) != entry["packages_sha256"]:
            problems.append(
                {
                    "path": f"{repo}/Packages",
                    "problem": "missing or not the one the manifest records",
                    "fix": f"run the `jetson-env bundle` line of any target again: it rewrites "
                    f"{repo}/Packages from the .debs there",
                }
            )
    return problems


def artifact_problem(directory: Path, path: str, entry: dict[str, Any]) -> str | None:
    file = directory / path
    if not file.is_file():
        return "missing"
    if file.stat().st_size != entry["size"]:
        return f"size {file.stat().st_size}, the manifest says {entry['size']}"
    actual = sha256_of(file)
    if actual != entry["sha256"]:
        return f"sha256 {actual}, the manifest says {entry['sha256']}"
    return None


def readd_line(directory: Path, manifest: dict[str, Any], entry: dict[str, Any]) -> str:
    """The `jetson-env bundle` line that fetches an artifact again (after removing the bad
    copy: a bundle never replaces a file silently)."""
    targets = [manifest["targets"][t]["args"] for t in entry["targets"] if t in manifest["targets"]]
    args = targets[0] if targets else "--x86"
    return f"jetson-env bundle {shlex.quote(str(directory))} {args} --roles {entry['role']}"


# ---------------------------------------------------------------------------------------
# Fetching


class Progress:
    """Files and bytes fetched so far, on one line of stderr (or handed to a callback)."""

    def __init__(self, report: Callable[[str], None] | None):
        self.report = report
        self.lock = threading.Lock()
        self.files = self.total_files = 0
        self.bytes = 0
        self.last = 0.0

    def add_files(self, count: int) -> None:
        with self.lock:
            self.total_files += count

    def advance(self, nbytes: int, done: bool = False) -> None:
        with self.lock:
            self.bytes += nbytes
            self.files += done
            now = time.monotonic()
            if self.report and (done or now - self.last > 0.5):
                self.last = now
                self.report(
                    f"fetched {self.files}/{self.total_files} files, {self.bytes / 1e6:.1f} MB"
                )


@dataclass
class Fetch:
    """One file to put into the bundle."""

    url: str
    dest: str  # path inside the bundle: pip/NAME or files/NAME
    sha256: str | None
    role: str
    what: str
    target: str


def _check_url(url: str, signed_index: bool = False) -> None:
    """https or a local file; plain http only for a .deb whose sha256 comes from an apt
    mirror's index that apt verified against the source's keyring (apt's own model)."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("https", "file") and not (signed_index and scheme == "http"):
        raise BundleError(f"{url} is not https: only https downloads (or local files) are allowed")


def _cache_path(sha256: str) -> Path:
    return CACHE / "files" / sha256[:2] / sha256


def fetch_file(fetch: Fetch, directory: Path, progress: Progress) -> tuple[str, int]:
    """Download (or copy) one file into the bundle through a temporary name, checking its
    sha256; a file with a known sha256 comes from the controller's cache when it is there.
    Returns (sha256, size)."""
    _check_url(fetch.url, signed_index=fetch.dest.startswith("apt/") and bool(fetch.sha256))
    final = directory / fetch.dest
    final.parent.mkdir(parents=True, exist_ok=True)
    # A download with a known sha256 comes from the cache (same content by definition); a
    # local file is always read, so that the file given is the one checked.
    local = fetch.url.startswith("file:")
    if fetch.sha256 and not local and _cache_path(fetch.sha256).is_file():
        source = _cache_path(fetch.sha256)
        tmp = final.with_name(f".{final.name}.part")
        shutil.copyfile(source, tmp)
        size = tmp.stat().st_size
        progress.advance(size, done=True)
        tmp.replace(final)
        return fetch.sha256, size
    tmp = final.with_name(f".{final.name}.part")
    digest = hashlib.sha256()
    size = 0
    try:
        with _open_source(fetch.url) as handle, tmp.open("wb") as out:
            for block in iter(lambda: handle.read(CHUNK), b""):
                out.write(block)
                digest.update(block)
                size += len(block)
                progress.advance(len(block))
    except (OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        progress.advance(0, done=True)  # counted: it goes to the manifest's manual list
        raise FetchFailed(fetch, str(exc)) from None
    actual = digest.hexdigest()
    if fetch.sha256 and actual != fetch.sha256:
        tmp.unlink(missing_ok=True)
        raise BundleError(
            f"sha256 mismatch for {fetch.url}: expected {fetch.sha256}, got {actual}; "
            "nothing was added",
            hint="check the source; the pin comes from the index or the matrix",
        )
    progress.advance(0, done=True)
    tmp.replace(final)
    cached = _cache_path(actual)
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(final, cached.with_suffix(".part"))
        cached.with_suffix(".part").replace(cached)
    return actual, size


def _open_source(url: str):
    """A readable stream of an https URL or a local file: URL (checked by _check_url)."""
    if url.startswith("file:"):
        return Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path)).open("rb")
    request = urllib.request.Request(url, headers={"User-Agent": "jetson-env-bundle"})
    return urllib.request.urlopen(request, timeout=60)


class FetchFailed(Exception):
    def __init__(self, fetch: Fetch, reason: str):
        super().__init__(f"{fetch.url}: {reason}")
        self.fetch = fetch
        self.reason = reason


# ---------------------------------------------------------------------------------------
# pip's resolution for a target


def _pip_command() -> list[str]:
    return [sys.executable, "-m", "pip"]


def resolve(
    target: Target,
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
        _check_url(index)
        args += ["--index-url", index]
    if no_deps:
        args.append("--no-deps")
    key = hashlib.sha256(
        json.dumps([args, requirements, _pins, time.strftime("%Y-%m-%d")]).encode()
    ).hexdigest()[:24]
    cached = CACHE / "resolve" / f"{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    with tempfile.TemporaryDirectory(prefix="jetson-env-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [
            *(python or _pip_command()),
            *args,
            "--target",
            str(Path(tmp) / "never"),
            "--report",
            str(report),
            *requirements,
        ]
        if _pins:
            pins = Path(tmp) / "shared-versions.txt"
            pins.write_text(
                "".join(f"{name}=={version}\n" for name, version in sorted(_pins.items()))
            )
            cmd += ["--constraint", str(pins)]
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, check=False
        )
        if result.returncode != 0:
            raise BundleError(
                f"pip could not resolve {' '.join(requirements)} for {target.key}: "
                + _last_lines(result.stderr),
                hint="check pip's index settings (pip config list) and the target's Python "
                "and glibc",
            )
        data = json.loads(report.read_text())
    found = []
    for item in data.get("install", []):
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


def resolve_sdist(requirement: str) -> dict[str, Any]:
    """An sdist's URL and sha256, its runtime requirements and its build requirements
    (from its pyproject.toml): what a target needs to build it with no network."""
    key = hashlib.sha256(json.dumps([requirement, time.strftime("%Y-%m-%d")]).encode()).hexdigest()[
        :24
    ]
    cached = CACHE / "resolve" / f"sdist-{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    name = re.split(r"[<>=!~ ]", requirement, maxsplit=1)[0]
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
                f"pip could not download the sdist of {requirement}: " + _last_lines(result.stderr)
            )
        sdist = files[0]
        requires, build = _sdist_requirements(sdist)
        sha = sha256_of(sdist)
        local = _cache_path(sha)
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


def _last_lines(text: str, count: int = 4) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[-count:]) or "no output"


# ---------------------------------------------------------------------------------------
# Making a bundle


@dataclass
class Result:
    directory: Path
    manifest: dict[str, Any]
    added: list[str]
    sizes: dict[str, int]
    total: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "bundle": str(self.directory),
            "added": self.added,
            "targets": {
                key: {**self.manifest["targets"][key], "bytes": size}
                for key, size in self.sizes.items()
            },
            "total_bytes": self.total,
            "manual": self.manifest["manual"],
            "apt": self.manifest["apt"],
            "seconds": round(self.seconds, 1),
        }


def make(
    directory: Path,
    matrix: Matrix,
    targets: list[Target],
    roles: Iterable[str] = ROLES,
    files: dict[str, Path] | None = None,
    report: Callable[[str], None] | None = None,
    workers: int = FETCH_WORKERS,
) -> Result:
    """Add what `targets` need for `roles` to the bundle in `directory`."""
    start = time.monotonic()
    roles = [r for r in ROLES if r in set(roles)]
    files = files or {}
    for kind, path in files.items():
        if kind not in FILE_KINDS:
            raise BundleError(f"--file {kind}=...: unknown kind; known: {', '.join(FILE_KINDS)}")
        if not path.is_file():
            raise BundleError(f"--file {kind}={path}: no such file")
    directory.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(directory)
    say = report or (lambda _msg: None)

    fetches: list[Fetch] = []
    manual: list[Manual] = []
    apt_roots: dict[tuple[str, str], apt_repository.AptRoot | str] = {}
    stanzas: dict[str, str] = {}  # .deb path in the bundle -> its Packages entry
    for target in targets:
        needs = needs_for(matrix, target, roles, files)
        manual += needs.manual
        for url_file in needs.urls:
            fetches.append(
                Fetch(
                    url_file.url,
                    f"{url_file.folder}/{url_file.filename}",
                    url_file.sha256,
                    url_file.role,
                    url_file.what,
                    target.key,
                )
            )
        shared = _shared_versions(target, needs, say)
        for pip_set in needs.pip:
            say(f"{target.key}: resolving {' '.join(pip_set.requirements)} ({pip_set.role})")
            try:
                resolved = resolve(
                    target,
                    pip_set.requirements,
                    index=pip_set.index,
                    no_deps=pip_set.no_deps,
                    constraints=shared if not pip_set.no_deps else None,
                )
            except BundleError:
                if pip_set.unresolved is None:
                    raise
                manual.append(pip_set.unresolved)
                continue
            for item in resolved:
                fetches.append(
                    Fetch(
                        item["url"],
                        f"pip/{item['filename']}",
                        item["sha256"] or None,
                        pip_set.role,
                        f"{item['name']} {item['version']}",
                        target.key,
                    )
                )
        for role, requirement in needs.sdists:
            say(
                f"{target.key}: resolving {requirement}'s sdist and its build requirements ({role})"
            )
            sdist = resolve_sdist(requirement)
            fetches.append(
                Fetch(
                    sdist["url"],
                    f"pip/{sdist['filename']}",
                    sdist["sha256"],
                    role,
                    f"{requirement} (sdist)",
                    target.key,
                )
            )
            for item in resolve(
                target, sdist["requires"] + sdist["build_requires"], constraints=shared
            ):
                fetches.append(
                    Fetch(
                        item["url"],
                        f"pip/{item['filename']}",
                        item["sha256"] or None,
                        role,
                        f"{item['name']} {item['version']}",
                        target.key,
                    )
                )
        manifest["targets"][target.key] = {
            **target.as_dict(),
            "roles": sorted(
                set(manifest["targets"].get(target.key, {}).get("roles", [])) | set(roles)
            ),
        }
        if needs.apt:
            fetches += _apt_fetches(target, needs.apt, manifest, apt_roots, stanzas, say)

    added: list[str] = []
    failed: list[FetchFailed] = []
    refused: list[BundleError] = []

    def run(batch: list[Fetch]) -> None:
        todo = _plan_fetches(directory, manifest, batch)
        progress = Progress(report)
        progress.add_files(len(todo))
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = {pool.submit(fetch_file, f, directory, progress): f for f in todo}
            for future in concurrent.futures.as_completed(futures):
                fetch = futures[future]
                try:
                    sha, size = future.result()
                except FetchFailed as exc:
                    failed.append(exc)
                    continue
                except BundleError as exc:  # a sha256 mismatch: that file was not added
                    refused.append(exc)
                    continue
                _record(manifest, fetch, sha, size)
                added.append(fetch.dest)
        if refused:  # keep what was fetched consistent with the manifest, then stop
            write_manifest(directory, manifest)
            write_index(directory, manifest)
            raise refused[0]
        for fetch in batch:  # already there, or fetched once for several: they use it too
            entry = manifest["artifacts"].get(fetch.dest)
            if entry is None:
                continue
            if fetch.target not in entry["targets"]:
                entry["targets"].append(fetch.target)
            roles = entry.setdefault("roles", [entry["role"]])
            if fetch.role not in roles:
                roles.append(fetch.role)

    run(fetches)
    # torch's dependencies, for the torch wheels now in the bundle (a URL wheel's are only
    # known from its metadata).
    dep_fetches = []
    for target in targets:
        for path, entry in list(manifest["artifacts"].items()):
            if (
                "torch" in entry_roles(entry)
                and Path(path).name.startswith("torch-")
                and target.key in entry["targets"]
            ):
                say(f"{target.key}: resolving {Path(path).name}'s dependencies")
                for item in resolve(target, [str((directory / path).resolve())]):
                    if (
                        item["url"].startswith("file:")
                        and Path(urllib.parse.urlsplit(item["url"]).path).name == Path(path).name
                    ):
                        continue
                    dep_fetches.append(
                        Fetch(
                            item["url"],
                            f"pip/{item['filename']}",
                            item["sha256"] or None,
                            "torch",
                            f"{item['name']} {item['version']} (torch's)",
                            target.key,
                        )
                    )
    run(dep_fetches)

    for failure in failed:
        fetch = failure.fetch
        kind = {"torch wheel": "torch", "cuSPARSELt archive": "cusparselt"}.get(
            fetch.what, fetch.role
        )
        manual.append(
            Manual(
                fetch.role,
                fetch.what,
                fetch.dest,
                f"{fetch.url} ({failure.reason})",
                kind,
                fetch.sha256,
                fetch.target,
            )
        )
    manifest["manual"] = _merge_manual(manifest, manual)
    _write_apt_repositories(directory, manifest, stanzas)
    write_manifest(directory, manifest)
    write_index(directory, manifest)
    sizes = {
        t.key: sum(e["size"] for e in manifest["artifacts"].values() if t.key in e["targets"])
        for t in targets
    }
    total = sum(e["size"] for e in manifest["artifacts"].values())
    return Result(directory, manifest, sorted(added), sizes, total, time.monotonic() - start)


def _apt_fetches(
    target: Target,
    wanted: dict[str, list[str]],
    manifest: dict[str, Any],
    roots: dict[tuple[str, str], apt_repository.AptRoot | str],
    stanzas: dict[str, str],
    say: Callable[[str], None],
) -> list[Fetch]:
    """The .debs `wanted` (role -> packages) takes on the target, dependencies included,
    for its flat apt repository; records the target's apt entry in the manifest (what is
    bundled, what is not and the line that downloads that)."""
    entry = manifest["apt"].get(target.key, {})
    by_role = {role: list(p) for role, p in entry.get("roles", {}).items()}
    for role, packages in wanted.items():
        by_role[role] = list(dict.fromkeys(by_role.get(role, []) + packages))
    not_bundled = set(entry.get("not_bundled", []))
    why_not: dict[str, str] = dict(entry.get("why_not", {}))
    fetches: list[Fetch] = []
    repo = None
    place = (target.distribution, target.machine)
    if place not in roots:
        say(f"{target.key}: apt package lists of {target.distribution or 'its distribution'}")
        try:
            roots[place] = apt_repository.open_root(CACHE, target.distribution, target.machine)
        except apt_repository.AptUnavailable as exc:
            roots[place] = str(exc)
    root = roots[place]
    for role, packages in wanted.items():
        if isinstance(root, str):
            not_bundled |= set(packages)
            why_not[role] = root
            continue
        say(f"{target.key}: resolving apt {' '.join(packages)} ({role})")
        try:
            debs = root.closure(packages)
        except apt_repository.AptUnavailable as exc:
            not_bundled |= set(packages)
            why_not[role] = str(exc)
            continue
        not_bundled -= set(packages)
        why_not.pop(role, None)
        repo = f"apt/{root.key}"
        for deb in debs:
            dest = f"{repo}/{deb.filename}"
            stanzas[dest] = deb.stanza
            fetches.append(
                Fetch(
                    deb.url, dest, deb.sha256, role, f"{deb.name} {deb.version} (apt)", target.key
                )
            )
    missing = sorted(not_bundled)
    manifest["apt"][target.key] = {
        "distribution": target.distribution,
        "roles": by_role,
        "packages": sorted({p for packages in by_role.values() for p in packages}),
        "repo": repo or entry.get("repo"),
        "not_bundled": missing,
        "why_not": why_not,
        "download": apt_download_line(missing) if missing else "",
    }
    return fetches


def _write_apt_repositories(
    directory: Path, manifest: dict[str, Any], stanzas: dict[str, str]
) -> None:
    """Packages and Release of every apt repository this run added to (the manifest keeps
    the Packages file's sha256 for --verify and the preflight)."""
    repos = manifest.setdefault("apt_repos", {})
    for repo in sorted({str(Path(path).parent) for path in stanzas}):
        mine = {
            Path(path).name: text
            for path, text in stanzas.items()
            if str(Path(path).parent) == repo and path in manifest["artifacts"]
        }
        repos[repo] = {"packages_sha256": apt_repository.write_repository(directory / repo, mine)}


def _shared_versions(target: Target, needs: Needs, say: Callable[[str], None]) -> dict[str, str]:
    """One version per project for a target where one fits every role's set and the sdists'
    build requirements (one numpy, not one per role): pip's resolution of them all at once,
    then used as constraints for each set. {} when they do not fit together."""
    requirements = [
        r for p in needs.pip if not p.no_deps and p.index is None for r in p.requirements
    ]
    for _role, requirement in needs.sdists:
        sdist = resolve_sdist(requirement)
        requirements += sdist["requires"] + sdist["build_requires"]
    if len(requirements) < 2:
        return {}
    say(f"{target.key}: resolving every role's requirements together (shared versions)")
    try:
        return {item["name"]: item["version"] for item in resolve(target, requirements)}
    except BundleError:
        return {}


def _plan_fetches(directory: Path, manifest: dict[str, Any], batch: list[Fetch]) -> list[Fetch]:
    """The fetches whose file is not in the bundle yet (one per path); a path the bundle
    holds with another sha256 is an error: a bundle never replaces a file silently."""
    todo: dict[str, Fetch] = {}
    for fetch in batch:
        entry = manifest["artifacts"].get(fetch.dest)
        if entry is not None:
            if fetch.sha256 and entry["sha256"] != fetch.sha256:
                raise BundleError(
                    f"{directory / fetch.dest} is in the bundle with sha256 {entry['sha256']}, and "
                    f"{fetch.url} has {fetch.sha256}: the bundle keeps the file it has. "
                    "Nothing was added.",
                    hint=f"to take the new one, delete {directory / fetch.dest} and its entry in "
                    f"{directory / MANIFEST}, then run the command again",
                )
            continue
        if (directory / fetch.dest).exists() and fetch.dest not in todo:
            on_disk = sha256_of(directory / fetch.dest)
            if fetch.sha256 and on_disk != fetch.sha256:
                raise BundleError(
                    f"{directory / fetch.dest} exists (sha256 {on_disk}) but is not the file "
                    f"{fetch.url} ({fetch.sha256}); nothing was added",
                    hint=f"move {directory / fetch.dest} away and run the command again",
                )
        todo.setdefault(fetch.dest, fetch)
    return list(todo.values())


def entry_roles(entry: dict[str, Any]) -> list[str]:
    """Every role an artifact is for: a wheel pycuda's build and torchvision's both need
    (setuptools) is fetched once and must reach a host where either role runs. (`role`, the
    first of them, is all that bundles made before `roles` say.)"""
    return entry.get("roles") or [entry["role"]]


def _record(manifest: dict[str, Any], fetch: Fetch, sha: str, size: int) -> None:
    source = fetch.url
    if source.startswith("file:") and str(CACHE) in urllib.parse.unquote(source):
        source = "pip's configured index (sdist)"
    manifest["artifacts"][fetch.dest] = {
        "sha256": sha,
        "size": size,
        "role": fetch.role,
        "roles": [fetch.role],
        "what": fetch.what,
        "targets": [fetch.target],
        "source": source,
    }


def _merge_manual(manifest: dict[str, Any], new: list[Manual]) -> list[dict[str, Any]]:
    """What must be supplied by hand, per thing and target; a target drops out of an entry
    once the bundle holds that thing for it (fetched, or brought in with --file)."""
    merged = {(m["role"], m["what"]): m for m in manifest.get("manual", [])}
    for item in new:
        entry = merged.setdefault(
            (item.role, item.what),
            {
                "role": item.role,
                "what": item.what,
                "expected": item.expected,
                "where_from": item.where_from,
                "sha256": item.sha256,
                "targets": [],
                "kind": item.kind,
            },
        )
        entry["targets"] = sorted(set(entry["targets"]) | {item.target})
    kept = []
    for entry in merged.values():
        entry["targets"] = [
            t
            for t in entry["targets"]
            if not any(
                a["role"] == entry["role"] and a["what"] == entry["what"] and t in a["targets"]
                for a in manifest["artifacts"].values()
            )
        ]
        if entry["targets"]:
            kept.append(entry)
    return sorted(kept, key=lambda m: (m["role"], m["what"]))


# ---------------------------------------------------------------------------------------
# What a host gets from a bundle (the playbook's preflight, the doctor)


def host_plan(
    directory: str | Path,
    platform: dict[str, Any],
    python: dict[str, Any],
    roles: dict[str, bool],
    lock_sha256: dict[str, str] | None = None,
    check_files: bool = True,
) -> dict[str, Any]:
    """What a host with these facts installs from the bundle, for the roles that are on:
    {"error": None | why (naming the `jetson-env bundle` line that fixes it), "target",
    "artifacts": {role: [paths]}, "files": {role: path}, "pip": [paths to copy], "apt": ...}."""
    directory = Path(directory).expanduser()
    if not directory.is_absolute():
        directory = directory.resolve()
    target = target_from_facts(platform, python)
    add_line = f"jetson-env bundle {shlex.quote(str(directory))} {target.bundle_args()}"
    if not (directory / MANIFEST).is_file():
        return {
            "error": f"{directory} is not a jetson-env bundle (no {MANIFEST}); make it with "
            f"`{add_line}`. Nothing was changed."
        }
    try:
        manifest = load_manifest(directory)
    except BundleError as exc:
        return {"error": f"{exc}. Nothing was changed."}
    key = _matching_target(manifest, target)
    wanted = [r for r in ROLES if roles.get(r)]
    if key is None:
        return {
            "error": f"the bundle {directory} has nothing for {target.key} (this host); "
            "add it with "
            f"`{add_line} --roles {','.join(wanted)}`. Nothing was changed."
        }
    have_roles = set(manifest["targets"][key].get("roles", []))
    missing_roles = [r for r in wanted if r not in have_roles]
    if missing_roles:
        return {
            "error": f"the bundle {directory} has no {', '.join(missing_roles)} for {key}; add "
            f"{'it' if len(missing_roles) == 1 else 'them'} with `{add_line} --roles "
            f"{','.join(missing_roles)}` (or turn the role off). Nothing was changed."
        }
    problems = []
    artifacts: dict[str, list[str]] = {}
    # The flat apt repository, for a host of its distribution: copied whole, so every file
    # of it is checked.
    apt = manifest.get("apt", {}).get(key, {})
    apt_repo = apt.get("repo") or ""
    if not (
        apt_repo
        and apt.get("distribution") == target.distribution
        and any(apt.get("roles", {}).get(role) for role in wanted)
    ):
        apt_repo = ""
    elif check_files:
        recorded = manifest.get("apt_repos", {}).get(apt_repo, {}).get("packages_sha256")
        packages = directory / apt_repo / "Packages"
        if not packages.is_file() or sha256_of(packages) != recorded:
            problems.append(f"{apt_repo}/Packages: missing or not the one the manifest records")
    for path, entry in sorted(manifest["artifacts"].items()):
        needed_by = [role for role in entry_roles(entry) if role in wanted]
        in_repo = bool(apt_repo) and path.startswith(apt_repo + "/")
        if in_repo and check_files and (key not in entry["targets"] or not needed_by):
            problem = artifact_problem(directory, path, entry)
            if problem:
                problems.append(f"{path}: {problem}")
        if key not in entry["targets"] or not needed_by:
            continue
        for role in needed_by:
            artifacts.setdefault(role, []).append(path)
        if check_files:
            problem = artifact_problem(directory, path, entry)
            if problem:
                problems.append(f"{path}: {problem}")
        locked = (lock_sha256 or {}).get(Path(path).name)
        if locked and locked != entry["sha256"]:
            problems.append(
                f"{path}: the lock file pins sha256 {locked}, the bundle has {entry['sha256']}"
            )
    for item in manifest.get("manual", []):
        if key in item["targets"] and item["role"] in wanted:
            problems.append(
                f"{item['what']} is not in the bundle (expected at {item['expected']}): "
                "get it from "
                f"{item['where_from']} and add it with `{add_line} --roles {item['role']} "
                f"--file {item['kind']}=PATH`"
            )
    if problems:
        return {
            "error": f"the bundle {directory} cannot provision {key}: "
            + "; ".join(problems)
            + f". Fix it with `{add_line} --roles {','.join(wanted)}` "
            "(after deleting a corrupted file), "
            f"then `jetson-env bundle --verify {shlex.quote(str(directory))}`. Nothing was changed."
        }

    def one(role: str, suffix: tuple[str, ...], folder: str = "files/") -> str:
        for path in artifacts.get(role, []):
            if path.startswith(folder) and path.endswith(suffix):
                return str(directory / path)
        return ""

    torch_wheel = next(
        (p for p in artifacts.get("torch", []) if Path(p).name.startswith("torch-")), ""
    )
    pip_files = [
        {"path": p, "name": Path(p).name, "sha256": manifest["artifacts"][p]["sha256"]}
        for p in sorted(
            {p for paths in artifacts.values() for p in paths if p.startswith("pip/")}
            - {torch_wheel}
        )
    ]
    return {
        "error": None,
        "target": key,
        "directory": str(directory),
        "artifacts": artifacts,
        "pip": pip_files,
        "torch_wheel": str(directory / torch_wheel) if torch_wheel else "",
        "torch_sha256": manifest["artifacts"][torch_wheel]["sha256"] if torch_wheel else "",
        "cusparselt": one("torch", (".tar.xz",)),
        "torchvision_archive": one("torchvision", (".tar.gz", ".zip")),
        "torchvision_sha256": manifest["artifacts"]
        .get(os.path.relpath(one("torchvision", (".tar.gz", ".zip")), directory), {})
        .get("sha256", "")
        if one("torchvision", (".tar.gz", ".zip"))
        else "",
        "torch2trt_archive": one("torch2trt", (".tar.gz",)),
        "tensorrt_tarball": one("tensorrt", (".tar.gz", ".tar.zst")),
        "apt": apt,
        "apt_repo": str(directory / apt_repo) if apt_repo else "",
        # package -> its .debs there: the role copies those that apt on the host asks for.
        "apt_files": apt_repository.files_by_package(directory / apt_repo) if apt_repo else {},
        "summary": {
            role: [Path(p).name for p in paths if not p.startswith("apt/")]
            for role, paths in artifacts.items()
        },
    }


def _matching_target(manifest: dict[str, Any], target: Target) -> str | None:
    """The bundle's target for a host: same machine, row and Python, a glibc no newer than
    the host's (its wheels then install there)."""
    for key, entry in manifest["targets"].items():
        if (entry["machine"], entry["l4t"], entry["python"]) != (
            target.machine,
            target.l4t,
            target.python,
        ):
            continue
        if not target.glibc or _glibc_tuple(entry["glibc"]) <= _glibc_tuple(target.glibc):
            return key
    return None


def _glibc_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(".") if x.isdigit())


# Roles that fetch nothing: the bundle is not needed for them, and they work offline.
OFFLINE_ROLES = ("cuda_env",)
# Roles that install system packages with apt, which a bundle does not carry.
APT_ROLES = ("jetpack_apt", "docker_runtime")


def doctor_fixes(directory: str | Path, report: dict[str, Any]) -> dict[str, Any]:
    """For a doctor report (its JSON form): which of its fixes the bundle can apply on that
    host with no network, and the `jetson-env provision --bundle` line that does it."""
    directory = Path(directory).expanduser().resolve()
    platform = report.get("platform") or {}
    version = str((platform.get("python") or {}).get("version") or "")
    python = {"major_minor": ".".join(version.split(".")[:2]), "version": version, "libc": None}
    fixes = []
    for finding in report.get("findings", []):
        playbook = finding.get("playbook")
        if finding["status"] not in ("fail", "warn", "crash") or not playbook:
            continue
        role = playbook["role"]
        if role in OFFLINE_ROLES:
            applies, why = True, "needs nothing from the network"
        elif role in APT_ROLES:
            applies, why = False, "installs apt packages, which a bundle does not carry"
        elif role not in ROLES:
            applies, why = False, f"{role} is not a role a bundle serves"
        else:
            plan = host_plan(directory, platform, python, {role: True})
            applies = plan.get("error") is None
            why = f"from the bundle (target {plan['target']})" if applies else plan["error"]
        fixes.append({"check": finding["check"], "role": role, "applies": applies, "why": why})
    roles = list(dict.fromkeys(f["role"] for f in fixes if f["applies"]))
    # The Python the doctor checked is the one to provision (jetson_env.target_python).
    probed = (platform.get("python") or {}).get("executable")
    command = (
        f"jetson-env provision --bundle {shlex.quote(str(directory))} --tags {','.join(roles)}"
        + (f" --python {shlex.quote(probed)}" if probed else "")
        if roles
        else None
    )
    return {"directory": str(directory), "fixes": fixes, "roles": roles, "command": command}
