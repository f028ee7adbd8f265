"""What a host gets from a bundle: the playbook's preflight (filter bundle_plan) checks
every file the host's roles need before any change, and says where each one is."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from jetson_env import apt_repository
from jetson_env.bundle.manifest import (
    MANIFEST,
    BundleError,
    artifact_problem,
    entry_roles,
    load_manifest,
    sha256_of,
)
from jetson_env.bundle.needs import ROLES
from jetson_env.bundle.pip_resolution import project_of
from jetson_env.bundle.targets import Target, target_from_facts


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
        (p for p in artifacts.get("torch", []) if project_of(Path(p).name) == "torch"), ""
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
        "tensorrt_tarball": one("tensorrt", (".tar.gz",)),
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
