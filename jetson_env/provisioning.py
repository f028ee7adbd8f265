"""What the playbook provisions on a host: its matrix row and what follows from it.

The roles only read this (through playbooks/filter_plugins/jetson_env.py), so row
selection, the torch -> torchvision pairing and SoC -> compute capability have one
implementation, the one the doctor and the images use.
"""

from __future__ import annotations

from typing import Any

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
        gpus = platform.get("gpus") or []
        return {
            "error": None,
            "family": "x86",
            "l4t": "",
            "assumed_from": None,
            "row": dict(matrix.raw["x86"]),
            "compute_capability": (gpus[0].get("compute_capability") or "") if gpus else "",
            "platform_key": f"{machine}-x86-{python['tag']}",
            "pycuda": matrix.pycuda_for(python["version"]),
        }
    try:
        release = matrix.release(l4t)
        assumed_from = None
    except UnknownRelease as exc:
        newest = matrix.newest_of_line(l4t)
        if newest is None:
            return _error(f"{exc} ({host}).")
        if not allow_newer_point_release:
            line = newest.l4t.rsplit(".", 1)[0]
            return _error(
                f"{exc} ({host}). It is a point release of the R{line} line, whose "
                f"newest row is R{newest.l4t}: to provision with that row, set "
                f"{ALLOW_NEWER_POINT_RELEASE}=true (or add a row for R{l4t} to the matrix)."
            )
        release, assumed_from = newest, newest.l4t
    raw = matrix.raw
    return {
        "error": None,
        "family": release.family,
        "l4t": release.l4t,
        "assumed_from": assumed_from,
        "row": {**raw["releases"][release.l4t], **raw["families"][release.family]},
        "compute_capability": matrix.compute_capability(platform.get("soc")) or "",
        "platform_key": f"{machine}-l4t{l4t}-{python['tag']}",
        "pycuda": matrix.pycuda_for(python["version"]),
    }


def torchvision_tag_for(matrix: Matrix, torch_version: str) -> str:
    """The torchvision release built for a torch version: its pair's first release (x.y.0)."""
    paired = matrix.torchvision_for(torch_version)
    if paired is None:
        raise UnknownRelease(
            f"torch {torch_version} has no torchvision pair in the matrix (torchvision_pairs); "
            "set torchvision_version"
        )
    return f"{paired}.0"


def _error(message: str) -> dict[str, Any]:
    return {"error": f"{message} Nothing was changed."}
