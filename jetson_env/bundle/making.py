"""Making a bundle: what the targets need, resolved and fetched into the folder, the
manifest and the flat apt repositories written.

pip resolves what each target installs (`pip install --dry-run --report` with the target's
wheel tags, its Python and `--only-binary=:all:`, through pip's own configured indexes),
and the files are then fetched in parallel. Running it again adds to a bundle; a file
already there with another sha256 is an error, never silently replaced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from jetson_env import apt_repository
from jetson_env.bundle import apt_files, controller, judging, signing
from jetson_env.bundle.fetching import (
    CACHE,
    FETCH_WORKERS,
    Fetch,
    FetchFailed,
    Progress,
    fetch_all,
)
from jetson_env.bundle.manifest import (
    MANIFEST,
    SCHEMA,
    BundleError,
    disk_error,
    entry_roles,
    load_manifest,
    write_manifest,
)
from jetson_env.bundle.needs import FILE_KINDS, ROLES, Manual, Needs, PipSet, file_kind, needs_for
from jetson_env.bundle.pip_resolution import NoWheelFits, project_of, resolve, resolve_sdist
from jetson_env.bundle.targets import BundleTarget
from jetson_env.bundle.untrusted import (
    folder_fd,
    remove_inside,
    sha256_inside,
)
from jetson_env.matrix import Matrix


@dataclass
class Result:
    directory: Path
    manifest: dict[str, Any]
    added: list[str]
    sizes: dict[str, int]
    total: int
    seconds: float
    kernels: list[dict[str, Any]] = dataclasses.field(default_factory=list)

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
            # The offline install line of jetson-env, when the bundle carries the controller.
            "controller": controller.install_line(self.directory)
            if any(p.startswith(f"{controller.FOLDER}/") for p in self.manifest["artifacts"])
            else None,
            "kernels": self.kernels,
            "seconds": round(self.seconds, 1),
        }


def make(
    directory: Path,
    matrix: Matrix,
    targets: list[BundleTarget],
    roles: Iterable[str] = ROLES,
    files: dict[str, Path] | None = None,
    report: Callable[[str], None] | None = None,
    workers: int = FETCH_WORKERS,
    sign_key: Path | None = None,
    controller_python: str | None = None,
    capabilities: dict[str, set[str]] | None = None,
    allow_no_kernel: bool = False,
) -> Result:
    """Add what `targets` need for `roles` to the bundle in `directory`, and with
    `controller_python` the wheels that install jetson-env[provision] for it (then sign its
    manifest with `sign_key`, an OpenSSH private key). Its wheels are judged for the
    targets' GPUs (jetson_env.bundle.judging; `capabilities`: those `-i` read, by target
    key); one without a kernel for a target's is refused unless `allow_no_kernel`."""
    start = time.monotonic()
    roles = [r for r in ROLES if r in set(roles)]
    files = files or {}
    for kind, path in files.items():
        if kind not in FILE_KINDS:
            raise BundleError(f"--file {kind}=...: unknown kind; known: {', '.join(FILE_KINDS)}")
        if not path.is_file():
            raise BundleError(f"--file {kind}={path}: no such file")
    if sign_key is not None:
        signing.check_key(sign_key)  # before anything is fetched
    if controller_python:  # one ansible-core for every target, on this controller's Python
        served = [entry.get("python", "") for entry in load_manifest(directory)["targets"].values()]
        why = matrix.ansible_core.split([*served, *(t.python for t in targets)], controller_python)
        if why:
            raise BundleError(why, hint="nothing was fetched or written")
    say = report or (lambda _msg: None)
    with folder_lock(directory, say):
        judge = (capabilities or {}, allow_no_kernel)
        result = _make(
            directory, matrix, targets, roles, files, report, workers, controller_python, judge
        )
        if sign_key is not None:
            signing.sign(directory, sign_key)
    result.seconds = time.monotonic() - start
    return result


