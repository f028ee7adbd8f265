"""`jetson-env info`: what the probes see on a target, read against the matrix."""

from __future__ import annotations

from typing import Any

from jetson_env.matrix import Matrix, UnknownRelease
from jetson_env.probing import Unusable, probe_all
from jetson_env.targets import Target

SCHEMA = 1
PROBES = ("platform", "cuda")


def describe(platform: dict[str, Any], cuda: dict[str, Any], matrix: Matrix) -> dict[str, Any]:
    """Platform facts plus what the matrix says about them (JetPack, compute capability)."""
    unknown = dict(platform.get("unknown", {}))
    jetpack = None
    supported = not platform["is_jetson"]
    if platform["l4t"]:
        try:
            jetpack = matrix.release(platform["l4t"]).jetpack
            supported = True
        except UnknownRelease as exc:
            unknown["jetpack"] = str(exc)
    if platform["is_jetson"]:
        compute_capability = matrix.compute_capability(platform["soc"])
        if compute_capability is None:
            unknown["compute_capability"] = (
                f"SoC {platform['soc']!r} is not in the matrix"
                if platform["soc"]
                else unknown.get("soc", "SoC unknown")
            )
    else:
        gpus = platform.get("gpus") or []
        compute_capability = gpus[0]["compute_capability"] if gpus else None
        if compute_capability is None:
            unknown["compute_capability"] = unknown.get("gpus", "no NVIDIA GPU found")
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
        "unknown": unknown,
    }


def gather(target: Target, matrix: Matrix, timeout: float | None = None) -> dict[str, Any]:
    """Run the info probes; a failed probe is reported under `errors`, not raised.

    An interpreter that cannot run probes at all is one error, `interpreter`, with
    what to do under `remedies`."""
    try:
        results = probe_all(target, PROBES, timeout)
    except Unusable as exc:
        return {
            "schema": SCHEMA,
            "platform": None,
            "errors": {"interpreter": str(exc)},
            "remedies": {"interpreter": exc.remedy},
        }
    failed = {name: r.error for name, r in results.items() if not r.ok}
    if not failed:
        try:
            platform = describe(results["platform"].data, results["cuda"].data, matrix)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            failed = {"platform": f"probe 'platform' printed facts of another shape: {exc!r}"}
    if failed:
        return {"schema": SCHEMA, "platform": None, "errors": failed, "remedies": {}}
    return {"schema": SCHEMA, "platform": platform, "errors": {}, "remedies": {}}
