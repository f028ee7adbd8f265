"""The bundle's flat apt repositories: the .debs each target's roles need, their
dependencies included (resolved against the controller's copy of the distribution's package
lists, jetson_env.apt_repository), and each repository's Packages and Release written beside
them, as every file of the bundle is."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetson_env import apt_repository
from jetson_env.bundle.fetching import CACHE, Fetch
from jetson_env.bundle.manifest import disk_error
from jetson_env.bundle.targets import BundleTarget
from jetson_env.bundle.untrusted import PACKAGES_MAX_BYTES, NewFile, read_checked


def apt_fetches(
    target: BundleTarget,
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
        "download": apt_repository.download_line(missing) if missing else "",
    }
    return fetches


def write_apt_repositories(
    directory: Path, manifest: dict[str, Any], stanzas: dict[str, str]
) -> None:
    """Packages and Release of every apt repository this run added to, written as every
    file of the bundle is (untrusted.NewFile); the manifest keeps the Packages file's sha256
    for --verify and the preflight. The entries of a Packages already there are kept when it
    is the one the manifest records."""
    repos = manifest.setdefault("apt_repos", {})
    for repo in sorted({str(Path(path).parent) for path in stanzas}):
        mine = {
            Path(path).name: text
            for path, text in stanzas.items()
            if str(Path(path).parent) == repo and path in manifest["artifacts"]
        }
        recorded = repos.get(repo, {}).get("packages_sha256")
        previous = (
            read_checked(directory, f"{repo}/Packages", recorded, PACKAGES_MAX_BYTES).decode()
            if recorded
            else ""
        )
        present = {path.rpartition("/")[2] for path in manifest["artifacts"]
                   if path.startswith(repo + "/")}  # fmt: skip
        packages = apt_repository.repository_index(previous, mine, present)
        try:
            for name, data in (("Packages", packages),
                               ("Release", apt_repository.release_of(packages))):  # fmt: skip
                with NewFile(directory, f"{repo}/{name}", f".{name}.part") as new:
                    new.write(data)
                    new.commit()
        except OSError as exc:
            raise disk_error(directory, exc) from None
        repos[repo] = {"packages_sha256": hashlib.sha256(packages).hexdigest()}