def sign(directory: Path, key: Path, say: Callable[[str], None]) -> dict[str, str]:
    """`bundle DIR --sign KEY` alone: the bundle as it is, signed under the folder's lock (a
    `jetson-env bundle` adding to it finishes first, so what is signed is its last word).
    signing.sign's {"fingerprint", "manifest_sha256"}."""
    signing.check_key(key)
    if not directory.is_dir():
        raise BundleError(f"{directory} is not a bundle folder", hint="give the bundle's folder")
    with folder_lock(directory, say):
        return signing.sign(directory, key)


def _make(
    directory: Path,
    matrix: Matrix,
    targets: list[BundleTarget],
    roles: list[str],
    files: dict[str, Path],
    report: Callable[[str], None] | None,
    workers: int,
    controller_python: str | None,
    judge: tuple[dict[str, set[str]], bool],
) -> Result:
    """What the targets need, fetched (torch's dependencies with them where pip's index
    says them, else after the torch wheels), judged for the targets' GPUs, then the manifest
    and the apt repositories written."""
    say = report or (lambda _msg: None)
    manifest = load_manifest(directory)
    manifest.pop("signature", None)  # what it signed changes: signed again with --sign
    wanted = _wanted(matrix, targets, roles, files, manifest, say)
    if controller_python:
        wanted.fetches += _controller_fetches(manifest, wanted.made_for, controller_python, say)
    fetcher = _Fetcher(directory, manifest, report, workers)
    later = any(_is_torch_wheel(f.dest, f.role) and (f.dest, f.target) not in wanted.torch_known
                for f in wanted.fetches)  # fmt: skip
    fetcher.run(wanted.fetches + wanted.torch_deps, LATER if later else "")
    # The other torch wheels' dependencies, now that they are in the bundle (a URL wheel's
    # are only known from its metadata).
    late = _torch_dependency_fetches(directory, manifest, targets, say, wanted.torch_known)
    fetcher.run(late)
    required = {(fetch.dest, fetch.target) for fetch in wanted.torch_deps + late}
    kernels = judging.judge_bundle(directory, manifest, matrix, targets, *judge, required, say)
    refused = judging.refusal(kernels)
    if refused is not None:  # not shipped: the wheels no target keeps leave the bundle
        for path in [p for p, e in manifest["artifacts"].items() if not e["targets"]]:
            remove_inside(directory, path)
            del manifest["artifacts"][path]
        write_manifest(directory, manifest)
        raise refused
    wanted.manual += [_manual_for(failure) for failure in fetcher.failed]
    _finish_manifest(directory, manifest, wanted)
    sizes = {
        t.key: sum(e["size"] for e in manifest["artifacts"].values() if t.key in e["targets"])
        for t in targets
    }
    total = sum(e["size"] for e in manifest["artifacts"].values())
    return Result(directory, manifest, sorted(fetcher.added), sizes, total, 0.0, kernels)


@dataclass
class _Wanted:
    """What a run adds: the files to fetch, the targets' manifest entries (written once their
    files are in), what must be supplied by hand, and the apt packages' index entries."""

    fetches: list[Fetch] = dataclasses.field(default_factory=list)
    made_for: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    manual: list[Manual] = dataclasses.field(default_factory=list)
    stanzas: dict[str, str] = dataclasses.field(default_factory=dict)  # .deb path -> entry
    # torch's dependencies known before anything is fetched (_index_torch_dependencies), and
    # the torch wheels they are for: (path, target key).
    torch_deps: list[Fetch] = dataclasses.field(default_factory=list)
    torch_known: set[tuple[str, str]] = dataclasses.field(default_factory=set)


def _wanted(
    matrix: Matrix,
    targets: list[BundleTarget],
    roles: list[str],
    files: dict[str, Path],
    manifest: dict,
    say: Callable[[str], None],
) -> _Wanted:
    """Each target's needs for `roles` (jetson_env.bundle.needs), resolved into fetches."""
    wanted = _Wanted()
    apt_roots: dict[tuple[str, str], apt_repository.AptRoot | str] = {}
    for target in targets:
        needs = needs_for(matrix, target, roles, files)
        wanted.manual += needs.manual
        fetches = _target_fetches(target, needs, wanted.manual, say)
        wanted.fetches += fetches
        deps = _index_torch_dependencies(target, needs, say)
        if deps is not None:
            wanted.torch_deps += deps
            wanted.torch_known |= {(f.dest, target.key) for f in fetches
                                   if _is_torch_wheel(f.dest, f.role)}  # fmt: skip
        served_before = manifest["targets"].get(target.key, {}).get("roles", [])
        wanted.made_for[target.key] = {
            **target.as_dict(),
            "roles": sorted(set(served_before) | set(roles)),
        }
        if needs.apt:
            wanted.fetches += apt_files.apt_fetches(
                target, needs.apt, manifest, apt_roots, wanted.stanzas, say
            )
    return wanted


