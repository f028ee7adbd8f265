"""A probed platform read against the matrix: its row, JetPack, compute capability.

The doctor, `info`, `plan` and --fix's keeping read platforms through describe().
"""

from __future__ import annotations

from typing import Any

from jetson_env.matrix import Matrix, UnknownRelease


def describe(platform: dict[str, Any], cuda: dict[str, Any], matrix: Matrix) -> dict[str, Any]:
    """Platform facts plus what the matrix says about them (JetPack, compute capability)."""
    unknown = dict(platform.get("unknown", {}))
    jetpack = matrix_row = assumed_from = None
    supported = not platform["is_jetson"]
    if platform["l4t"]:
        try:
            resolution = matrix.resolve(platform["l4t"])
        except UnknownRelease as exc:
            unknown["jetpack"] = str(exc)
        else:
            supported = True
            matrix_row, assumed_from = resolution.release.l4t, resolution.assumed_from
            if resolution.assumed:
                unknown["jetpack"] = (
                    f"L4T R{platform['l4t']} has no row in the matrix; R{matrix_row}'s (JetPack"
                    f" {resolution.release.jetpack}), the newest of its line, applies"
                )
            else:
                jetpack = resolution.release.jetpack
    compute_capability, why = matrix.device_capability(platform)
    if compute_capability is None:
        unknown["compute_capability"] = why
    if cuda.get("unknown", {}).get("version"):
        unknown["cuda"] = cuda["unknown"]["version"]
    return {
        "is_jetson": platform["is_jetson"],
        "machine": platform["machine"],
        "l4t": platform["l4t"],
        "l4t_source": platform["l4t_source"],
        "board": platform["board"],
        "jetpack": jetpack,
        "model": platform["model"],
        "soc": platform["soc"],
        "compute_capability": compute_capability,
        "gpus": platform.get("gpus") or [],
        "os": platform["os"],
        "python": platform["python"],
        "cuda": {
            "version": cuda.get("version"),
            "root": cuda.get("root"),
            "source": cuda.get("version_source"),
        },
        "supported": supported,
        "matrix_row": matrix_row,
        "assumed_from": assumed_from,
        "unknown": unknown,
    }
