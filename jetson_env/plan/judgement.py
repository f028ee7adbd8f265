"""`jetson-env plan --to RELEASE`: what a JetPack upgrade or an OTA does to a host's stack.

Pure judgement: a host's facts (the platform as `info` describes it, and the plan's probes:
compiled, kernels, engines, apt_upgrade) + its matrix row now + the target row -> one verdict
per part, with the reason. Nothing here runs a probe or prints (jetson_env.plan.assembly does).

Verdicts, worst first: blocked (the upgrade cannot go on as it is), rebuild (compiled here
against something that changes), reinstall (a binary or package of the target row replaces
it), unknown (not read; the reason says why), survives.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from jetson_env import device_code, engine_files, installed
from jetson_env.matrix import Matrix, Release, UnknownRelease, normalize_l4t
from jetson_env.provisioning import torchvision_tag_for

SCHEMA = 1
VERDICTS = ("blocked", "rebuild", "reinstall", "unknown", "survives")  # worst first
APT = "apt"  # an upgrade within a major release: NVIDIA's apt repository, suite by suite
REFLASH = "reflash"  # a new major release: flashed or an image-based OTA; only /ota survives
CUDA_LIBRARY = re.compile(
    r"^lib(cudart|cublas|cublasLt|nvrtc|cusparse|cusolver|curand|cufft|nvjpeg|npp\w*)\.so\.\d+"
)
TORCH_LIBRARY = re.compile(r"^lib(c10|torch|torch_cpu|torch_cuda|torch_python)\.so$")
NVINFER = re.compile(r"^libnvinfer\.so\.(\d+)$")
# Debian Policy 5.6.1 (and apt's ":ARCH" suffix): what a printed apt command may name.
DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+(:[a-z0-9-]+)?")
# Parts with a role of their own: what the roles install or build for the target row.
ROLE_PARTS = {"torch": "torch", "torchvision": "torchvision", "pycuda": "pycuda",
              "torch2trt": "torch2trt"}  # fmt: skip


class Refused(Exception):
    """The plan cannot be made for this target: a downgrade, a release the matrix does not
    support, a host or line the release is not for. The message says why."""


@dataclass(frozen=True)
class Part:
    kind: str  # torch, torchvision, compiled, python, engine, apt, image
    name: str
    now: str
    after: str
    verdict: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "now": self.now, "after": self.after,
                "verdict": self.verdict, "reason": self.reason}  # fmt: skip


def worst(verdicts: list[str]) -> str:
    return min(verdicts, key=VERDICTS.index, default="survives")


def target_release(matrix: Matrix, to: str) -> Release:
    """The row of --to: its own row only (a plan names a release, not a line's newest);
    UnknownRelease names the supported ones, or the reason a release is left out."""
    return matrix.release(normalize_l4t(to))


def _major(version: str) -> str:
    return version.split(".")[0]


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def row_summary(release: Release) -> dict[str, str]:
    return {"l4t": release.l4t, "jetpack": release.jetpack, "cuda": release.cuda,
            "tensorrt": release.tensorrt, "python": release.python,
            "torch": release.torch.version, "torch_cuda": release.torch.cuda or release.cuda,
            "ubuntu": release.ubuntu}  # fmt: skip


def move(matrix: Matrix, platform: dict[str, Any], target: Release) -> tuple[Release, str]:
    """(the host's row now, APT or REFLASH), or Refused with the reason."""
    if not platform.get("is_jetson"):
        raise Refused(
            f"the host is {platform.get('machine') or 'not a Jetson'}, not a Jetson: it has no "
            f"L4T release, and JetPack {target.jetpack} (R{target.l4t}) is for Jetsons only; an "
            "x86 host follows its own driver and CUDA, see "
            f"`{installed.command('jetson-env matrix')}`"
        )
    l4t = platform.get("l4t")
    if not l4t:
        why = (platform.get("unknown") or {}).get("l4t", "unknown reason")
        raise Refused(f"the host's L4T release could not be read ({why})")
    try:
        current = matrix.resolve(l4t).release
    except UnknownRelease as exc:
        raise Refused(f"the host's release is not supported: {exc}") from None
    if Version(normalize_l4t(l4t)) > Version(target.l4t):
        raise Refused(
            f"R{target.l4t} is older than the host's R{l4t}: a downgrade (JetPack "
            f"{target.jetpack}), which neither apt nor an OTA does; flash R{target.l4t} instead"
        )
    socs = matrix.family(target.family).get("socs") or []
    soc = platform.get("soc")
    if soc not in socs:
        raise Refused(
            f"R{target.l4t} (JetPack {target.jetpack}) is not for this host's SoC "
            f"{soc or 'unknown'}: its line runs on {', '.join(socs)}; no upgrade or OTA "
            "moves a host onto a line its module is not supported by"
        )
    kind = APT if _major(current.l4t) == _major(target.l4t) else REFLASH
    return current, kind


def _base(version: str | None) -> tuple[int, ...] | None:
    try:
        return Version(version).release[:3] if version else None
    except InvalidVersion:
        return None


def judge(
    matrix: Matrix,
    platform: dict[str, Any],
    facts: dict[str, Any],
    current: Release,
    target: Release,
    kind: str,
) -> list[Part]:
    """Every part's verdict. facts: {"compiled": ..., "kernels": ..., "engines": ...,
    "apt_upgrade": ...} (the
    probes' data, or {"error": why} for a probe that failed)."""
    python_now = _minor(str((facts.get("compiled") or {}).get("python", {}).get("version")
                            or platform["python"]["version"]))  # fmt: skip
    python_after = python_now if kind == APT else target.python
    change = Change(current, target, python_now, python_after, kind)
    parts = [*_python_parts(matrix, facts.get("compiled") or {}, change),
             *_kernel_parts(facts.get("kernels") or {}, platform, change),
             *_engine_parts(facts.get("engines") or {}, change),
             *_apt_parts(facts.get("apt_upgrade") or {}, change),
             *_image_parts(matrix, facts.get("docker") or {}, change)]  # fmt: skip
    return sorted(parts, key=lambda p: VERDICTS.index(p.verdict))


def _image_parts(matrix: Matrix, docker: dict[str, Any], change: Change) -> list[Part]:
    """Local Docker images on a base that does not run on the target release (an -igpu image
    on JetPack 7): rebuild, with what to use instead (the matrix's container_bases)."""
    parts = []
    for image in (docker.get("images") or {}).get("images") or []:
        tags = [tag for tag in image.get("tags") or () if "<none>" not in tag]
        name = tags[0] if tags else str(image.get("id", "?"))[:19]
        for problem in matrix.container_base_problems(change.target.l4t, image):
            parts.append(Part("image", name, "image", change.to, "rebuild", problem))
    return parts


@dataclass(frozen=True)
class Change:
    current: Release
    target: Release
    python_now: str
    python_after: str
    kind: str

    @property
    def python_changes(self) -> bool:
        return self.python_now != self.python_after

    @property
    def cuda_major_changes(self) -> bool:
        return _major(self.current.cuda) != _major(self.target.cuda)

    @property
    def to(self) -> str:
        return f"R{self.target.l4t}"

    @property
    def torch_changes(self) -> bool:
        return (_base(self.current.torch.version) != _base(self.target.torch.version)
                or _major(self.current.torch.cuda or self.current.cuda)
                != _major(self.target.torch.cuda or self.target.cuda))  # fmt: skip


def _torch_source(release: Release) -> str:
    torch = release.torch
    cuda = f"CUDA {torch.cuda or release.cuda}"
    if torch.url:
        return f"NVIDIA's wheel {torch.filename or torch.url.rsplit('/', 1)[-1]} ({cuda})"
    if not torch.index:  # pip's own index: PyPI's aarch64 CUDA wheels are SBSA builds
        return f"PyPI's aarch64 {cuda} build (SBSA), not one made for a JetPack"
    return f"the pip index {torch.index} ({cuda})"


def _python_parts(matrix: Matrix, compiled: dict[str, Any], change: Change) -> list[Part]:
    if "error" in compiled:
        return [Part("python", "native parts", "?", "?", "unknown",
                     f"the native-code parts were not read: {compiled['error']}")]  # fmt: skip
    parts = []
    target = change.target
    torch_after = target.torch.version
    vision_after = torchvision_tag_for(matrix, torch_after, target.torchvision)
    for dist in compiled.get("distributions", []):
        name = str(dist.get("name") or "?")
        key = name.lower().replace("_", "-")
        version = str(dist.get("version") or "?")
        if key == "torch":
            parts.append(_torch(version, change))
        elif key == "torchvision":
            parts.append(_torchvision(version, vision_after, change))
        else:
            parts.append(_compiled(name, version, dist, change))
    for unread in compiled.get("unread") or []:  # a file list past the probe's bounds
        folder = str(unread.get("path") or "?").rstrip("/").rsplit("/", 1)[-1]
        parts.append(Part("python", folder, "?", "?", "unknown",
                          f"its file list was not read ({unread.get('error')}): what it "
                          "installs is not judged"))  # fmt: skip
    pure = int(compiled.get("pure") or 0)
    if pure:
        if change.python_changes:
            verdict, reason = (
                "reinstall",
                (
                    f"Python {change.python_now} -> {change.python_after}: the environment is made "
                    "again for the new Python and its packages installed again (wheels, no build)"
                ),
            )
        else:
            verdict, reason = "survives", (
                f"pure Python, and Python stays {change.python_now}"
                + (" (on a reflashed root file system only if reinstalled)"
                   if change.kind == REFLASH else ""))  # fmt: skip
        parts.append(Part("python", f"{pure} pure-Python distributions", change.python_now,
                          change.python_after, verdict, reason))  # fmt: skip
    return parts


def _torch(version: str, change: Change) -> Part:
    target = change.target
    after = f"{target.torch.version} ({_torch_source(target)})"
    reasons = []
    if _base(version) != _base(target.torch.version):
        reasons.append(f"R{target.l4t}'s torch is {target.torch.version}")
    cuda_now = change.current.torch.cuda or change.current.cuda
    if cuda_now != (target.torch.cuda or target.cuda):
        reasons.append(f"CUDA {cuda_now} -> {target.torch.cuda or target.cuda}")
    if change.python_changes:
        reasons.append(f"Python {change.python_now} -> {change.python_after}")
    if not reasons:
        return Part("torch", "torch", version, after, "survives",
                    f"{change.to}'s torch is {target.torch.version} too, for the same CUDA "
                    f"{_major(target.cuda)} and Python {change.python_after}")  # fmt: skip
    return Part(
        "torch",
        "torch",
        version,
        after,
        "reinstall",
        f"{'; '.join(reasons)}: the torch role installs {_torch_source(target)}",
    )


def _torchvision(version: str, paired: str, change: Change) -> Part:
    after = f"{paired} (paired with torch {change.target.torch.version})"
    reasons = []
    if _base(version) != _base(paired):
        reasons.append(f"torch {change.target.torch.version}'s pair is {paired}")
    if change.torch_changes:
        reasons.append("its C++ ops are built against torch, which changes")
    if change.python_changes:
        reasons.append(f"Python {change.python_now} -> {change.python_after}")
    if not reasons:
        return Part("torchvision", "torchvision", version, after, "survives",
                    f"still torch {change.target.torch.version}'s pair; torch, CUDA and Python "
                    "stay")  # fmt: skip
    return Part(
        "torchvision",
        "torchvision",
        version,
        after,
        "rebuild",
        f"{'; '.join(reasons)}: the torchvision role builds {paired} from source",
    )


def _compiled(name: str, version: str, dist: dict[str, Any], change: Change) -> Part:
    needs = [str(n) for n in dist.get("needs") or []]
    abis = [str(a) for a in dist.get("abis") or []]
    cuda = [n for n in needs if CUDA_LIBRARY.match(n)]
    torch = [n for n in needs if TORCH_LIBRARY.match(n)]
    nvinfer = [n for n in needs if NVINFER.match(n)]
    version_bound = [a for a in abis if a.startswith("cpython-")]
    reasons = []
    if change.python_changes and version_bound:
        reasons.append(f"built for Python {change.python_now} ({version_bound[0]}); "
                       f"{change.to} has Python {change.python_after}")  # fmt: skip
    if change.cuda_major_changes and cuda:
        reasons.append(f"links {cuda[0]}; {change.to} has CUDA {change.target.cuda}")
    if torch and change.torch_changes:
        reasons.append(f"links torch ({torch[0]}), which becomes {change.target.torch.version}")
    if nvinfer:
        major = NVINFER.match(nvinfer[0]).group(1)
        if major != _major(change.target.tensorrt):
            reasons.append(f"links {nvinfer[0]}; {change.to} has TensorRT {change.target.tensorrt}")
    role = ROLE_PARTS.get(name.lower())
    by = f"the {role} role builds it again" if role else "build it again for the new row"
    what = ", ".join(abis) or "shared objects"
    if reasons:
        return Part("compiled", name, version, "rebuilt", "rebuild", "; ".join(reasons) + f": {by}")
    if change.python_changes:  # abi3 or plain shared objects: the same build loads on 3.12
        return Part("compiled", name, version, "reinstalled", "reinstall",
                    f"{what}, no Python-version ABI and nothing that changes linked: the same "
                    f"build, installed again for Python {change.python_after}")  # fmt: skip
    linked = ", ".join(cuda + torch + nvinfer) or "no CUDA, torch or TensorRT library"
    return Part("compiled", name, version, version, "survives",
                f"Python {change.python_after}, CUDA {_major(change.target.cuda)} and TensorRT "
                f"{_major(change.target.tensorrt)} stay; links {linked}")  # fmt: skip


KERNEL_STATES = (
    device_code.NO_KERNEL,
    device_code.PTX_TOO_NEW,
    device_code.JIT,
    device_code.RUNS,
)  # worst first


def _kernel_parts(kernels: dict[str, Any], platform: dict[str, Any], change: Change) -> list[Part]:
    """Each package's CUDA kernels (the kernels probe) judged by jetson_env.device_code for
    this GPU under the current row and under the target row (its CUDA, whose driver JetPack
    ships): the same build loses its kernels (rebuild) or keeps or gains them (JetPack 7.2's
    CUDA 13.2 runs a lower minor's SASS: pytorch/pytorch #186285)."""
    if not kernels:
        return []
    capability = platform.get("compute_capability")
    if "error" in kernels or not capability:
        why = kernels.get("error") or "the GPU's compute capability is not known"
        return [Part("kernels", "CUDA kernels", "?", "?", "unknown", f"not judged: {why}")]
    parts = []
    for package in kernels.get("packages") or []:
        files = [f for f in package.get("files") or [] if device_code.carries_code(f)]
        if not files:
            continue

        now = _kernels_under(files, capability, platform["is_jetson"], change.current,
                             kernels.get("driver") or change.current.cuda)  # fmt: skip
        after = _kernels_under(files, capability, platform["is_jetson"], change.target,
                               change.target.cuda)  # fmt: skip
        name, version = str(package.get("name")), str(package.get("version"))
        if after.state in (device_code.NO_KERNEL, device_code.PTX_TOO_NEW):
            verdict, reason = "rebuild", f"on {change.to}: {after.why}; a build for it"
        elif now.state in (device_code.NO_KERNEL, device_code.PTX_TOO_NEW):
            verdict, reason = "survives", f"gains kernels on {change.to}: {after.why}"
        else:
            verdict, reason = "survives", f"keeps its kernels on {change.to}: {after.why}"
        parts.append(Part("kernels", name, f"{version}: {now.state}", after.state, verdict,
                          reason))  # fmt: skip
    return parts


def _kernels_under(files: list[dict[str, Any]], capability: str, is_jetson: bool,
                   release: Release, driver: str | None) -> device_code.Verdict:  # fmt: skip
    """The worst of the files' verdicts under `release` (its CUDA) and `driver`."""
    verdicts = [device_code.judge_file(f, capability, is_jetson, release.cuda, driver)
                for f in files]  # fmt: skip
    return min(verdicts, key=lambda v: KERNEL_STATES.index(v.state))


def _engine_parts(engines: dict[str, Any], change: Change) -> list[Part]:
    if "error" in engines:
        return [Part("engine", "engines", "?", "?", "unknown",
                     f"the engine folders were not read: {engines['error']}")]  # fmt: skip
    parts = [Part("engine", folder, "-", "-", "unknown", "no such folder on the host")
             for folder in engines.get("missing") or []]  # fmt: skip
    trt_after = change.target.tensorrt
    for engine in engines.get("engines") or []:
        path = str(engine.get("path"))
        built = engine.get("tensorrt")
        after = f"TensorRT {trt_after}"
        if built:  # the rule the doctor uses; the GPU stays
            now = f"TensorRT {built} ({engine.get('source')})"
            said, why = engine_files.verdict(engine, trt_after, None, after=change.to)
            verdict = {engine_files.LOADS: "survives"}.get(said, said)
            parts.append(Part("engine", path, now, after, verdict, why))
            continue
        why = engine.get("unknown") or "not read"
        if _minor(change.current.tensorrt) != _minor(trt_after):
            now = f"TensorRT ? (host: {change.current.tensorrt})"
            parts.append(Part("engine", path, now, after,
                              "rebuild", f"TensorRT {change.current.tensorrt} -> {trt_after}: an "
                              "engine loads only on the TensorRT version that built it (its own "
                              f"version was not read: {why})"))  # fmt: skip
        else:
            parts.append(Part("engine", path, "TensorRT ?", after, "unknown",
                              f"its TensorRT was not read ({why}); it loads after the upgrade "
                              f"only if it was built with TensorRT {trt_after}, the host's "
                              "now"))  # fmt: skip
    left_out = engines.get("left_out") or 0
    if left_out:
        parts.append(Part("engine", f"{left_out} more engines", "?", f"TensorRT {trt_after}",
                          "unknown", f"{left_out} engine files past the first "
                          f"{engines.get('max_engines')} were counted, not read: give "
                          "--engines narrower folders to plan them"))  # fmt: skip
    if engines.get("truncated"):
        parts.append(Part("engine", "engines not searched", "?", f"TensorRT {trt_after}",
                          "unknown", f"the search stopped after {engines.get('max_entries')} "
                          "directory entries: engines beyond them were not looked for; give "
                          "--engines narrower folders"))  # fmt: skip
    return parts


def _apt_parts(apt: dict[str, Any], change: Change) -> list[Part]:
    if change.kind == REFLASH:
        return [Part("apt", "JetPack packages", f"R{change.current.l4t}", change.to, "reinstall",
                     f"R{_major(change.target.l4t)} is a new major release: apt does not move a "
                     "host between lines; it is flashed or takes an image-based OTA, which "
                     "replaces the root file system (only /ota survives) with the new release's "
                     "packages")]  # fmt: skip
    if "error" in apt:
        return [Part("apt", "JetPack packages", "?", "?", "unknown",
                     f"apt was not read: {apt['error']}")]  # fmt: skip
    simulation = apt.get("simulation") or {}
    if "skipped" in simulation:
        return [Part("apt", "JetPack packages", "?", change.to, "unknown",
                     f"apt's upgrade was not simulated: {simulation['skipped']}")]  # fmt: skip
    holds = set(map(str, apt.get("holds") or []))
    parts = []
    if not simulation.get("ok"):
        return [Part("apt", "JetPack upgrade", "?", change.to, "blocked",
                     f"apt-get -s dist-upgrade to {suite(change.target)} fails: "
                     f"{simulation.get('error')}")]  # fmt: skip
    for package in map(str, simulation.get("kept_back") or []):
        if package in holds:
            first = (f"`sudo apt-mark unhold {shlex.quote(package)}` first"
                     if DEBIAN_PACKAGE.fullmatch(package)
                     else "unhold it first (its name is not a Debian package name: no "
                     "command is printed for it)")  # fmt: skip
            parts.append(Part("apt", package, "held", "held", "blocked",
                              f"held (apt-mark showhold): the upgrade keeps it back, so the host "
                              f"would run {change.to} beside this old package; {first}, or "
                              "leave the upgrade"))  # fmt: skip
        else:
            parts.append(Part("apt", package, "kept back", "kept back", "blocked",
                              "apt keeps it back (its new version needs a change apt will not "
                              "make on its own)"))  # fmt: skip
    for entry in simulation.get("changes") or []:
        action = entry.get("action")
        now, after = str(entry.get("from") or "-"), str(entry.get("to") or "-")
        reason = {"upgrade": f"apt upgrades it to {suite(change.target)}'s version",
                  "install": f"{suite(change.target)} brings it in",
                  "remove": "apt removes it"}.get(str(action), str(action))  # fmt: skip
        parts.append(Part("apt", str(entry.get("package")), now, after, "reinstall", reason))
    if not parts:
        parts.append(Part("apt", "JetPack packages", f"R{change.current.l4t}", change.to,
                          "survives", f"apt's simulated upgrade to {suite(change.target)} "
                          "changes no package"))  # fmt: skip
    return parts


def suite(release: Release) -> str:
    """NVIDIA's apt suite of a release: r36.4, r39.2."""
    return "r" + _minor(release.l4t)