def _controller_fetches(
    manifest: dict,
    made_for: dict[str, dict[str, Any]],
    controller_python: str,
    say: Callable[[str], None],
) -> list[Fetch]:
    """The wheels that install jetson-env[provision] on the controller's Python, with the
    ansible-core every target the bundle serves can be driven by."""
    say(f"the controller (Python {controller_python}): jetson-env[provision]'s wheels")
    served = [entry.get("python", "") for entry in
              (*manifest["targets"].values(), *made_for.values())]  # fmt: skip
    controller_key = controller.target(controller_python).key
    return [_resolved(item, controller.ROLE, " (the controller's)", controller_key,
                      controller.FOLDER)
            for item in controller.requirements(controller_python, served)]  # fmt: skip


class _Fetcher:
    """Fetches batches into the bundle, each file recorded in the manifest as it lands (an
    interrupted run stays consistent). A file refused (a sha256 mismatch, a full disk) stops
    the run; one that could not be downloaded is kept in `failed` (supplied by hand)."""

    def __init__(
        self, directory: Path, manifest: dict, report: Callable[[str], None] | None, workers: int
    ):
        self.directory = directory
        self.manifest = manifest
        self.report = report
        self.workers = workers
        self.added: list[str] = []
        self.failed: list[FetchFailed] = []

    def run(self, batch: list[Fetch], later: str = "") -> None:
        """`later`: what the batch's size line says is not counted in it."""
        todo = _plan_fetches(self.directory, self.manifest, batch)
        progress = Progress(self.report)
        progress.before(todo, self.workers, later)
        refused: list[BaseException] = []
        for fetch, outcome in fetch_all(todo, self.directory, progress, self.workers):
            if isinstance(outcome, FetchFailed):
                self.failed.append(outcome)
            elif isinstance(outcome, BaseException):  # a sha256 mismatch, a full disk
                refused.append(outcome)
            else:
                _record(self.manifest, fetch, *outcome)
                self.added.append(fetch.dest)
                write_manifest(self.directory, self.manifest)
        if refused:  # keep what was fetched consistent with the manifest, then stop
            write_manifest(self.directory, self.manifest)
            raise refused[0]
        for fetch in batch:  # already there, or fetched once for several: they use it too
            entry = self.manifest["artifacts"].get(fetch.dest)
            if entry is None:
                continue
            if fetch.target not in entry["targets"]:
                entry["targets"].append(fetch.target)
            roles = entry.setdefault("roles", [entry["role"]])
            if fetch.role not in roles:
                roles.append(fetch.role)


def _manual_for(failure: FetchFailed) -> Manual:
    """A file that could not be downloaded, as one to supply by hand (with why)."""
    fetch = failure.fetch
    kind = file_kind({"what": fetch.what, "role": fetch.role})
    return Manual(fetch.role, fetch.what, fetch.dest, f"{fetch.url} ({failure.reason})", kind,
                  fetch.sha256, fetch.target)  # fmt: skip


def _finish_manifest(directory: Path, manifest: dict, wanted: _Wanted) -> None:
    """The targets' entries, the apt download lines and what to supply by hand in the
    manifest; the flat apt repositories written beside it."""
    manifest["targets"].update(wanted.made_for)
    for apt in manifest["apt"].values():  # a line to run: from checked names, never the file's
        apt["download"] = (
            apt_repository.download_line(apt["not_bundled"]) if apt["not_bundled"] else ""
        )
    manifest["manual"] = _merge_manual(manifest, wanted.manual)
    apt_files.write_apt_repositories(directory, manifest, wanted.stanzas)
    write_manifest(directory, manifest)


