"""A bundle's manifest (manifest.json): its targets, every artifact with its sha256 and
size, what must be supplied by hand and the apt packages each target needs; and the check
of the bundle's files against it (`jetson-env bundle --verify`)."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
SCHEMA = 1
CHUNK = 1 << 20


class BundleError(Exception):
    """The bundle cannot be made or used as asked; nothing was replaced. `hint` says what
    to do next."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


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


def entry_roles(entry: dict[str, Any]) -> list[str]:
    """Every role an artifact is for: a wheel pycuda's build and torchvision's both need
    (setuptools) is fetched once and must reach a host where either role runs. (`role`, the
    first of them, is all that bundles made before `roles` say.)"""
    return entry.get("roles") or [entry["role"]]
