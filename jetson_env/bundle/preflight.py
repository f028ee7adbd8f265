"""What a host gets from a bundle: the playbook's preflight (filter bundle_plan) checks
every file the host's roles need before any change, and says where each one is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jetson_env import installed, wheels
from jetson_env.bundle import signing
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.manifest import apt_files, artifact_problem, entry_roles
from jetson_env.bundle.needs import FILE_KINDS, ROLES, archive_version
from jetson_env.bundle.pip_resolution import project_of
from jetson_env.bundle.targets import BundleTarget, target_from_facts
from jetson_env.bundle.untrusted import (
    MANIFEST,
    read_manifest,
    read_manifest_sha256,
)
from jetson_env.checks.context import shell_word
from jetson_env.collection import provision_roles, roles_a_bundle

# Roles that fetch nothing: a bundle serves them whatever it holds.
OFFLINE_ROLES = roles_a_bundle("offline")


@dataclass(frozen=True)
class Provisioning:
    """A bundle checked for a playbook run from it (`provision --bundle`, `doctor --fix
    --bundle`): the roles to run when none are named (those it was made for, and those that
    need no download, in the playbook's order) and the variable that points them at it."""

    directory: Path
    roles: list[str]
    manifest_sha256: str  # of the manifest checked here (and signed, with --trust)

    @property
    def variables(self) -> dict[str, str]:
        """The play reads only the manifest checked here: host_plan and check_role refuse
        one with another sha256."""
        return {
            "jetson_env_bundle": str(self.directory),
            "jetson_env_bundle_manifest_sha256": self.manifest_sha256,
        }


def check_before_provision(directory: str | Path, trusted_key: Path | None) -> Provisioning:
    """`provision --bundle DIR [--trust KEY.pub]` (and `doctor --fix --bundle`) before any
    host is touched: DIR is a bundle whose manifest passes the untrusted-input rules, signed
    by that key when one is given (each host's preflight then checks every file it gets).
    The manifest is read once: the signature is checked on those bytes, and the play is
    handed their sha256, so what --trust verified is what the play reads."""
    directory = Path(directory).expanduser().resolve()
    manifest, manifest_sha256 = read_manifest_sha256(directory)
    if manifest is None:
        raise BundleError(
            f"{directory} is not a jetson-env bundle (no {MANIFEST})",
            hint="make one with "
            f"`{installed.command(f'jetson-env bundle {shell_word(str(directory))} --x86')}` "
            "(or --l4t, -i)",
        )
    if trusted_key is not None:
        signing.check(directory, trusted_key, manifest)
    made_for = {role for entry in manifest["targets"].values() for role in entry["roles"]}
    roles = [r for r in provision_roles() if r in made_for or r in OFFLINE_ROLES]
    return Provisioning(directory, roles, manifest_sha256)


def host_plan(
    directory: str | Path,
    platform: dict[str, Any],
    python: dict[str, Any],
    roles: dict[str, bool],
    manifest_sha256: str = "",
    cuda: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What a host with these facts can install from the bundle, for the roles that are on
    (`*_enabled`; --tags is Ansible's own), from the manifest with `manifest_sha256` (given:
    the one checked before the run; any other is an error): {"error": None | why (naming the
    `jetson-env bundle` line that fixes it), "target", "skipped": {role: why the bundle
    cannot serve it},
    "artifacts": {role: [paths]}, "pip": [paths to copy], "apt": ...}. The apt repository's
    files are checked here; a role's own files by check_role, once the role has decided what
    it installs (a kept torch needs none of torch's)."""
    directory = Path(directory).expanduser()
    if not directory.is_absolute():
        directory = directory.resolve()
    target = target_from_facts(platform, python, cuda)
    add_line = installed.command(
        f"jetson-env bundle {shell_word(str(directory))} {target.bundle_args()}"
    )
    try:
        manifest, manifest_sha256 = read_manifest_sha256(directory, manifest_sha256)
    except BundleError as exc:
        return {"error": f"{exc} ({exc.hint})" if exc.hint else str(exc)}
    if manifest is None:
        return {
            "error": f"{directory} is not a jetson-env bundle (no {MANIFEST}); make it with "
            f"`{add_line}`. Nothing was changed."
        }
    key = _matching_target(manifest, target)
    wanted = [r for r in ROLES if roles.get(r)]
    if key is None:
        return {
            "error": f"the bundle {directory} has nothing for {target.key} (this host); "
            "add it with "
            f"`{add_line} --roles {','.join(wanted)}`. Nothing was changed."
        }
    skipped = _skipped_roles(manifest, key, wanted, add_line)
    wanted = [role for role in wanted if role not in skipped]
    apt, apt_repo, debs, artifacts, problems = _served(directory, manifest, key, target, wanted)
    if problems:
        return {"error": _cannot_provision(directory, key, problems, add_line, wanted)}

    def one(role: str, suffix: tuple[str, ...]) -> str:
        """The role's file under files/ (a relative path), "" when it has none."""
        for path in artifacts.get(role, []):
            if path.startswith("files/") and path.endswith(suffix):
                return path
        return ""

    def absolute(path: str) -> str:
        return str(directory / path) if path else ""

    def sha256(path: str) -> str:
        return manifest["artifacts"][path]["sha256"] if path else ""

    # Every torchvision source archive, by the version it carries: the role takes its
    # pair's after deciding (and checks that file's sha256 and version.txt itself).
    torchvision_archives = {
        archive_version(Path(path).name): {"path": absolute(path), "sha256": sha256(path)}
        for path in artifacts.get("torchvision", [])
        if path.startswith("files/") and path.endswith((".tar.gz", ".zip"))
    }

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
        "skipped": skipped,
        "directory": str(directory),
        "manifest_sha256": manifest_sha256,
        "artifacts": artifacts,
        "pip": pip_files,
        "torch_wheel": absolute(torch_wheel),
        "torch_sha256": sha256(torch_wheel),
        "cusparselt": absolute(one("torch", (".tar.xz",))),
        "torchvision_archives": torchvision_archives,
        "add_line": add_line,
        "torch2trt_archive": absolute(one("torch2trt", (".tar.gz",))),
        "tensorrt_tarball": absolute(one("tensorrt", (".tar.gz", ".tar.zst"))),
        "apt": apt,
        "apt_repo": str(directory / apt_repo) if apt_repo else "",
        # package -> its .debs there: the role copies those that apt on the host asks for.
        "apt_files": debs,
        "summary": {
            role: [Path(p).name for p in paths if not p.startswith("apt/")]
            for role, paths in artifacts.items()
        },
    }


def _skipped_roles(
    manifest: dict[str, Any], key: str, wanted: list[str], add_line: str
) -> dict[str, str]:
    """The wanted roles the bundle cannot serve on the host of `key`, each with why and the
    `jetson-env bundle` line that adds it: a role the bundle was not made for, or whose file
    must be supplied by hand, is skipped and named (with where its file goes), not a refusal
    of the whole run."""
    skipped: dict[str, str] = {}
    have_roles = set(manifest["targets"][key].get("roles", []))
    for role in wanted:
        if role not in have_roles:
            skipped[role] = (
                f"the bundle was not made with {role} for {key}; add it with "
                f"`{add_line} --roles {role}`"
            )
    for item in manifest.get("manual", []):
        # torchvision's archive is asked for by the torchvision role once it has paired a
        # version with the torch the host keeps or gets (torchvision_archives in host_plan).
        if item["role"] == "torchvision":
            continue
        if key in item["targets"] and item["role"] in wanted and item["role"] in have_roles:
            before = skipped.get(item["role"], "")
            by_file = item["kind"] in FILE_KINDS  # else a download that failed: no --file
            add = f"{add_line} --roles {shell_word(item['role'])}" + (
                f" --file {shell_word(item['kind'])}=PATH" if by_file else ""
            )
            skipped[item["role"]] = (before + "; " if before else "") + (
                f"{item['what']} is not in the bundle and cannot be downloaded here: get it "
                f"from {item['where_from']} and add it as {item['expected']} with `{add}`"
            )
    return skipped


def _served(
    directory: Path, manifest: dict[str, Any], key: str, target: BundleTarget, wanted: list[str]
) -> tuple[dict[str, Any], str, dict[str, list[str]], dict[str, list[str]], list[str]]:
    """What the bundle serves the host of `key` for the `wanted` roles: its apt entry, its
    flat apt repository ("" where none serves a wanted role on this distribution) with the
    .debs of each package, each role's files, and the problems found (the repository is
    copied whole, so every file of it is checked here)."""
    problems = []
    artifacts: dict[str, list[str]] = {}
    apt = manifest.get("apt", {}).get(key, {})
    apt_repo = apt.get("repo") or ""
    if not (
        apt_repo
        and apt.get("distribution") == target.distribution
        and any(apt.get("roles", {}).get(role) for role in wanted)
    ):
        apt_repo = ""
    debs: dict[str, list[str]] = {}
    if apt_repo:
        try:
            debs = apt_files(directory, manifest, apt_repo)
        except BundleError as exc:
            problems.append(str(exc))
    for path, entry in sorted(manifest["artifacts"].items()):
        if apt_repo and path.startswith(apt_repo + "/"):
            problem = artifact_problem(directory, path, entry)
            if problem:
                problems.append(f"{path}: {problem}")
        if key not in entry["targets"]:
            continue
        for role in entry_roles(entry):
            if role in wanted:
                artifacts.setdefault(role, []).append(path)
    return apt, apt_repo, debs, artifacts, problems


def check_role(
    plan: dict[str, Any], role: str, lock_sha256: dict[str, str] | None = None
) -> dict[str, Any]:
    """The files of `plan` (host_plan's) that `role` is about to use, each against the
    manifest's sha256 and the lock file's: {"error": None | why, "checked": [paths]}. The
    playbook asks once the role has decided (after torch's keep decision; torchvision's
    fetch checks the archive of its pair itself), in a step tagged as the role is."""
    directory = Path(plan["directory"])
    try:
        manifest = read_manifest(directory, plan["manifest_sha256"])
    except BundleError as exc:
        return {"error": f"{exc} ({exc.hint})" if exc.hint else str(exc), "checked": []}
    if manifest is None:
        return {"error": f"{directory / MANIFEST} is gone. Nothing was changed.", "checked": []}
    archives = {archive["path"] for archive in plan["torchvision_archives"].values()}
    problems, checked = [], []
    for path in plan["artifacts"].get(role, []):
        if str(directory / path) in archives or path.startswith("apt/"):
            continue  # the torchvision role's own check; the apt repository's, host_plan's
        entry = manifest["artifacts"][path]
        problem = artifact_problem(directory, path, entry)
        locked = (lock_sha256 or {}).get(Path(path).name)
        if problem:
            problems.append(f"{path}: {problem}")
        elif locked and locked != entry["sha256"]:
            problems.append(
                f"{path}: the lock file pins sha256 {locked}, the bundle has {entry['sha256']}"
            )
        else:
            checked.append(path)
    if problems:
        error = _cannot_provision(directory, plan["target"], problems, plan["add_line"], [role])
        return {"error": error, "checked": []}
    return {"error": None, "checked": checked}


def _cannot_provision(
    directory: Path, key: str, problems: list[str], add_line: str, roles: list[str]
) -> str:
    return (
        f"the bundle {directory} cannot provision {key}: "
        + "; ".join(problems)
        + f". Fix it with `{add_line} --roles {','.join(roles)}` "
        "(after deleting a corrupted file), "
        f"then `{installed.command(f'jetson-env bundle --verify {shell_word(str(directory))}')}`."
        " Nothing was changed."
    )


def _matching_target(manifest: dict[str, Any], target: BundleTarget) -> str | None:
    """The bundle's target for a host: same machine, row and Python, a glibc the host's
    accepts (jetson_env.wheels, the doctor's rule too)."""
    for key, entry in manifest["targets"].items():
        if (entry["machine"], entry["l4t"], entry["python"]) != (
            target.machine,
            target.l4t,
            target.python,
        ):
            continue
        if wheels.glibc_accepts(target.glibc, entry["glibc"]):
            return key
    return None