def _resolved(item: dict, role: str, suffix: str, target: str, folder: str = "pip") -> Fetch:
    """A Fetch of a file pip resolved (resolve()'s item)."""
    return Fetch(item["url"], f"{folder}/{item['filename']}", item["sha256"] or None, role,
                 f"{item['name']} {item['version']}{suffix}", target)  # fmt: skip


def _target_fetches(
    target: BundleTarget, needs: Needs, manual: list[Manual], say: Callable[[str], None]
) -> list[Fetch]:
    """What the target's needs fetch: their files, their pip sets' wheels (a set pip cannot
    resolve goes to `manual` where it says how to supply it), their sdists with their build
    requirements."""
    fetches = [Fetch(url_file.url, f"{url_file.folder}/{url_file.filename}", url_file.sha256,
                     url_file.role, url_file.what, target.key)
               for url_file in needs.urls]  # fmt: skip
    shared = _shared_versions(target, needs, say)
    for pip_set in needs.pip:
        say(f"{target.key}: resolving {' '.join(pip_set.requirements)} ({pip_set.role})")
        try:
            resolved = _wheels_or_sdists(target, pip_set, shared, needs)
        except BundleError:
            if pip_set.unresolved is None:
                raise
            manual.append(pip_set.unresolved)
            continue
        fetches += [_resolved(item, pip_set.role, "", target.key) for item in resolved]
    for role, requirement in needs.sdists:
        say(f"{target.key}: resolving {requirement}'s sdist and its build requirements ({role})")
        sdist = resolve_sdist(requirement, target.python)
        fetches.append(Fetch(sdist["url"], f"pip/{sdist['filename']}", sdist["sha256"], role,
                             f"{requirement} (sdist)", target.key))  # fmt: skip
        wanted = sdist["requires"] + sdist["build_requires"]
        fetches += [_resolved(item, role, "", target.key)
                    for item in resolve(target, wanted, constraints=shared)]  # fmt: skip
    return fetches


LATER = "torch's dependencies are counted after the torch wheel arrives (only it names them)"


def _is_torch_wheel(path: str, *roles: str) -> bool:
    return "torch" in roles and project_of(Path(path).name) == "torch"


def _index_torch_dependencies(
    target: BundleTarget, needs: Needs, say: Callable[[str], None]
) -> list[Fetch] | None:
    """torch's dependencies where its wheel comes from pip's configured indexes (x86):
    pip's dry run on the requirement reads them from the index, before anything is fetched
    (the size said first counts them: they are the gigabytes). None for a torch from a wheel
    URL or file (Jetson's), or from an index of its own: its dependencies come from pip's
    configured indexes, resolved once the wheel is here (_torch_dependency_fetches)."""
    torch = [p for p in needs.pip if p.role == "torch" and p.index is None]
    if not torch:
        return None
    say(f"{target.key}: resolving {' '.join(torch[0].requirements)}'s dependencies")
    return [_resolved(item, "torch", " (torch's)", target.key)
            for item in resolve(target, torch[0].requirements)
            if canonicalize_name(item["name"]) != "torch"]  # fmt: skip


def _torch_dependency_fetches(
    directory: Path,
    manifest: dict,
    targets: list[BundleTarget],
    say: Callable[[str], None],
    known: set[tuple[str, str]],
) -> list[Fetch]:
    """The dependencies of the torch wheels in the bundle, for each target they serve, but
    those `known` ((path, target key): resolved before, _index_torch_dependencies)."""
    fetches = []
    for target in targets:
        for path, entry in list(manifest["artifacts"].items()):
            if not (
                _is_torch_wheel(path, *entry_roles(entry))
                and target.key in entry["targets"]
                and (path, target.key) not in known
            ):
                continue
            say(f"{target.key}: resolving {Path(path).name}'s dependencies")
            for item in resolve(target, [str((directory / path).resolve())]):
                if (
                    item["url"].startswith("file:")
                    and Path(urllib.parse.urlsplit(item["url"]).path).name == Path(path).name
                ):
                    continue
                fetches.append(_resolved(item, "torch", " (torch's)", target.key))
    return fetches


LOCK = ".jetson-env-bundle.lock"


