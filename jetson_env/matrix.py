"""Load and validate the version matrix (data/matrix.yml), and look things up in it.

The matrix is validated as a whole when loaded, so a broken row fails at once
with a message that names the row, instead of surfacing later as a wrong install.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from jetson_env import ansible_core, pairing, yaml_files

SHA256 = re.compile(r"^[0-9a-f]{64}$")
DOTTED = re.compile(r"^\d+(\.\d+)*$")
FINGERPRINT = re.compile(r"^[0-9A-F]{40}$")
DEB_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
L4T = re.compile(r"^\d+\.\d+\.\d+$")
CUDA_FROM = ("host", "base", "apt")
# The CPython minors the x86 TensorRT pins must have bindings wheels for (where they apply).
KNOWN_PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
# The x86 Pythons `jetson-env matrix` states TensorRT and converters for: Ubuntu 22.04's, 24.04's
# and 26.04's.
X86_PYTHONS = ("3.10", "3.12", "3.14")

SECTIONS = (
    "sources", "torchvision_pairs", "torchvision_archives", "socs", "families", "releases",
    "unsupported", "x86", "images", "packages", "jetpack_apt", "converters", "ansible_core",
    "jetson_tensorrt", "routes_not_offered", "container_bases", "ubuntu",
)  # fmt: skip
RELEASE_FIELDS = ("jetpack", "family", "ubuntu", "cuda", "cudnn", "tensorrt", "python")
FAMILY_FIELDS = (
    "apt_prerequisites", "pip_prerequisites", "onnx_export_packages", "numpy",
    "torch_cuda_arch_list", "socs",
)  # fmt: skip

# What the roles read from x86's row as they read a Jetson family's (jetson_facts_row).
X86_ROW_FIELDS = ("apt_prerequisites", "pip_prerequisites", "onnx_export_packages", "numpy")


class MatrixError(ValueError):
    """The matrix file is malformed or inconsistent; the message names the row."""


class UnknownRelease(LookupError):
    """An L4T release with no row; the message says why and names the supported ones."""


@dataclass(frozen=True)
class TorchSource:
    """Where torch comes from: a wheel URL, or a pip index (None = pip's configured one).
    `cuda`: the CUDA version the build targets (torch.version.cuda)."""

    version: str
    url: str | None
    index: str | None
    filename: str | None
    sha256: str | None
    cuda: str = ""


@dataclass(frozen=True)
class CusparseLt:
    """cuSPARSELt's archive, for torch wheels that load libcusparseLt.so.0."""

    version: str
    url: str
    sha256: str | None


@dataclass(frozen=True)
class TensorRTPip:
    """TensorRT from pip (x86) for the CPythons `python` admits: the distribution
    (tensorrt-cu<CUDA major>), the version the roles, remedies and bundles install, the range
    the doctor accepts, and the CPythons its bindings have wheels for."""

    package: str
    version: str
    supported: SpecifierSet
    python: SpecifierSet
    bindings_pythons: tuple[str, ...]

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class TorchTensorRT:
    """One Torch-TensorRT release's Requires-Dist: the torch and TensorRT it admits (on a
    Jetson, `jetson_*` where its metadata has a tegra marker) and the TensorRT distribution it
    names (`tensorrt`, or only tensorrt-cu12 as 2.5.0 does)."""

    version: str
    torch: SpecifierSet
    tensorrt: SpecifierSet
    jetson_torch: SpecifierSet | None = None
    jetson_tensorrt: SpecifierSet | None = None
    package: str = "tensorrt"

    def admits(self, torch: str, tensorrt: str, jetson: bool) -> bool:
        """Whether pip would take this release with this torch and this TensorRT: its
        specifiers as pip reads them (a local label is ignored, a pre-release is not: NVIDIA's
        2.5.0a0+872d972e41.nv24.08 is below 2.5.0) and, on a Jetson, a requirement on `tensorrt`,
        the distribution JetPack's python3-libnvinfer is (tensorrt-cu12 is another one)."""
        tegra = jetson and self.jetson_torch is not None
        if jetson and not tegra and self.package != "tensorrt":
            return False
        torch_spec = self.jetson_torch if tegra else self.torch
        trt_spec = self.jetson_tensorrt if tegra and self.jetson_tensorrt else self.tensorrt
        try:
            torch_version, trt_version = Version(torch), Version(tensorrt)
        except InvalidVersion:
            return False
        return torch_spec.contains(torch_version, prereleases=True) and trt_spec.contains(
            trt_version, prereleases=True
        )


@dataclass(frozen=True)
class JetsonTorchTensorRT:
    """The Torch-TensorRT NVIDIA supports on a JetPack line with its row's torch and how it is
    obtained (JetPack 6.1/6.2: 2.5 built from source, release/2.5); version None: none."""

    l4t: SpecifierSet
    version: str | None
    tensorrt: str | None
    obtained: str
    git: str | None
    branch: str | None
    nvidia_newest: str | None
    sources: tuple[str, ...]

    def fits(self, l4t: str | None, tensorrt: str | None) -> bool:
        """A build for this line's release with this JetPack TensorRT (major.minor)."""
        if not (self.version and l4t and tensorrt and self.tensorrt):
            return False
        major_minor = ".".join(str(tensorrt).split(".")[:2])
        return Version(l4t) in self.l4t and major_minor == self.tensorrt


@dataclass(frozen=True)
class Converters:
    """Which converters build an engine with each TensorRT major, the default one, and
    Torch-TensorRT's releases (a host has it as a converter only where one fits)."""

    default: str
    names: dict[str, str]  # converter -> how it is called in messages
    by_major: dict[str, tuple[str, ...]]
    torch_tensorrt: tuple[TorchTensorRT, ...] = ()
    jetson_torch_tensorrt: tuple[JetsonTorchTensorRT, ...] = ()

    def jetson_build(self, l4t: str | None) -> JetsonTorchTensorRT | None:
        """NVIDIA's way to Torch-TensorRT on a JetPack line (R36.4.3 -> 2.5 from release/2.5)."""
        for entry in self.jetson_torch_tensorrt:
            if l4t and Version(l4t) in entry.l4t:
                return entry
        return None

    def for_tensorrt(self, version: str | None) -> tuple[str, ...]:
        """The converters whose code can use a TensorRT version ("11.4.0.106" -> onnx, ...);
        none for a major the matrix does not know."""
        major = str(version or "").split(".")[0]
        return self.by_major.get(major, ())

    def supports(self, converter: str, version: str | None) -> bool:
        return converter in self.for_tensorrt(version)

    def torch_tensorrt_for(
        self, torch: str | None, tensorrt: str | None, jetson: bool
    ) -> TorchTensorRT | None:
        """The newest Torch-TensorRT release whose Requires-Dist admits this torch and this
        TensorRT, or None (torch 2.14.1 with TensorRT 10.16 has none)."""
        fitting = [
            release
            for release in self.torch_tensorrt
            if torch and tensorrt and release.admits(torch, tensorrt, jetson)
        ]
        return max(fitting, key=lambda release: Version(release.version), default=None)

    def for_host(
        self, tensorrt: str | None, torch: str | None, jetson: bool, l4t: str | None = None
    ) -> tuple[str, ...]:
        """The converters that work with this TensorRT and this torch: the major's, and
        Torch-TensorRT only where a real release fits both or, on a Jetson release `l4t`,
        NVIDIA's source build for its line fits its TensorRT."""
        build = self.jetson_build(l4t) if jetson else None
        return tuple(
            name
            for name in self.for_tensorrt(tensorrt)
            if name != "torch_tensorrt"
            or self.torch_tensorrt_for(torch, tensorrt, jetson)
            or (build is not None and build.fits(l4t, tensorrt))
        )


@dataclass(frozen=True)
class JetsonTensorRT:
    """A TensorRT NVIDIA supports on a Jetson beside its JetPack's own (11.4.1 on R39.2.2+)."""

    version: str
    l4t: SpecifierSet
    socs: tuple[str, ...]
    modules: str
    package: str
    unconfirmed: str | None = None  # why NVIDIA's support on a Jetson is not confirmed (11.5)

    def applies(self, l4t: str, soc: str | None) -> bool:
        return Version(l4t) in self.l4t and (soc is None or soc in self.socs)


@dataclass(frozen=True)
class Ubuntu:
    """An Ubuntu release's apt suite name ("jammy") and glibc ("2.35": its pip's manylinux
    tags)."""

    codename: str
    glibc: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Release:
    l4t: str
    jetpack: str
    family: str
    ubuntu: str
    cuda: str
    cudnn: str
    tensorrt: str
    python: str
    torch: TorchSource
    torchvision: str
    sources: tuple[str, ...]
    # JetPack's CUDA and cuDNN apt packages: {"build": (...), "runtime": (...)}; empty on x86.
    jetpack_packages: dict[str, tuple[str, ...]]
    cusparselt: CusparseLt | None = None


@dataclass(frozen=True)
class Image:
    """A container image: the matrix row it provisions, its FROM, the host L4Ts it runs on."""

    name: str  # "r36.4.0" or "x86_64"
    release: Release
    base: str
    hosts: SpecifierSet | None  # None: x86
    cuda_from: str  # "host" (CSV mounts), "base" (in the base image) or "apt" (jetpack_apt role)
    cuda: str = ""  # the CUDA the image's builds compile with: the base's (x86) or the row's

    def runs_on(self, l4t: str) -> bool:
        return self.hosts is not None and Version(l4t) in self.hosts


@dataclass(frozen=True)
class Resolution:
    """The row that applies to an L4T release: its own, or for a point release the matrix
    does not list (R36.4.9) its line's newest row, named by `assumed_from`."""

    release: Release
    assumed_from: str | None

    @property
    def assumed(self) -> bool:
        return self.assumed_from is not None


@dataclass(frozen=True)
class Matrix:
    raw: dict[str, Any]
    releases: dict[str, Release]
    socs: dict[str, str]
    pairs: dict[str, str]
    x86: Release
    images: tuple[Image, ...]
    # L4T releases deliberately left out -> why (e.g. a developer preview).
    unsupported: dict[str, str]
    converters: Converters
    x86_tensorrt: TensorRTPip
    ansible_core: ansible_core.Support
    ubuntu: dict[str, Ubuntu]  # Ubuntu release ("22.04") -> its apt suite and glibc
    x86_tensorrt_pins: tuple[TensorRTPip, ...] = ()
    jetson_tensorrt: tuple[JetsonTensorRT, ...] = ()

    def x86_tensorrt_for(self, python: str | None) -> TensorRTPip:
        """x86's pip TensorRT for a target CPython ("3.14.0" -> 11.1.0.106, whose bindings have a
        cp314 wheel; 10.x has none); the first pin for an unknown Python."""
        release = _release3(python or "")
        for pin in self.x86_tensorrt_pins:
            if release is not None and pin.python.contains(release):
                return pin
        return self.x86_tensorrt

    def tensorrt_options(self, release: Release, soc: str | None = None) -> list[dict[str, Any]]:
        """Which TensorRT a Jetson row can have, each with the converters that work with it and
        the row's torch: JetPack's own, then NVIDIA's alternatives for the row (11.4.1's SBSA
        package on R39.2.2+)."""
        options = [{"version": release.tensorrt, "from": "JetPack's apt packages"}]
        options += [
            {
                "version": other.version,
                "from": f"{other.package} ({other.modules})"
                + (f"; unconfirmed: {other.unconfirmed}" if other.unconfirmed else ""),
            }
            for other in self.jetson_tensorrt
            if other.applies(release.l4t, soc)
        ]
        return [
            {**option, "converters": list(self.converters.for_host(
                option["version"], release.torch.version, jetson=True, l4t=release.l4t))}
            for option in options
        ]  # fmt: skip

    def x86_tensorrt_options(self, pythons: tuple[str, ...] = X86_PYTHONS) -> list[dict[str, Any]]:
        """Per target CPython of x86 hosts: the pip TensorRT pinned for it and the converters
        that work with it and x86's torch."""
        return [
            {"python": python, "package": pin.package, "version": pin.version,
             "supported": str(pin.supported),
             "converters": list(self.converters.for_host(pin.version, self.x86.torch.version,
                                                         jetson=False))}
            for python in pythons
            for pin in (self.x86_tensorrt_for(python),)
        ]  # fmt: skip

    def release(self, l4t: str) -> Release:
        """The row for an L4T release such as "32.4.3"; UnknownRelease names the supported ones
        (and, for a release the matrix leaves out on purpose, the reason)."""
        key = normalize_l4t(l4t)
        if key not in self.releases:
            reason = f" ({self.unsupported[key]})" if key in self.unsupported else ""
            raise UnknownRelease(
                f"L4T R{key} is not supported{reason}; supported releases: "
                + ", ".join(f"R{r}" for r in self.releases)
            )
        return self.releases[key]

    def newest_of_line(self, l4t: str) -> Release | None:
        """The newest row of an L4T release's line (R36.4.9 -> the newest R36.4.x row);
        None when the matrix has no row of that line."""
        line = normalize_l4t(l4t).split(".")[:2]
        rows = [r for key, r in self.releases.items() if key.split(".")[:2] == line]
        return max(rows, key=lambda r: Version(r.l4t), default=None)

    def resolve(self, l4t: str) -> Resolution:
        """THE row rule, for provisioning, the doctor, `info` and `images tag` alike: a
        release's own row; else, for a point release of a line the matrix has rows for
        (R36.4.9), that line's newest row, marked assumed; UnknownRelease for a release left
        out on purpose (with its reason) or of a line without rows."""
        key = normalize_l4t(l4t)
        if key in self.releases or key in self.unsupported or not L4T.match(key):
            return Resolution(self.release(key), None)
        newest = self.newest_of_line(key)
        if newest is None:
            self.release(key)  # raises UnknownRelease, naming the supported releases
        return Resolution(newest, newest.l4t)

    def compute_capability(self, soc: str | None) -> str | None:
        return self.socs.get(soc or "")

    def device_capability(self, platform: dict[str, Any]) -> tuple[str | None, str | None]:
        """(compute capability, why it is unknown) of a host from the platform probe's facts:
        a Jetson's from its SoC through the matrix, another host's from its first GPU."""
        unknown = platform.get("unknown") or {}
        if platform.get("is_jetson"):
            soc = platform.get("soc")
            capability = self.compute_capability(soc)
            if capability is not None:
                return capability, None
            return None, (
                f"SoC {soc!r} is not in the matrix" if soc else unknown.get("soc", "SoC unknown")
            )
        gpus = platform.get("gpus") or []
        capability = (gpus[0].get("compute_capability") or None) if gpus else None
        if capability is not None:
            return capability, None
        return None, unknown.get("gpus", "no NVIDIA GPU found")

    def unsupported_entries(self) -> list[dict[str, Any]]:
        """The releases left out on purpose: l4t, JetPack label, reason and source URLs."""
        return [
            {
                "l4t": l4t,
                "jetpack": _text(entry.get("jetpack")),
                "reason": " ".join(str(entry["reason"]).split()),
                "sources": [self.source_url(name) for name in _names(entry.get("source"))],
            }
            for l4t, entry in self.raw["unsupported"].items()
        ]

    def torchvision_for(self, torch_version: str) -> str | None:
        """The torchvision major.minor paired with a torch version, or None if unknown."""
        found = self.torchvision_pair(torch_version)
        return found.minor if found else None

    def torchvision_pair(self, torch_version: str) -> pairing.Pair | None:
        """The torchvision paired with a torch version (jetson_env.pairing), or None."""
        return pairing.pair(self.pairs, self.requires_dist, torch_version)

    @property
    def requires_dist(self) -> dict[str, str]:
        """torchvision release -> the torch its wheel requires (the matrix's cache of it)."""
        return self.raw["torchvision_pairs"].get("requires_dist") or {}

    def pycuda_for(self, python_version: str) -> str:
        """The pycuda release to build for a Python version ("3.6.9" -> the last one for 3.6)."""
        pycuda = self.raw["packages"]["pycuda"]
        return str(pycuda["python36" if python_version.startswith("3.6") else "version"])

    def routes_not_offered(self, l4t: str | None, soc: str | None) -> list[dict[str, Any]]:
        """The routes the matrix does not offer that would concern a Jetson on `l4t` with
        `soc` (CUDA 13 forward compatibility on a JetPack 6 Orin): route, reason, sources."""
        found = []
        for entry in self.raw["routes_not_offered"].values():
            hosts = entry["hosts"]
            if l4t and soc in hosts["socs"] and Version(l4t) in SpecifierSet(hosts["l4t"]):
                found.append({
                    "route": entry["route"], "reason": " ".join(str(entry["reason"]).split()),
                    "sources": [self.source_url(name) for name in _names(entry["source"])],
                })  # fmt: skip
        return found

    def container_base_problems(self, l4t: str | None, image: dict[str, Any]) -> list[str]:
        """Why a local image (the docker probe's: tags, labels, history) will not run on a
        Jetson on `l4t`, naming the base reference found and what to use instead; [] if none."""
        found = []
        texts = [*image.get("tags", ()), *(image.get("labels") or {}).values(),
                 *image.get("history", ())]  # fmt: skip
        for entry in self.raw["container_bases"]["not_running"].values():
            if not l4t or Version(l4t) not in SpecifierSet(entry["hosts"]):
                continue
            names = sorted({m.group(0) for t in texts for m in re.finditer(entry["match"], t)})
            if names:
                found.append(
                    f"{' '.join(str(entry['reason']).split())} ({', '.join(names[:3])}); instead:"
                    f" {' '.join(str(entry['instead']).split())}"
                )
        return found

    def cuda_python_for(self, python_version: str | None, cuda: str | None) -> str | None:
        """The cuda-python requirement for a target Python and CUDA ("3.12.3", "13.0" ->
        "cuda-python==13.*"; "3.10.12", "13.0" -> "cuda-python==13.4.*", the last line for 3.10);
        None where cuda-python's Python floor rules it out or no CUDA."""
        rule = self.raw["packages"].get("cuda_python") or {}
        python = _release3(python_version or "")
        if not cuda or python is None or python not in SpecifierSet(rule["requires_python"]):
            return None
        for last in rule.get("last_for_python") or ():
            if str(last["cuda"]) == _major(cuda) and python in SpecifierSet(last["python"]):
                return f"cuda-python=={last['line']}.*"
        return f"cuda-python=={_major(cuda)}.*"

    @property
    def torch2trt(self) -> dict[str, str]:
        """{"git": https URL, "ref": pinned commit}."""
        return self.raw["packages"]["torch2trt"]

    def family(self, name: str) -> dict[str, Any]:
        return self.raw["families"][name]

    def source_url(self, name: str) -> str:
        return self.raw["sources"][name]


def _release3(version: str) -> Version | None:
    """major.minor.patch of a version, local label and pre-release dropped (None if none)."""
    try:
        release = Version(str(version)).release
    except InvalidVersion:
        return None
    return Version(".".join(str(part) for part in (*release, 0, 0)[:3]))


def normalize_l4t(l4t: str) -> str:
    """'R32.4.3', 'r32.4.3', '32.4.3' -> '32.4.3'."""
    return l4t.strip().lstrip("Rr")


def default_path() -> Path:
    return Path(str(resources.files("jetson_env") / "data" / "matrix.yml"))


@cache
def load(path: Path | None = None) -> Matrix:
    """Load and validate the matrix; raises MatrixError naming the first bad row."""
    path = path or default_path()
    try:
        raw = yaml_files.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise MatrixError(f"{path}: cannot read the matrix: {exc}") from exc
    return validate(raw, where=str(path))


def validate(raw: Any, where: str = "matrix") -> Matrix:
    if not isinstance(raw, dict):
        raise MatrixError(f"{where}: top level must be a mapping")
    for section in SECTIONS:
        if not isinstance(raw.get(section), dict):
            raise MatrixError(f"{where}: section '{section}' is missing or not a mapping")
    sources = raw["sources"]
    for name, url in sources.items():
        if not isinstance(url, str) or not url.startswith("https://"):
            raise MatrixError(f"{where}: source '{name}' must be an https URL")

    def check_sources(row: str, entry: dict[str, Any]) -> tuple[str, ...]:
        cited = entry.get("source")
        if isinstance(cited, str):
            cited = [cited]
        if not cited:
            raise MatrixError(f"{where}: {row}: no source cited")
        for name in cited:
            if name not in sources:
                raise MatrixError(f"{where}: {row}: cites unknown source '{name}'")
        return tuple(cited)

    pairs_section = raw["torchvision_pairs"]
    check_sources("torchvision_pairs", pairs_section)
    pairs = {str(k): str(v) for k, v in (pairs_section.get("pairs") or {}).items()}
    requires_dist = _requires_dist(pairs_section.get("requires_dist") or {}, where)
    _torchvision_archives(raw["torchvision_archives"], where, check_sources)

    socs: dict[str, str] = {}
    for soc, entry in raw["socs"].items():
        row = f"soc {soc}"
        check_sources(row, entry)
        cc = str(entry.get("compute_capability", ""))
        if not DOTTED.match(cc):
            raise MatrixError(f"{where}: {row}: compute_capability '{cc}' is not like '8.7'")
        socs[soc] = cc

    for name, family in raw["families"].items():
        row = f"family {name}"
        check_sources(row, family)
        for field in FAMILY_FIELDS:
            if field not in family:
                raise MatrixError(f"{where}: {row}: missing '{field}'")
        _family_archs(row, family, socs, where)

    def parse_torch(row: str, entry: dict[str, Any]) -> tuple[TorchSource, str]:
        torch = entry.get("torch")
        if not isinstance(torch, dict) or not torch.get("version"):
            raise MatrixError(f"{where}: {row}: missing torch.version")
        version = str(torch["version"])
        url, index = torch.get("url"), torch.get("index")
        if url and index:
            raise MatrixError(f"{where}: {row}: torch has both a url and an index; keep one")
        for value in (url, index):
            if value and not str(value).startswith("https://"):
                raise MatrixError(f"{where}: {row}: torch source '{value}' is not https")
        sha = torch.get("sha256")
        if sha is not None and not SHA256.match(str(sha)):
            raise MatrixError(f"{where}: {row}: torch sha256 '{sha}' is not 64 hex digits")
        if url and not torch.get("filename"):
            raise MatrixError(f"{where}: {row}: a torch url needs the wheel's filename")
        cuda = str(torch.get("cuda") or "")
        if not DOTTED.match(cuda):
            raise MatrixError(f"{where}: {row}: torch.cuda '{cuda}' (the CUDA torch is built for)"
                              " is not like '12.6'")  # fmt: skip
        paired = pairing.pair(pairs, requires_dist, version)
        if paired is None:
            raise MatrixError(
                f"{where}: {row}: torch {version} has no torchvision pair in torchvision_pairs"
            )
        torchvision = str(entry.get("torchvision", ""))
        if not DOTTED.match(torchvision):
            raise MatrixError(f"{where}: {row}: torchvision '{torchvision}' is not a version")
        if not paired.admits(torchvision):
            raise MatrixError(
                f"{where}: {row}: torchvision {torchvision} does not pair with torch {version}"
                f" (expected {paired.wanted}: {paired.source})"
            )
        source = TorchSource(version, url, index, torch.get("filename"), sha, cuda)
        return source, torchvision

    ubuntu = _ubuntu(raw["ubuntu"], where, check_sources)
    releases: dict[str, Release] = {}
    for l4t, entry in raw["releases"].items():
        row = f"release R{l4t}"
        if not isinstance(entry, dict):
            raise MatrixError(f"{where}: {row}: must be a mapping")
        if not L4T.match(str(l4t)):
            raise MatrixError(f"{where}: {row}: L4T must be like '32.4.3'")
        cited = check_sources(row, entry)
        for field in RELEASE_FIELDS:
            if not entry.get(field):
                raise MatrixError(f"{where}: {row}: missing '{field}'")
        if entry["family"] not in raw["families"]:
            raise MatrixError(f"{where}: {row}: unknown family '{entry['family']}'")
        if str(entry["ubuntu"]) not in ubuntu:
            raise MatrixError(f"{where}: {row}: Ubuntu {entry['ubuntu']} has no entry in ubuntu"
                              " (its apt suite and glibc)")  # fmt: skip
        torch, torchvision = parse_torch(row, entry)
        if _major(torch.cuda) != _major(str(entry["cuda"])):
            raise MatrixError(
                f"{where}: {row}: torch {torch.version} is built for CUDA {torch.cuda}, the"
                f" release ships CUDA {entry['cuda']}: their major versions must be the same"
            )
        releases[str(l4t)] = Release(
            l4t=str(l4t),
            torch=torch,
            torchvision=torchvision,
            sources=cited,
            jetpack_packages=_jetpack_packages(row, entry, where),
            cusparselt=_cusparselt(row, entry, where),
            **{field: str(entry[field]) for field in RELEASE_FIELDS},
        )

    converters = _converters(raw["converters"], where, check_sources)
    for row_name, release in releases.items():
        if not converters.for_tensorrt(release.tensorrt):
            raise MatrixError(
                f"{where}: release R{row_name}: TensorRT {release.tensorrt}'s major has no entry"
                " in converters.by_tensorrt_major"
            )
    x86_entry = raw["x86"]
    x86_cited = check_sources("x86", x86_entry)
    for field in X86_ROW_FIELDS:
        if field not in x86_entry:
            raise MatrixError(f"{where}: x86: missing '{field}'")
    x86_torch, x86_torchvision = parse_torch("x86", x86_entry)
    x86 = Release(
        l4t="",
        jetpack="",
        family="x86",
        ubuntu="",
        cuda="",
        cudnn="",
        tensorrt="",
        python="",
        torch=x86_torch,
        torchvision=x86_torchvision,
        sources=x86_cited,
        jetpack_packages={},
    )
    x86_tensorrt_pins = _x86_tensorrt(x86_entry, x86_torch, converters, where, check_sources)
    jetson_tensorrt = _jetson_tensorrt(raw["jetson_tensorrt"], socs, where, check_sources)
    for name, entry in raw["routes_not_offered"].items():
        check_sources(f"routes_not_offered.{name}", entry)
        try:
            SpecifierSet(str(entry["hosts"]["l4t"]))
            unknown = [soc for soc in entry["hosts"]["socs"] if soc not in socs]
            if not (entry["route"] and entry["reason"]):
                raise KeyError("route or reason is empty")
        except (KeyError, TypeError, InvalidSpecifier) as exc:
            raise MatrixError(
                f"{where}: routes_not_offered.{name}: needs route, reason and hosts (l4t, socs):"
                f" {exc}"
            ) from None
        if unknown:
            raise MatrixError(f"{where}: routes_not_offered.{name}: socs {unknown} not in socs")
    unsupported = _unsupported(raw["unsupported"], releases, where, check_sources)
    images = _images(raw["images"], releases, x86, where, check_sources)
    _packages(raw["packages"], where, check_sources)
    _jetpack_apt(raw["jetpack_apt"], where, check_sources)
    check_sources("container_bases", raw["container_bases"])
    for name, entry in (raw["container_bases"].get("not_running") or {}).items():
        try:
            re.compile(str(entry["match"]))
            SpecifierSet(str(entry["hosts"]))
            if not (entry["reason"] and entry["instead"]):
                raise KeyError("reason, instead")
        except (KeyError, TypeError, re.error, InvalidSpecifier) as exc:
            raise MatrixError(
                f"{where}: container_bases.not_running.{name}: needs match (a regular"
                f" expression), hosts (L4T), reason and instead: {exc!r}"
            ) from None
    try:
        core = ansible_core.parse(raw["ansible_core"], check_sources, sources.__getitem__)
    except ValueError as exc:
        raise MatrixError(f"{where}: {exc}") from None
    return Matrix(
        raw=raw,
        releases=releases,
        socs=socs,
        pairs=pairs,
        x86=x86,
        images=images,
        unsupported=unsupported,
        converters=converters,
        x86_tensorrt=x86_tensorrt_pins[0],
        x86_tensorrt_pins=x86_tensorrt_pins,
        jetson_tensorrt=jetson_tensorrt,
        ansible_core=core,
        ubuntu=ubuntu,
    )


def _ubuntu(section, where, check_sources) -> dict[str, Ubuntu]:
    """Ubuntu release -> its apt suite name and glibc, each cited."""
    table = {}
    for release, entry in section.items():
        row = f"ubuntu {release}"
        if not isinstance(entry, dict):
            raise MatrixError(f"{where}: {row}: must be a mapping")
        cited = check_sources(row, entry)
        codename, glibc = str(entry.get("codename", "")), str(entry.get("glibc", ""))
        if not re.fullmatch(r"[a-z]+", codename):
            raise MatrixError(f"{where}: {row}: codename '{codename}' is not a suite like 'jammy'")
        if not re.fullmatch(r"2\.\d{1,2}", glibc):
            raise MatrixError(f"{where}: {row}: glibc '{glibc}' is not like '2.35'")
        table[str(release)] = Ubuntu(codename, glibc, cited)
    return table


def _converters(section, where, check_sources) -> Converters:
    """The converter table: every major lists known converters; the default is one of them."""
    check_sources("converters", section)
    names = {str(k): str(v) for k, v in (section.get("names") or {}).items()}
    by_major: dict[str, tuple[str, ...]] = {}
    for major, listed in (section.get("by_tensorrt_major") or {}).items():
        unknown = [name for name in listed or [] if name not in names]
        if not listed or unknown or not str(major).isdigit():
            raise MatrixError(
                f"{where}: converters.by_tensorrt_major.{major}: {unknown or listed!r} is not a"
                f" list of converters named in converters.names ({', '.join(names)})"
            )
        by_major[str(major)] = tuple(str(name) for name in listed)
    default = str(section.get("default") or "")
    if default not in names:
        raise MatrixError(f"{where}: converters.default '{default}' is not in converters.names")
    releases = []
    for version, entry in (section.get("torch_tensorrt") or {}).items():
        jetson = entry.get("jetson") or {}
        try:
            releases.append(TorchTensorRT(
                str(Version(str(version))),
                SpecifierSet(str(entry["torch"])),
                SpecifierSet(str(entry.get("tensorrt") or "")),
                SpecifierSet(str(jetson["torch"])) if jetson else None,
                SpecifierSet(str(jetson["tensorrt"])) if jetson else None,
                str(entry.get("package") or "tensorrt"),
            ))  # fmt: skip
        except (KeyError, TypeError, AttributeError, InvalidSpecifier, InvalidVersion) as exc:
            raise MatrixError(
                f"{where}: converters.torch_tensorrt.{version}: needs torch and tensorrt"
                f" requirements (and jetson's, if any): {exc}"
            ) from None
    builds = []
    for number, entry in enumerate(section.get("jetson_torch_tensorrt") or ()):
        row = f"converters.jetson_torch_tensorrt[{number}]"
        check_sources(row, entry)
        try:
            builds.append(JetsonTorchTensorRT(
                SpecifierSet(str(entry["l4t"])), _text(entry.get("version")),
                _text(entry.get("tensorrt")), " ".join(str(entry["obtained"]).split()),
                _text(entry.get("git")), _text(entry.get("branch")),
                _text(entry.get("nvidia_newest")), tuple(_names(entry["source"])),
            ))  # fmt: skip
        except (KeyError, TypeError, InvalidSpecifier) as exc:
            raise MatrixError(f"{where}: {row}: needs l4t, obtained and source: {exc}") from None
        built = builds[-1]
        if built.version and not (built.tensorrt and built.branch and built.git):
            raise MatrixError(f"{where}: {row}: a build names its tensorrt, git and branch")
        if built.git and not built.git.startswith("https://"):
            raise MatrixError(f"{where}: {row}: 'git' must be an https URL")
    return Converters(default, names, by_major, tuple(releases), tuple(builds))


def _x86_tensorrt(
    entry, torch: TorchSource, converters: Converters, where, check_sources
) -> tuple[TensorRTPip, ...]:
    """x86's TensorRT from pip, one pin per range of target CPythons: the package for torch's
    CUDA major, each pinned version inside its supported range and with bindings wheels for
    every CPython it is for; the first pin (the default) in a range no TensorRT major the
    default converter lacks can meet."""
    section = entry.get("tensorrt")
    if not isinstance(section, dict):
        raise MatrixError(f"{where}: x86: missing 'tensorrt' (package, pins, bindings_wheels)")
    check_sources("x86.tensorrt", section)
    package = str(section.get("package", ""))
    wanted = f"tensorrt-cu{_major(torch.cuda)}"
    if package != wanted:
        raise MatrixError(
            f"{where}: x86.tensorrt: package '{package}' must be {wanted} (torch"
            f" {torch.version} is a CUDA {torch.cuda} build)"
        )
    wheels = section.get("bindings_wheels") or {}
    pins = []
    for pin in section.get("pins") or []:
        version = str(pin.get("version", ""))
        try:
            supported = SpecifierSet(str(pin.get("supported", "")))
            python = SpecifierSet(str(pin.get("python", "")))
            pinned = Version(version)
        except (InvalidSpecifier, InvalidVersion) as exc:
            raise MatrixError(f"{where}: x86.tensorrt: {exc}") from exc
        if not str(supported) or pinned not in supported:
            raise MatrixError(
                f"{where}: x86.tensorrt: version {version} is not inside supported '{supported}'"
            )
        has = tuple(str(minor) for minor in wheels.get(version) or ())
        lacking = [m for m in KNOWN_PYTHONS if Version(m) in python and m not in has]
        if lacking:
            raise MatrixError(
                f"{where}: x86.tensorrt: {package} {version} is pinned for Python {python} but"
                f" its bindings have no wheel for {', '.join(lacking)} (bindings_wheels)"
            )
        pins.append(TensorRTPip(package, version, supported, python, has))
    if not pins:
        raise MatrixError(f"{where}: x86.tensorrt: no pins")
    seen = str(section.get("newest_seen") or "")
    if not DOTTED.match(seen) or any(Version(seen) < Version(pin.version) for pin in pins):
        raise MatrixError(
            f"{where}: x86.tensorrt: newest_seen '{seen}' must be a version no older than a pin"
        )
    default = pins[0]
    for major, names in converters.by_major.items():
        if converters.default not in names and Version(f"{major}.0") in default.supported:
            raise MatrixError(
                f"{where}: x86.tensorrt: supported '{default.supported}' admits TensorRT {major},"
                f" which the default converter ({converters.default}) cannot use"
            )
    return tuple(pins)


def _jetson_tensorrt(section, socs, where, check_sources) -> tuple[JetsonTensorRT, ...]:
    """The TensorRT releases NVIDIA supports on Jetsons beside JetPack's own."""
    check_sources("jetson_tensorrt", section)
    found = []
    for entry in section.get("alternatives") or []:
        unknown = [soc for soc in entry.get("socs") or [] if soc not in socs]
        if unknown or not entry.get("socs"):
            raise MatrixError(f"{where}: jetson_tensorrt: socs {unknown or '[]'} not in socs")
        try:
            found.append(JetsonTensorRT(
                str(Version(str(entry["version"]))), SpecifierSet(str(entry["l4t"])),
                tuple(entry["socs"]), str(entry["modules"]), str(entry["package"]),
                " ".join(str(entry["unconfirmed"]).split()) if entry.get("unconfirmed") else None,
            ))  # fmt: skip
        except (KeyError, InvalidSpecifier, InvalidVersion) as exc:
            raise MatrixError(f"{where}: jetson_tensorrt: {exc}") from None
    return tuple(found)


def _unsupported(section, releases, where, check_sources) -> dict[str, str]:
    """L4T releases left out on purpose: each with a cited reason, none also a row."""
    reasons = {}
    for l4t, entry in section.items():
        row = f"unsupported R{l4t}"
        if not L4T.match(str(l4t)):
            raise MatrixError(f"{where}: {row}: L4T must be like '32.4.3'")
        if str(l4t) in releases:
            raise MatrixError(f"{where}: {row}: is also a release of the matrix")
        if not isinstance(entry, dict) or not str(entry.get("reason") or "").strip():
            raise MatrixError(f"{where}: {row}: missing 'reason'")
        check_sources(row, entry)
        reason = " ".join(str(entry["reason"]).split())
        label = _text(entry.get("jetpack"))
        reasons[str(l4t)] = f"JetPack {label}: {reason}" if label else reason
    return reasons


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _names(cited: Any) -> list[str]:
    return [cited] if isinstance(cited, str) else list(cited or [])


def _packages(section, where, check_sources) -> None:
    check_sources("packages", section)
    pycuda = section.get("pycuda") or {}
    for key in ("version", "python36"):
        if not DOTTED.match(str(pycuda.get(key, ""))):
            raise MatrixError(f"{where}: packages.pycuda: '{key}' is not a version")
    torch2trt = section.get("torch2trt") or {}
    if not str(torch2trt.get("git", "")).startswith("https://"):
        raise MatrixError(f"{where}: packages.torch2trt: 'git' must be an https URL")
    if not torch2trt.get("ref"):
        raise MatrixError(f"{where}: packages.torch2trt: missing the pinned 'ref'")
    for last in (section.get("cuda_python") or {}).get("last_for_python") or ():
        try:
            SpecifierSet(str(last["python"]))
        except (KeyError, InvalidSpecifier, TypeError) as exc:
            raise MatrixError(f"{where}: packages.cuda_python.last_for_python: {exc}") from exc
        if not DOTTED.match(str(last.get("line", ""))) or not DOTTED.match(str(last.get("cuda"))):
            raise MatrixError(
                f"{where}: packages.cuda_python.last_for_python: 'line' and 'cuda' are versions"
            )


def _torchvision_archives(section, where, check_sources) -> None:
    check_sources("torchvision_archives", section)
    for version, sha in (section.get("sha256") or {}).items():
        if not DOTTED.match(str(version)) or not SHA256.match(str(sha)):
            raise MatrixError(
                f"{where}: torchvision_archives: '{version}: {sha}' is not a version and a sha256"
            )


def _jetpack_packages(row: str, entry: dict[str, Any], where: str) -> dict[str, tuple[str, ...]]:
    """The release's CUDA/cuDNN package sets; the toolkit's name must carry the row's CUDA."""
    sets = entry.get("jetpack_packages")
    if not isinstance(sets, dict) or set(sets) != {"build", "runtime"}:
        raise MatrixError(f"{where}: {row}: jetpack_packages needs 'build' and 'runtime' lists")
    for kind, names in sets.items():
        if not names or not all(DEB_PACKAGE.match(str(name)) for name in names):
            raise MatrixError(
                f"{where}: {row}: jetpack_packages.{kind} {names!r} is not a list of apt packages"
            )
    toolkit = "cuda-toolkit-" + str(entry.get("cuda", "")).replace(".", "-")
    if toolkit not in sets["build"]:
        raise MatrixError(
            f"{where}: {row}: jetpack_packages.build must install {toolkit}"
            f" (CUDA {entry.get('cuda')})"
        )
    return {kind: tuple(str(name) for name in names) for kind, names in sets.items()}


def _cusparselt(row: str, entry: dict[str, Any], where: str) -> CusparseLt | None:
    """The optional cuSPARSELt archive: a version, an https URL, a sha256 or null."""
    section = entry.get("cusparselt")
    if section is None:
        return None
    if not isinstance(section, dict) or not DOTTED.match(str(section.get("version", ""))):
        raise MatrixError(f"{where}: {row}: cusparselt needs a 'version' like '0.5.2.1'")
    url = str(section.get("url", ""))
    if not url.startswith("https://"):
        raise MatrixError(f"{where}: {row}: cusparselt url '{url}' is not https")
    sha = section.get("sha256")
    if sha is not None and not SHA256.match(str(sha)):
        raise MatrixError(f"{where}: {row}: cusparselt sha256 '{sha}' is not 64 hex digits")
    return CusparseLt(str(section["version"]), url, sha)


def _jetpack_apt(section, where, check_sources) -> None:
    check_sources("jetpack_apt", section)
    for key in ("url", "key_url"):
        if not str(section.get(key, "")).startswith("https://"):
            raise MatrixError(f"{where}: jetpack_apt: '{key}' must be an https URL")
    if not SHA256.match(str(section.get("key_sha256", ""))):
        raise MatrixError(f"{where}: jetpack_apt: 'key_sha256' is not 64 lowercase hex digits")
    if not FINGERPRINT.match(str(section.get("key_fingerprint", ""))):
        raise MatrixError(f"{where}: jetpack_apt: 'key_fingerprint' is not 40 uppercase hex digits")


def _images(section, releases, x86, where, check_sources) -> tuple[Image, ...]:
    check_sources("images", section)
    images = []
    for entry in section.get("jetson") or []:
        l4t = str(entry.get("l4t"))
        row = f"image r{l4t}"
        if l4t not in releases:
            raise MatrixError(f"{where}: {row}: L4T R{l4t} is not a release of the matrix")
        try:
            hosts = SpecifierSet(str(entry.get("hosts", "")))
        except InvalidSpecifier as exc:
            raise MatrixError(f"{where}: {row}: hosts '{entry.get('hosts')}': {exc}") from exc
        if not str(hosts) or Version(l4t) not in hosts:
            raise MatrixError(f"{where}: {row}: hosts '{hosts}' must include its own L4T")
        if not entry.get("base"):
            raise MatrixError(f"{where}: {row}: missing 'base'")
        release = releases[l4t]
        images.append(
            Image(f"r{l4t}", release, str(entry["base"]), hosts, _cuda_from(row, entry, where),
                  str(entry.get("cuda") or release.cuda))
        )  # fmt: skip
    for index, image in enumerate(images):
        for other in images[index + 1 :]:
            overlap = [r for r in releases if image.runs_on(r) and other.runs_on(r)]
            if overlap:
                raise MatrixError(
                    f"{where}: images {image.name} and {other.name} both claim R{overlap[0]}"
                )
    x86_entry = section.get("x86") or {}
    if not x86_entry.get("base"):
        raise MatrixError(f"{where}: images.x86: missing 'base'")
    check_sources("images.x86", x86_entry)
    if not DOTTED.match(str(x86_entry.get("cuda") or "")):
        raise MatrixError(f"{where}: images.x86: 'cuda' (the base image's CUDA) is missing")
    cuda_from = _cuda_from("images.x86", x86_entry, where)
    images.append(
        Image("x86_64", x86, str(x86_entry["base"]), None, cuda_from, str(x86_entry["cuda"]))
    )
    for image in images:
        if _major(image.cuda) != _major(image.release.torch.cuda):
            raise MatrixError(
                f"{where}: image {image.name}: its CUDA {image.cuda} and torch"
                f" {image.release.torch.version}'s CUDA {image.release.torch.cuda} differ in"
                " major version (CUDA extensions built there would not load)"
            )
    return tuple(images)


def _major(version: str) -> str:
    return version.split(".")[0]


def _family_archs(row: str, family: dict[str, Any], socs: dict[str, str], where: str) -> None:
    """A family's SoCs are in the matrix, and its CUDA arch list is exactly their capabilities."""
    names = family.get("socs") or []
    unknown = [name for name in names if name not in socs]
    if not names or unknown:
        raise MatrixError(f"{where}: {row}: socs {unknown or names!r} are not SoCs of the matrix")
    wanted = sorted({socs[name] for name in names}, key=Version)
    archs = str(family.get("torch_cuda_arch_list", "")).split(";")
    if archs != wanted:
        raise MatrixError(
            f"{where}: {row}: torch_cuda_arch_list '{';'.join(archs)}' must be its SoCs'"
            f" compute capabilities '{';'.join(wanted)}'"
        )


def _cuda_from(row: str, entry: dict[str, Any], where: str) -> str:
    value = entry.get("cuda_from")
    if value not in CUDA_FROM:
        raise MatrixError(
            f"{where}: {row}: cuda_from '{value}' is not one of {', '.join(CUDA_FROM)}"
        )
    return str(value)


def _requires_dist(section: Any, where: str) -> dict[str, str]:
    """torchvision_pairs.requires_dist: "<torchvision release>": "torch<specifier>"."""
    if not isinstance(section, dict):
        raise MatrixError(f"{where}: torchvision_pairs: requires_dist must be a mapping")
    out = {}
    for vision, requirement in section.items():
        text = str(requirement)
        try:
            Version(str(vision))
            SpecifierSet(text.removeprefix("torch"))
        except (InvalidVersion, InvalidSpecifier):
            raise MatrixError(
                f"{where}: torchvision_pairs: requires_dist '{vision}: {text}' is not a "
                "torchvision release and a torch requirement like 'torch>=2.14.0'"
            ) from None
        if not text.startswith("torch") or text.startswith("torchvision"):
            raise MatrixError(
                f"{where}: torchvision_pairs: requires_dist '{vision}: {text}' must name torch"
            )
        out[str(vision)] = text
    return out
