"""A bundle's manifest (manifest.json): its targets, every artifact with its sha256 and
size, what must be supplied by hand and the apt packages each target needs; and the check
of the bundle's files against it (`jetson-env bundle --verify`)."""

from __future__ import annotations

import hashlib
import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from jetson_env import apt_repository, installed
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.untrusted import (
    CHUNK,
    MANIFEST,
    PACKAGES_MAX_BYTES,
    SCHEMA,
    NewFile,
    file_problem,
    plain_name,
    read_checked,
    read_manifest,
)
from jetson_env.checks.context import shell_word

__all__ = ["CHUNK", "MANIFEST", "SCHEMA", "BundleError"]


def empty_manifest() -> dict[str, Any]:
    return {"schema": SCHEMA, "targets": {}, "artifacts": {}, "manual": [], "apt": {}}


def load_manifest(directory: Path) -> dict[str, Any]:
    """The bundle's manifest, checked as untrusted input (jetson_env.bundle.untrusted); an
    empty one for a folder that has none yet."""
    return read_manifest(directory) or empty_manifest()


def write_manifest(directory: Path, manifest: dict[str, Any]) -> str:
    """The manifest replaced whole (a reader sees the old one or the new one, never a part),
    written without following a link (untrusted.NewFile); a full disk is a failed run that
    says so. Returns the sha256 of what was written."""
    data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    try:
        with NewFile(directory, MANIFEST, f".{MANIFEST}.tmp") as new:
            new.write(data)
            new.commit()
    except OSError as exc:
        raise disk_error(directory, exc) from None
    return hashlib.sha256(data).hexdigest()


def disk_error(directory: Path, exc: OSError) -> BundleError:
    """A write into the bundle (or the cache) that failed: a failed run (exit 1)."""
    return BundleError(
        f"writing into {directory} failed: {exc.strerror or exc} ({exc.filename or directory}); "
        "the manifest lists only the files that were complete",
        hint="free some space (or fix the folder's permissions) and run the same command "
        "again: it adds what is missing",
        exit_code=1,
    )


def apt_files(directory: Path, manifest: dict[str, Any], repo: str) -> dict[str, list[str]]:
    """Package -> its .debs in the bundle's apt repository `repo`, read from its Packages
    file (the manifest's sha256, a bounded read), every file name plain and one the
    manifest records: what the apt_packages role may copy, to a name of its own folder."""
    recorded = manifest.get("apt_repos", {}).get(repo, {}).get("packages_sha256", "")
    try:
        text = read_checked(directory, f"{repo}/Packages", recorded, PACKAGES_MAX_BYTES).decode()
    except UnicodeDecodeError:
        raise BundleError(f"{repo}/Packages is not text") from None
    except BundleError:
        raise BundleError(f"{repo}/Packages: missing or not the one the manifest records") from None
    files = apt_repository.files_by_package(text)
    for names in files.values():
        for name in names:
            path = f"{repo}/{plain_name(name)}"
            if path not in manifest["artifacts"]:
                raise BundleError(
                    f"{repo}/Packages names {name!r}, which the manifest does not list"
                )
    return files