@contextlib.contextmanager
def folder_lock(directory: Path, say: Callable[[str], None]) -> Iterator[None]:
    """One `jetson-env bundle` at a time per bundle folder (two team members or CI jobs
    adding to one folder): the second waits for the first. A folder that cannot be made or
    written is bad input."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = os.open(
            directory / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
        )
    except OSError as exc:
        raise BundleError(
            f"{directory} cannot be used as a bundle folder: {exc.strerror or exc}",
            hint="name a folder you can write (it is created if missing)",
        ) from None
    try:
        waited = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    say(f"waiting for another jetson-env bundle that is adding to {directory}")
                    waited = True
                time.sleep(0.2)
        yield
    finally:
        os.close(handle)


def _wheels_or_sdists(
    target: BundleTarget, pip_set: PipSet, shared: dict[str, str], needs: Needs
) -> list[dict[str, str]]:
    """A pip set's wheels for the target; a requirement of which no wheel fits the target
    (termcolor on JetPack 4's Python 3.6: 1.1.0 is an sdist) becomes an sdist of `needs`,
    carried with its build requirements and built there by pip, as pip online would."""
    requirements = list(pip_set.requirements)
    while requirements:
        try:
            return resolve(target, requirements, index=pip_set.index, no_deps=pip_set.no_deps,
                           constraints=shared if not pip_set.no_deps else None)  # fmt: skip
        except NoWheelFits as exc:
            project = canonicalize_name(exc.project)
            named = [r for r in requirements if canonicalize_name(Requirement(r).name) == project]
            if pip_set.index is not None or not named:
                raise
            needs.sdists.append((pip_set.role, named[0]))
            requirements.remove(named[0])
    return []


def _shared_versions(
    target: BundleTarget, needs: Needs, say: Callable[[str], None]
) -> dict[str, str]:
    """One version per project for a target where one fits every role's set and the sdists'
    build requirements (one numpy, not one per role): pip's resolution of them all at once,
    then used as constraints for each set. {} when they do not fit together."""
    requirements = [
        r for p in needs.pip if not p.no_deps and p.index is None for r in p.requirements
    ]
    for _role, requirement in needs.sdists:
        sdist = resolve_sdist(requirement, target.python)
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
    holds with another sha256 is an error: a bundle never replaces a file silently. Every
    folder they go to is made (or found) first, none of them a link (untrusted.folder_fd):
    a refusal comes before any download."""
    for folder in sorted({fetch.dest.rpartition("/")[0] for fetch in batch}):
        try:
            os.close(folder_fd(directory, folder))
        except OSError as exc:
            raise disk_error(directory, exc) from None
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
            if os.path.lexists(directory / fetch.dest):
                continue
            # Listed but gone (deleted after --verify named it): fetched again, to the
            # sha256 the manifest records.
            fetch = dataclasses.replace(fetch, sha256=entry["sha256"])
        elif os.path.lexists(directory / fetch.dest) and fetch.dest not in todo:
            on_disk = sha256_inside(directory, fetch.dest)
            if fetch.sha256 and on_disk != fetch.sha256:
                raise BundleError(
                    f"{directory / fetch.dest} exists (sha256 {on_disk}) but is not the file "
                    f"{fetch.url} ({fetch.sha256}); nothing was added",
                    hint=f"move {directory / fetch.dest} away and run the command again",
                )
        todo.setdefault(fetch.dest, fetch)
    return list(todo.values())


def _record(manifest: dict[str, Any], fetch: Fetch, sha: str, size: int) -> None:
    source = fetch.url
    if source.startswith("file:") and str(CACHE) in urllib.parse.unquote(source):
        source = (
            "jetson-env's own wheel"
            if fetch.role == controller.ROLE
            else "pip's configured index (sdist)"
        )
    before = manifest["artifacts"].get(fetch.dest, {})  # a file fetched again keeps its users
    manifest["artifacts"][fetch.dest] = {
        "sha256": sha,
        "size": size,
        "role": before.get("role", fetch.role),
        "roles": list(dict.fromkeys([*before.get("roles", []), fetch.role])),
        "what": fetch.what,
        "targets": list(dict.fromkeys([*before.get("targets", []), fetch.target])),
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
