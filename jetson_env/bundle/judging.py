"""Whether the wheels a bundle carries have kernels for each target's GPU, judged before the
bundle is written as complete: a wheel that installs and imports but fails its first launch
with "no kernel image is available for execution on the device" on the target (PyPI's
aarch64 torch, sm_80 and up, on a JetPack 6 Orin: sm_87, no binary compatibility on Tegra
before CUDA 13.2) is refused for that target unless the user ships it anyway
(`--allow-no-kernel`).

Each ELF shared object of a wheel is read by the kernels probe's own reader
(jetson_env.probes.kernels.read_elf: the fatbin's SASS and PTX, kernel-less cubins, the
fatbins a library loads itself), the member extracted to a temporary file first (the reader
seeks; a deflated zip member does not), each bounded by MEMBER_LIMIT. Wheels are read
READ_WORKERS at a time, in threads: the time is zlib's, which releases the GIL. The
reading is kept in the manifest with the artifact (its sha256 never changes), so a wheel is
read once. The rules are jetson_env.device_code's, per compute capability the target has:
a Jetson release's are its family's SoCs' (the matrix), or the host's own with `-i`; an x86
target's only from `-i` facts (its first GPU's).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
import tempfile
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from jetson_env import device_code, provisioning
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.targets import BundleTarget
from jetson_env.matrix import Matrix
from jetson_env.probes import kernels as probe

MEMBER_LIMIT = 8 << 30  # bytes of one shared object of a wheel (torch's largest: ~1.5 GB)
# Wheels read at once: each holds one extracted member on disk while it is read. The CPUs this
# process may run on (a container's cpuset), not the machine's.
_USABLE_CPUS = (
    len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
)
READ_WORKERS = min(4, _USABLE_CPUS)
NOT_JUDGED = "not-judged"
WORST = (device_code.NO_KERNEL, device_code.PTX_TOO_NEW, device_code.JIT, device_code.RUNS)
NO_CAPABILITY = "not judged: no compute capability known (give -i facts from the host)"
ALLOW = "--allow-no-kernel"


def read_wheel(path: Path) -> dict[str, Any]:
    """{"files": {member: its device code}} for the wheel's shared objects that carry any,
    with "unread" saying which members could not be read (the probe's reader refuses an object
    stripped of its section headers); {"unread": why} alone where the wheel cannot be read."""
    files: dict[str, Any] = {}
    unread: list[str] = []
    try:
        with (
            zipfile.ZipFile(path) as wheel,
            tempfile.TemporaryDirectory(prefix="jetson-env-wheel-") as tmp,
        ):
            for info in wheel.infolist():
                if info.is_dir() or not probe.shared_object(info.filename):
                    continue
                if info.file_size > MEMBER_LIMIT:
                    return {"unread": f"{info.filename} is larger than {MEMBER_LIMIT >> 30} GiB"}
                copy = Path(tmp) / "member"
                with wheel.open(info) as member, open(copy, "wb") as out:
                    shutil.copyfileobj(member, out, 1 << 20)
                try:
                    elf = probe.read_elf(str(copy))
                except (ValueError, struct.error) as exc:
                    unread.append(f"{info.filename}: {exc}")
                    continue
                finally:
                    copy.unlink()
                if elf and (elf["sass"] or elf["ptx"] or elf["loaded"] or elf["kernelless"]):
                    files[info.filename] = {key: elf[key] for key in
                                            ("sass", "kernelless", "ptx", "loaded")}  # fmt: skip
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        return {"unread": f"{path.name}: {exc}"[:4000]}
    return {"files": files, **({"unread": "; ".join(unread)[:4000]} if unread else {})}


def capabilities(matrix: Matrix, target: BundleTarget, known: dict[str, set[str]]) -> list[str]:
    """The compute capabilities a target's hosts have: those `-i` read (`known`, by target
    key), else a Jetson release's family's SoCs' (the matrix); [] for an x86 target."""
    if known.get(target.key):
        return sorted(known[target.key])
    if not target.l4t:
        return []
    socs = matrix.family(matrix.release(target.l4t).family).get("socs") or []
    return sorted({c for c in map(matrix.compute_capability, socs) if c})


def verdicts(
    matrix: Matrix, target: BundleTarget, reading: dict[str, Any], gpus: list[str]
) -> list[dict[str, str]]:
    """One verdict per compute capability: the worst of the wheel's files (device_code's
    rules; a Jetson's driver is its release's CUDA)."""
    if not any(device_code.carries_code(e) for e in (reading.get("files") or {}).values()):
        return [
            {"capability": "", "verdict": NOT_JUDGED, "why": f"not judged: {reading['unread']}"}
        ]
    if not gpus:
        return [{"capability": "", "verdict": NOT_JUDGED, "why": NO_CAPABILITY}]
    cuda = matrix.release(target.l4t).cuda if target.l4t else None
    found = []
    for capability in gpus:
        judged = [
            (member, device_code.judge_file(entry, capability, bool(target.l4t), cuda, cuda))
            for member, entry in sorted((reading.get("files") or {}).items())
            if device_code.carries_code(entry)
        ]
        member, worst = min(judged, key=lambda item: WORST.index(item[1].state))
        found.append({"capability": capability, "verdict": worst.state,
                      "why": f"{member}: {worst.why}"})  # fmt: skip
    return found


