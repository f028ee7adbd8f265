"""What the playbook provisions on a host: its matrix row and what follows from it.

The roles only read this (through the collection's filters, plugins/filter/jetson_env.py), so row
selection (Matrix.resolve), the torch -> torchvision pairing, the compute capability
(Matrix.device_capability), where torch comes from (torch_source) and what a role installs
with pip and apt (role_installs) have one implementation, the one the doctor, the images and
a bundle (jetson_env.bundle.needs, with the roles' defaults) use.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.version import InvalidVersion, Version

from jetson_env import pairing, pins
from jetson_env.matrix import Matrix, UnknownRelease

ALLOW_NEWER_POINT_RELEASE = "jetson_facts_allow_newer_point_release"


def plan(
    matrix: Matrix,
    platform: dict[str, Any],
    python: dict[str, Any],
    host: str,
    allow_newer_point_release: bool = False,
) -> dict[str, Any]:
    """The host's row and derived values, or {"error": why} (nothing is changed then).

    `platform` and `python` are the jetson_env_facts module's facts. An L4T point
    release the matrix does not list, of a line it does (R36.4.9), uses the line's
    newest row only when allowed; `assumed_from` then names the row used.
    """
    machine = platform.get("machine") or ""
    l4t = platform.get("l4t") or ""
    if platform.get("is_jetson") and not l4t:
        reason = (platform.get("unknown") or {}).get("l4t", "unknown reason")
        return _error(
            f"{host} is a Jetson ({platform.get('soc')}) but its L4T release could not be "
            f"read: {reason}."
        )
    if not platform.get("is_jetson"):
        if machine != "x86_64":
            return _error(
                f"{host} is {machine} but not a Jetson (no L4T release, no tegra SoC): only "
                "Jetsons and x86_64 hosts are supported."
            )
        return {
            "error": None,
            "family": "x86",
            "l4t": "",
            "assumed_from": None,
            "row": dict(matrix.raw["x86"]),
            "compute_capability": matrix.device_capability(platform)[0] or "",
            "platform_key": f"{machine}-x86-{python['tag']}",
            "pycuda": matrix.pycuda_for(python["version"]),
        }
    try:
        resolution = matrix.resolve(l4t)
    except UnknownRelease as exc:
        return _error(f"{exc} ({host}).")
    release, assumed_from = resolution.release, resolution.assumed_from
    if resolution.assumed and not allow_newer_point_release:
        line = release.l4t.rsplit(".", 1)[0]
        return _error(
            f"L4T R{l4t} has no row of its own ({host}). It is a point release of the R{line}"
            f" line, whose newest row is R{release.l4t}: to provision with that row, set "
            f"{ALLOW_NEWER_POINT_RELEASE}=true (or add a row for R{l4t} to the matrix)."
        )
    raw = matrix.raw
    return {
        "error": None,
        "family": release.family,
        "l4t": release.l4t,
        "assumed_from": assumed_from,
        "row": {**raw["releases"][release.l4t], **raw["families"][release.family]},
        "compute_capability": matrix.device_capability(platform)[0] or "",
        "platform_key": f"{machine}-l4t{l4t}-{python['tag']}",
        "pycuda": matrix.pycuda_for(python["version"]),
    }


def torch_source(
    matrix_torch: dict[str, Any],
    wheel_file: str = "",
    wheel_url: str = "",
    pip_index: str = "",
    version: str = "",
) -> dict[str, Any]:
    """THE torch source rule: where torch comes from for a host, given its matrix row's
    `torch` and the torch role's overrides (torch_wheel_file, torch_wheel_url,
    torch_pip_index, torch_version). Precedence: a wheel file on the controller, a wheel
    URL, a pip index (override), then the matrix's wheel URL, then the matrix's index
    (None = pip's configured one). The matrix's sha256 applies only to the matrix's own
    source. Strings only ("" = none): ansible-core 2.16 renders None as "None".

    Returns {"kind": "file"|"url"|"index", "url", "filename", "index", "version",
    "overridden", "matrix_sha256"}."""
    matrix_url = str(matrix_torch.get("url") or "")
    kind = (
        "file" if wheel_file
        else "url" if wheel_url
        else "index" if pip_index
        else "url" if matrix_url
        else "index"
    )  # fmt: skip
    url = wheel_url or matrix_url
    if kind != "url":
        url = ""
    if url and url == matrix_url and matrix_torch.get("filename"):
        filename = str(matrix_torch["filename"])  # box.com URLs do not name their wheel
    else:
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) if url else ""
    overridden = bool(wheel_file or wheel_url or pip_index or version)
    return {
        "kind": kind,
        "url": url,
        "filename": filename,
        "index": pip_index or ("" if kind != "index" else str(matrix_torch.get("index") or "")),
        "version": str(version or matrix_torch.get("version") or ""),
        "overridden": overridden,
        "matrix_sha256": "" if overridden else str(matrix_torch.get("sha256") or ""),
    }


def role_installs(
    role: str,
    row: dict[str, Any],
    variables: dict[str, Any],
    installed: dict[str, str] | None = None,
) -> dict[str, list[str]]:
    """What `role` installs for its matrix `row` and its `variables` (the role's own, by their
    full names: the defaults a bundle is made for, or the host's): {"pip": requirements,
    "apt": packages}. `installed`: the host's pip packages (an installed numpy of the row's
    pinned major is kept, jetson_env.pins); none for a bundle, which brings the pin."""
    installed = installed or {}
    if role == "python_base":
        sets, own_numpy = variables["python_base_sets"], variables["python_base_numpy"]
        numpy = pins.requirement_for(own_numpy or row["numpy"], installed.get("numpy") or None,
                                     bool(own_numpy))  # fmt: skip
        apt = [*(row["apt_prerequisites"] if variables["python_base_matrix_apt_packages"] else []),
               *variables["python_base_apt_packages"]]  # fmt: skip
        return {
            "pip": [*([numpy] if "numpy" in sets and numpy else []),
                    *(row["pip_prerequisites"] if "prerequisites" in sets else []),
                    *(variables["python_base_pip_packages"] if "packages" in sets else [])],
            "apt": apt if "apt" in sets else [],
        }  # fmt: skip
    if role == "torchvision":
        # Its build's pip set: the row's numpy first, then the build requirements.
        numpy = pins.requirement_for(row["numpy"], installed.get("numpy") or None)
        return {
            "pip": [*([numpy] if numpy else []), *variables["torchvision_build_pip_packages"]],
            "apt": list(variables["torchvision_apt_packages"]),
        }
    raise ValueError(f"role_installs: no rule for the role {role}")


def onnx_export_packages(matrix: Matrix, row: dict[str, Any], tensorrt: str | None) -> list[str]:
    """What the tensorrt role's onnx set installs for a host with this TensorRT: the row's
    onnx_export_packages (what torch.onnx.export needs with the row's torch) where that
    TensorRT offers the ONNX converter (the matrix's converters), else nothing. The role (the
    filter of the same name) and a bundle (jetson_env.bundle.needs) both ask here."""
    if not matrix.converters.supports("onnx", tensorrt):
        return []
    return [str(package) for package in row.get("onnx_export_packages") or []]


def numpy_major(requirement: str) -> str:
    """The row's numpy requirement widened to its major ("numpy==1.26.1" -> "numpy>=1,<2"),
    installed beside packages that need numpy: pip then keeps the numpy python_base chose (or
    the user's of that major) instead of taking a newer major for them (onnx's ml_dtypes)."""
    pinned = pins.exact_pin(requirement)
    if pinned is None:
        return requirement
    return f"numpy>={pinned.major},<{pinned.major + 1}"


def torchvision_tag_for(matrix: Matrix, torch_version: str, row_torchvision: str = "") -> str:
    """The torchvision release built for a torch version (jetson_env.pairing): the row's
    own where it pairs, else the pair's first release ("2.15.0" -> "0.29.1")."""
    found = matrix.torchvision_pair(torch_version)
    if found is None:
        raise UnknownRelease(
            f"torch {torch_version} has no torchvision pair in the matrix (torchvision_pairs); "
            "set torchvision_version"
        )
    return pairing.tag(found, row_torchvision)


def torchvision_kept(
    matrix: Matrix, installed: str, torch_version: str, wanted_version: str = ""
) -> bool:
    """Whether the installed torchvision stays: it is the release asked for where one is
    (torchvision_version, its local label aside: the user's pin wins over the pairing, which
    the doctor still reports), else it pairs with the torch it runs with (the pairing rule, so
    0.26.0+cu130 with torch 2.11)."""
    if not installed or not torch_version:
        return False
    if wanted_version:
        try:
            return Version(Version(installed).public) == Version(wanted_version)
        except InvalidVersion:
            return False
    found = matrix.torchvision_pair(torch_version)
    return found is not None and found.admits(installed)


def _error(message: str) -> dict[str, Any]:
    return {"error": f"{message} Nothing was changed."}
