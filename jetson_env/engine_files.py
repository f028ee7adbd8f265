"""The one rule for engine files: does a serialized TensorRT engine load on a host?

The doctor's portability check (the smoke's engine), `doctor --engines` (each engine file)
and `plan --engines` (each engine file after the upgrade) all ask it here. An engine is
read by the engines probe (jetson_env/probes/engines.py): the TensorRT that built it from
its header or a sidecar, the compute capability and compatibility settings from a sidecar.

TensorRT loads a plain engine only on the release that built it (major.minor.patch; the
build may differ) and the compute capability it was built for. A version-compatible engine
(BuilderFlag kVERSION_COMPATIBLE, from 8.6 on) also loads on any later TensorRT, across
majors too (TensorRT's "Engine Compatibility" pages, 10.16.1 and 11.1.0: "engines built with
TensorRT 8 work with TensorRT 9 and TensorRT 10 runtimes", "built with TensorRT 10 work with
TensorRT 11"); a hardware-compatible one (HardwareCompatibilityLevel kAMPERE_PLUS) on any GPU
of compute capability 8.0 or newer (NVIDIA/TensorRT include/NvInfer.h). A plan's header does
not say whether either was set: only a sidecar does.
"""

from __future__ import annotations

from typing import Any

LOADS, REBUILD, UNKNOWN = "loads", "rebuild", "unknown"
VERDICTS = (REBUILD, UNKNOWN, LOADS)  # worst first
RELEASE_PARTS = 3  # major.minor.patch
VERSION_COMPATIBLE_FROM = [8, 6]  # the first TensorRT that builds version-compatible engines


def _parts(version: str) -> list[int] | None:
    try:
        return [int(part) for part in str(version).split(".")[:RELEASE_PARTS]]
    except ValueError:
        return None


def _capability(value: str | None) -> tuple[int, int] | None:
    try:
        major, minor = str(value).split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def verdict(
    engine: dict[str, Any], tensorrt: str | None, capability: str | None, after: str = ""
) -> tuple[str, str]:
    """(LOADS, REBUILD or UNKNOWN, the sentence that says why) for an engine of the engines
    probe where TensorRT `tensorrt` runs on compute capability `capability`. after: the
    release an upgrade moves this host to (R39.2.2); the engine stays on its GPU, so only
    the TensorRT is in question. A version the host or the matrix names without a patch
    compares on the parts it names."""
    same_gpu = bool(after)
    built = engine.get("tensorrt")
    if not built:
        return UNKNOWN, f"unknown: {engine.get('unknown') or 'its TensorRT was not read'}"
    if not tensorrt:
        return UNKNOWN, f"unknown: built by TensorRT {built}; this host's TensorRT was not found"
    built_parts, here_parts = _parts(built), _parts(tensorrt)
    if built_parts is None or here_parts is None:
        return UNKNOWN, f"unknown: TensorRT {built} or {tensorrt} is not a version"
    common = min(len(built_parts), len(here_parts))
    built_for = engine.get("compute_capability")
    if same_gpu:
        built_by, here = f"TensorRT {built}", f"{after} has TensorRT {tensorrt}"
    else:
        built_by = f"TensorRT {built} " + (f"for compute capability {built_for}" if built_for
                                           else "(compute capability unknown)")  # fmt: skip
        here = f"this host has TensorRT {tensorrt} and compute capability {capability or '?'}"
    rebuild = f"rebuild: built by {built_by}, {here}"
    caveats = []
    if built_parts[:common] != here_parts[:common]:
        forward = (built_parts[:common] < here_parts[:common]
                   and built_parts[:2] >= VERSION_COMPATIBLE_FROM)  # fmt: skip
        compatible = engine.get("version_compatible")
        if not (forward and compatible):
            if forward and compatible is None:
                rebuild += (" (unless it was built version-compatible, which its header does not "
                            "record)")  # fmt: skip
            return REBUILD, rebuild
        caveats.append("version-compatible: loads on a later TensorRT")
    if not same_gpu:
        if not capability:
            return UNKNOWN, f"unknown: built by TensorRT {built}; no compute capability found here"
        if engine.get("hardware_compatibility") == "ampere_plus":
            host = _capability(capability)
            if host is None or host < (8, 0):
                return REBUILD, rebuild + " (hardware-compatible engines load from 8.0 on)"
            caveats.append("hardware-compatible: loads on compute capability 8.0 and newer")
        elif not built_for:
            return UNKNOWN, (f"unknown: built by TensorRT {built}, which loads with this host's "
                             f"{tensorrt}; the compute capability it was built for (and whether it "
                             "was built hardware-compatible) is not in its header and no sidecar "
                             "says it")  # fmt: skip
        elif built_for != capability:
            return REBUILD, rebuild
    said = f"TensorRT {built}" + (f", compute capability {built_for}" if built_for else "")
    on = f"loads on {after}'s TensorRT {tensorrt}" if same_gpu else "loads here"
    return LOADS, f"{on} ({said}" + "".join(f"; {c}" for c in caveats) + ")"


def worst(verdicts: list[str]) -> str:
    return min(verdicts, key=VERDICTS.index, default=LOADS)