def fix(matrix: Matrix, target: BundleTarget, wheel: str, capability: str) -> str:
    """What to bundle instead: the matrix's torch for the release (x86: its x86 row's), else
    a build of the package that carries the GPU's SASS or PTX."""
    name = wheel.split("-")[0].lower().replace("_", "-")
    release = matrix.release(target.l4t) if target.l4t else matrix.x86
    row = f"R{release.l4t} (JetPack {release.jetpack})" if target.l4t else "x86"
    if name == "torch":
        source = provisioning.torch_source(dataclasses.asdict(release.torch))
        where = source["url"] or (source["index"] or "pip's configured index")
        return (
            f"bundle the matrix's torch for {row}: torch {release.torch.version} from {where}, "
            "which `jetson-env bundle` fetches without --file torch"
        )
    sm = capability.replace(".", "")
    return f"bring a build of {name} that carries sm_{sm} (or compute_{sm} PTX) for {row}"


def judge_bundle(
    directory: Path,
    manifest: dict[str, Any],
    matrix: Matrix,
    targets: list[BundleTarget],
    known: dict[str, set[str]],
    allow: bool,
    required: set[tuple[str, str]],
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Every wheel of the bundle that `targets` use, read (once: kept in its manifest entry
    as `device_code`) and judged for each of them; its verdicts recorded per target. The
    refusals (no kernel, or PTX the driver cannot compile, and not `allow`), each
    {"path", "target", "capability", "verdict", "why", "fix"}, are returned and not shipped:
    the target is taken off the wheel's entry, and a wheel no target keeps leaves the
    bundle. Returns every finding that is not "runs" ("refused" true for a refusal).

    A wheel in the bundle because torch requires it (`required`: (path, target key)) is
    never refused (device_code.blocks), its finding's "required_by" saying so."""
    by_key = {t.key: t for t in targets}
    used = {
        path: entry
        for path, entry in sorted(manifest["artifacts"].items())
        if path.endswith(".whl") and any(k in by_key for k in entry["targets"])
    }
    unread = [path for path, entry in used.items() if entry.get("device_code") is None]
    readings: dict[str, dict[str, Any]] = {}
    pool = ThreadPoolExecutor(READ_WORKERS)
    try:
        done = pool.map(read_wheel, [directory / path for path in unread])
        for path in unread:  # said here, in order, as the readings come in
            say(f"reading the device code of {path}")
            readings[path] = next(done)
    finally:  # Ctrl-C: the wheels not yet begun are not read
        pool.shutdown(wait=False, cancel_futures=True)
    findings: list[dict[str, str]] = []
    for path, entry in used.items():
        users = [by_key[k] for k in entry["targets"] if k in by_key]
        code = entry.get("device_code")
        if code is None:
            code = {"reading": readings[path], "targets": {}}
        reading = code["reading"]
        if not reading.get("unread") and not any(
            device_code.carries_code(e) for e in (reading.get("files") or {}).values()
        ):
            entry["device_code"] = code
            continue
        for target in users:
            judged = verdicts(matrix, target, reading, capabilities(matrix, target, known))
            dependency = (path, target.key) in required
            refused = (
                [] if allow else [v for v in judged if device_code.blocks(v["verdict"], dependency)]
            )
            for verdict in judged:
                if verdict["verdict"] == device_code.RUNS:
                    continue
                capability = verdict["capability"]
                instead = fix(matrix, target, Path(path).name, capability) if capability else ""
                findings.append({"path": path, "target": target.key, **verdict,
                                 "refused": verdict in refused, "fix": instead,
                                 "required_by": "torch" if dependency else None})  # fmt: skip
            if refused:
                entry["targets"].remove(target.key)
            else:
                code["targets"][target.key] = judged
        entry["device_code"] = code
    return findings


def refusal(findings: list[dict[str, Any]]) -> BundleError | None:
    """The error a run with refused wheels ends with, or None."""
    refused = [f for f in findings if f["refused"]]
    if not refused:
        return None
    lines = [
        f"{f['path']} is refused for {f['target']} (compute capability {f['capability']}): "
        f"{f['why']}; {f['fix']}"
        for f in refused
    ]
    return BundleError(
        "the bundle is not complete: " + " | ".join(lines),
        hint=f"bundle a build with kernels for those GPUs, or ship it anyway with {ALLOW} "
        "(the manifest records the verdict); a --l4t target is judged for every module its "
        "release runs on, `-i INVENTORY` for your hosts' own GPUs",
    )