def verify(directory: Path, manifest: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """Every artifact of the manifest (`manifest`, as the caller read it, else read here)
    checked against its sha256 and size, and every apt repository as the preflight checks it
    (apt_files: its Packages against the manifest, each file name plain and listed): the
    problems, each with the path, what is wrong and the `jetson-env bundle` line that adds it
    again."""
    if manifest is None:
        manifest = read_manifest(directory)
    if manifest is None:
        raise BundleError(
            f"{directory} has no {MANIFEST}: it is not a bundle",
            hint="make one with "
            f"`{installed.command(f'jetson-env bundle {shell_word(str(directory))} --x86')}` "
            "(or --l4t, -i)",
        )
    problems = []
    for path, entry in sorted(manifest["artifacts"].items()):
        problem = artifact_problem(directory, path, entry)
        if problem:
            problems.append(
                {"path": path, "problem": problem, "fix": readd_line(directory, manifest, entry)}
            )
    for repo in sorted(manifest.get("apt_repos", {})):
        try:
            apt_files(directory, manifest, repo)
        except BundleError as exc:
            problems.append(
                {
                    "path": f"{repo}/Packages",
                    "problem": str(exc),
                    "fix": _repo_line(directory, manifest, repo),
                }
            )
    return problems


def _repo_line(directory: Path, manifest: dict[str, Any], repo: str) -> str:
    """The `jetson-env bundle` line that writes an apt repository's Packages again: a target
    of that repository with the roles whose packages are there."""
    from jetson_env.bundle.targets import BundleTarget

    for key, apt in sorted(manifest["apt"].items()):
        if apt["repo"] == repo and key in manifest["targets"]:
            args = BundleTarget.from_manifest(manifest["targets"][key]).bundle_args()
            roles = ",".join(sorted(apt["roles"]))
            return installed.command(
                f"jetson-env bundle {shell_word(str(directory))} {args} --roles "
                f"{shell_word(roles)} --no-controller"
            )
    return installed.command(
        f"jetson-env bundle {shell_word(str(directory))} --x86 --no-controller"
    )


def artifact_problem(directory: Path, path: str, entry: dict[str, Any]) -> str | None:
    return file_problem(directory, path, entry["size"], entry["sha256"])


def readd_line(directory: Path, manifest: dict[str, Any], entry: dict[str, Any]) -> str:
    """The `jetson-env bundle` line that fetches an artifact again (after removing the bad
    copy: a bundle never replaces a file silently); a file that came from this machine
    (--file) comes back only with the same --file. Every value is quoted."""
    from jetson_env.bundle.needs import FILE_KINDS, file_kind
    from jetson_env.bundle.targets import BundleTarget

    keys = [t for t in entry["targets"] if t in manifest["targets"]]
    args = (
        BundleTarget.from_manifest(manifest["targets"][keys[0]]).bundle_args() if keys else "--x86"
    )
    quoted = shell_word(str(directory))
    if entry["role"] == "controller":  # jetson-env's own wheels, for the Python they name
        abi = entry["targets"][0].rpartition("-cp")[2]
        roles = ",".join(manifest["targets"][keys[0]]["roles"]) if keys else "python_base"
        return installed.command(
            f"jetson-env bundle {quoted} {args} --roles {shell_word(roles)} "
            f"--controller-python {shell_word(f'{abi[:1]}.{abi[1:]}')}"
        )
    line = installed.command(
        f"jetson-env bundle {quoted} {args} --roles {shell_word(entry['role'])} --no-controller"
    )
    # A file given with --file comes back with the same --file; a wheel of a file: index
    # (pip's configured index) comes back from that index, with no --file.
    if entry["source"].startswith("file:") and file_kind(entry) in FILE_KINDS:
        local = urllib.request.url2pathname(urllib.parse.urlsplit(entry["source"]).path)
        line += f" --file {shell_word(f'{file_kind(entry)}={local}')}"
    return line


def manual_line(directory: Path, manifest: dict[str, Any], item: dict[str, Any]) -> str:
    """How to bring in a `manual` entry, as a step with its `jetson-env bundle` line: a file
    `--file` takes (KIND: needs.FILE_KINDS) is added with it, PATH being the file the user
    got; anything else is a download that failed here (a wheel of a role's pip set, a .deb),
    fetched again by the same line without --file once its source answers."""
    from jetson_env.bundle.needs import FILE_KINDS
    from jetson_env.bundle.targets import BundleTarget

    keys = [t for t in item["targets"] if t in manifest["targets"]]
    args = (
        BundleTarget.from_manifest(manifest["targets"][keys[0]]).bundle_args() if keys else "--x86"
    )
    line = installed.command(f"jetson-env bundle {shell_word(str(directory))} {args} --roles "
                             f"{shell_word(item['role'])} --no-controller")  # fmt: skip
    if item["kind"] in FILE_KINDS:
        kind = shell_word(item["kind"])
        return f"get it, then add it (PATH: the file you got): {line} --file {kind}=PATH"
    return f"fetch it again once its source answers: {line}"


def entry_roles(entry: dict[str, Any]) -> list[str]:
    """Every role an artifact is for: a wheel pycuda's build and torchvision's both need
    (setuptools) is fetched once and must reach a host where either role runs. (`role`, the
    first of them, is all that bundles made before `roles` say.)"""
    return entry.get("roles") or [entry["role"]]
