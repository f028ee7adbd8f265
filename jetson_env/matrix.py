"""Load and validate the version matrix (data/matrix.yml), and look things up in it.

Its shape is data/matrix.schema.json's (a wrong value is named by its path); the rules between
rows (a torch pairs with its torchvision, a cited source exists, ...) are the small functions
below. Both run on the whole file, so a broken row fails at once, naming the row, instead of
surfacing later as a wrong install.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from jetson_env import ansible_core, pairing, yaml_files

# The matrix's shape: its sections, rows and the form of every value (shipped in the wheel).
SCHEMA = Path(__file__).parent / "data" / "matrix.schema.json"
L4T = re.compile(r"^\d+\.\d+\.\d+$")
# The CPython minors the x86 TensorRT pins must have bindings wheels for (where they apply).
KNOWN_PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
# The x86 Pythons `jetson-env matrix` states TensorRT and converters for: Ubuntu 22.04's, 24.04's
# and 26.04's.
X86_PYTHONS = ("3.10", "3.12", "3.14")
RELEASE_FIELDS = ("jetpack", "family", "ubuntu", "cuda", "cudnn", "tensorrt", "python")


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
def load(path: Path | None = None, shape: bool = False) -> Matrix:
    """Load the matrix and check its rules; raises MatrixError naming the first bad row.
    `shape`: check it against matrix.schema.json as well (the tests and scripts/matrix-refresh:
    compiling it costs a start 0.2 s and checking 15 ms, against 27 ms for the whole load, and
    the shipped file's shape is proven by the tests). A shape the rules trip over is named by
    the schema either way."""
    path = path or default_path()
    try:
        raw = yaml_files.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise MatrixError(f"{path}: cannot read the matrix: {exc}") from exc
    return validate(raw, where=str(path), shape=shape)


@cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


@cache
def _shape_validator() -> Callable[[Any], Any]:
    """matrix.schema.json, compiled once (fastjsonschema: pure Python)."""
    import fastjsonschema

    return fastjsonschema.compile(_schema())


def check_shape(raw: Any, where: str = "matrix") -> None:
    """MatrixError where `raw` is not of matrix.schema.json's shape, naming the place as a
    path: "releases.36.4.3.torch.sha256: must be a sha256 (64 lowercase hex digits) ...,
    not 'abc'", "releases.36.2.0: missing 'cuda'"."""
    import fastjsonschema

    try:
        _shape_validator()(raw)
    except fastjsonschema.JsonSchemaValueException as exc:
        path = exc.name.removeprefix("data").lstrip(".") or "the top level"
        raise MatrixError(f"{where}: {path}: {_shape_said(exc)}") from None


def _shape_said(exc: Any) -> str:
    """What a schema violation means, in the schema's own words (its descriptions)."""
    definition, value = _resolved(exc.definition or {}), exc.value
    if exc.rule == "required":
        return "missing " + ", ".join(repr(k) for k in definition["required"] if k not in value)
    if exc.rule == "propertyNames":
        names = _resolved(definition["propertyNames"])
        key = next(k for k in value if not (isinstance(k, str) and re.search(names["pattern"], k)))
        return f"key {key!r} must be {names['description']}"
    if definition.get("description") and exc.rule not in ("additionalProperties", "minProperties"):
        return f"must be {definition['description']}, not {value!r}"
    return exc.message.removeprefix(exc.name).strip()


def _resolved(definition: dict[str, Any]) -> dict[str, Any]:
    """A definition with its "$ref" (#/definitions/NAME) followed."""
    ref = definition.get("$ref", "")
    return _schema()["definitions"][ref.rsplit("/", 1)[1]] if ref else definition


def validate(raw: Any, where: str = "matrix", shape: bool = True) -> Matrix:
    """The Matrix of a parsed matrix file: its shape (matrix.schema.json, where `shape`), then
    the rules between its rows."""
    if shape:
        check_shape(raw, where)
    try:
        return _build(raw, where)
    except (KeyError, IndexError, TypeError, AttributeError, InvalidVersion, InvalidSpecifier):
        check_shape(raw, where)  # names the place the rules tripped over
        raise


def _build(raw: dict[str, Any], where: str) -> Matrix:
    """The rules a schema cannot say, each a function below, in the order rows depend on."""
    _sources_cited(raw, where)
    pairs = raw["torchvision_pairs"]["pairs"]
    requires_dist = _requires_dist(raw["torchvision_pairs"]["requires_dist"], where)
    socs = {soc: str(entry["compute_capability"]) for soc, entry in raw["socs"].items()}
    for name, family in raw["families"].items():
        _family_archs(f"family {name}", family, socs, where)
    ubuntu = {
        release: Ubuntu(entry["codename"], entry["glibc"], tuple(_names(entry["source"])))
        for release, entry in raw["ubuntu"].items()
    }
    converters = _converters(raw["converters"], where)
    releases = {
        str(l4t): _release(f"release R{l4t}", str(l4t), entry, raw, ubuntu, converters, where)
        for l4t, entry in raw["releases"].items()
    }
    x86_entry = raw["x86"]
    x86_torch, x86_torchvision = _torch(where, "x86", x86_entry, pairs, requires_dist)
    x86 = Release(l4t="", jetpack="", family="x86", ubuntu="", cuda="", cudnn="", tensorrt="",
                  python="", torch=x86_torch, torchvision=x86_torchvision,
                  sources=tuple(_names(x86_entry["source"])), jetpack_packages={})  # fmt: skip
    x86_tensorrt_pins = _x86_tensorrt(x86_entry["tensorrt"], x86_torch, converters, where)
    jetson_tensorrt = _jetson_tensorrt(raw["jetson_tensorrt"], socs, where)
    _routes_not_offered(raw["routes_not_offered"], socs, where)
    _container_bases(raw["container_bases"], where)
    try:
        core = ansible_core.parse(raw["ansible_core"], lambda _row, entry: _names(entry["source"]),
                                  raw["sources"].__getitem__)  # fmt: skip
    except ValueError as exc:
        raise MatrixError(f"{where}: {exc}") from None
    return Matrix(
        raw=raw,
        releases=releases,
        socs=socs,
        pairs=pairs,
        x86=x86,
        images=_images(raw["images"], releases, x86, where),
        unsupported=_unsupported(raw["unsupported"], releases, where),
        converters=converters,
        x86_tensorrt=x86_tensorrt_pins[0],
        x86_tensorrt_pins=x86_tensorrt_pins,
        jetson_tensorrt=jetson_tensorrt,
        ansible_core=core,
        ubuntu=ubuntu,
    )


def _sources_cited(raw: dict[str, Any], where: str) -> None:
    """Every `source` the matrix cites, at any depth, is one of `sources`."""

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for name in _names(node.get("source")) if path else ():
                if name not in raw["sources"]:
                    raise MatrixError(f"{where}: {path}.source: cites unknown source '{name}'")
            for key, value in node.items():
                if key != "sources" or path:
                    walk(value, f"{path}.{key}".lstrip("."))
        elif isinstance(node, list):
            for number, item in enumerate(node):
                walk(item, f"{path}[{number}]")

    walk(raw, "")


def _release(row, l4t, entry, raw, ubuntu, converters, where) -> Release:
    """A Jetson row: its family and Ubuntu are in the matrix, its torch pairs with its
    torchvision and shares its CUDA major, JetPack's toolkit package carries its CUDA, and
    its TensorRT major has converters."""
    if entry["family"] not in raw["families"]:
        raise MatrixError(f"{where}: {row}: unknown family '{entry['family']}'")
    if entry["ubuntu"] not in ubuntu:
        raise MatrixError(f"{where}: {row}: Ubuntu {entry['ubuntu']} has no entry in ubuntu"
                          " (its apt suite and glibc)")  # fmt: skip
    pairs = raw["torchvision_pairs"]
    torch, torchvision = _torch(where, row, entry, pairs["pairs"], pairs["requires_dist"])
    if _major(torch.cuda) != _major(entry["cuda"]):
        raise MatrixError(
            f"{where}: {row}: torch {torch.version} is built for CUDA {torch.cuda}, the"
            f" release ships CUDA {entry['cuda']}: their major versions must be the same"
        )
    toolkit = "cuda-toolkit-" + entry["cuda"].replace(".", "-")
    if toolkit not in entry["jetpack_packages"]["build"]:
        raise MatrixError(f"{where}: {row}: jetpack_packages.build must install {toolkit}"
                          f" (CUDA {entry['cuda']})")  # fmt: skip
    if not converters.for_tensorrt(entry["tensorrt"]):
        raise MatrixError(f"{where}: {row}: TensorRT {entry['tensorrt']}'s major has no entry"
                          " in converters.by_tensorrt_major")  # fmt: skip
    cusparselt = entry.get("cusparselt")
    return Release(
        l4t=l4t,
        torch=torch,
        torchvision=torchvision,
        sources=tuple(_names(entry["source"])),
        jetpack_packages={kind: tuple(names) for kind, names in entry["jetpack_packages"].items()},
        cusparselt=CusparseLt(**cusparselt) if cusparselt else None,
        **{field: str(entry[field]) for field in RELEASE_FIELDS},
    )


def _torch(where, row, entry, pairs, requires_dist) -> tuple[TorchSource, str]:
    """A row's torch and the torchvision it pairs with (jetson_env.pairing)."""
    torch, version = entry["torch"], entry["torch"]["version"]
    paired = pairing.pair(pairs, requires_dist, version)
    if paired is None:
        raise MatrixError(
            f"{where}: {row}: torch {version} has no torchvision pair in torchvision_pairs"
        )
    torchvision = entry["torchvision"]
    if not paired.admits(torchvision):
        raise MatrixError(
            f"{where}: {row}: torchvision {torchvision} does not pair with torch {version}"
            f" (expected {paired.wanted}: {paired.source})"
        )
    source = TorchSource(version, torch.get("url"), torch.get("index"), torch.get("filename"),
                         torch.get("sha256"), torch["cuda"])  # fmt: skip
    return source, torchvision


def _specifier(where: str, path: str, text: str) -> SpecifierSet:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise MatrixError(f"{where}: {path}: {exc}") from None


def _requires_dist(section: dict[str, str], where: str) -> dict[str, str]:
    """torchvision_pairs.requires_dist: "<torchvision release>": "torch<specifier>"."""
    for vision, requirement in section.items():
        _specifier(where, f"torchvision_pairs.requires_dist.{vision}",
                   requirement.removeprefix("torch"))  # fmt: skip
    return section


def _converters(section, where) -> Converters:
    """The converter table: every major lists known converters; the default is one of them."""
    names = dict(section["names"])
    by_major = {major: tuple(listed) for major, listed in section["by_tensorrt_major"].items()}
    for major, listed in by_major.items():
        unknown = [name for name in listed if name not in names]
        if unknown:
            raise MatrixError(
                f"{where}: converters.by_tensorrt_major.{major}: {unknown!r} is not a list of"
                f" converters named in converters.names ({', '.join(names)})"
            )
    if section["default"] not in names:
        raise MatrixError(
            f"{where}: converters.default '{section['default']}' is not in converters.names"
        )
    releases = []
    for version, entry in section["torch_tensorrt"].items():
        row, jetson = f"converters.torch_tensorrt.{version}", entry.get("jetson")
        releases.append(TorchTensorRT(
            version, _specifier(where, row, entry["torch"]),
            _specifier(where, row, entry["tensorrt"]),
            _specifier(where, row, jetson["torch"]) if jetson else None,
            _specifier(where, row, jetson["tensorrt"]) if jetson else None,
            entry.get("package", "tensorrt"),
        ))  # fmt: skip
    builds = tuple(
        JetsonTorchTensorRT(
            _specifier(where, f"converters.jetson_torch_tensorrt[{number}]", entry["l4t"]),
            entry["version"],
            entry.get("tensorrt"),
            " ".join(entry["obtained"].split()),
            entry.get("git"),
            entry.get("branch"),
            entry.get("nvidia_newest"),
            tuple(_names(entry["source"])),
        )
        for number, entry in enumerate(section["jetson_torch_tensorrt"])
    )
    return Converters(section["default"], names, by_major, tuple(releases), builds)


def _x86_tensorrt(
    section, torch: TorchSource, converters: Converters, where
) -> tuple[TensorRTPip, ...]:
    """x86's TensorRT from pip, one pin per range of target CPythons: the package for torch's
    CUDA major, each pinned version inside its supported range and with bindings wheels for
    every CPython it is for; the first pin (the default) in a range no TensorRT major the
    default converter lacks can meet."""
    package, wanted = section["package"], f"tensorrt-cu{_major(torch.cuda)}"
    if package != wanted:
        raise MatrixError(
            f"{where}: x86.tensorrt: package '{package}' must be {wanted} (torch"
            f" {torch.version} is a CUDA {torch.cuda} build)"
        )
    pins = []
    for number, pin in enumerate(section["pins"]):
        row, version = f"x86.tensorrt.pins[{number}]", pin["version"]
        supported = _specifier(where, row, pin["supported"])
        python = _specifier(where, row, pin["python"])
        if Version(version) not in supported:
            raise MatrixError(
                f"{where}: x86.tensorrt: version {version} is not inside supported '{supported}'"
            )
        has = tuple(section["bindings_wheels"].get(version) or ())
        lacking = [m for m in KNOWN_PYTHONS if Version(m) in python and m not in has]
        if lacking:
            raise MatrixError(
                f"{where}: x86.tensorrt: {package} {version} is pinned for Python {python} but"
                f" its bindings have no wheel for {', '.join(lacking)} (bindings_wheels)"
            )
        pins.append(TensorRTPip(package, version, supported, python, has))
    seen = section["newest_seen"]
    if any(Version(seen) < Version(pin.version) for pin in pins):
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


def _known_socs(where: str, row: str, named: list[str], socs: dict[str, str]) -> None:
    unknown = [soc for soc in named if soc not in socs]
    if unknown:
        raise MatrixError(f"{where}: {row}: socs {unknown} not in socs")


def _jetson_tensorrt(section, socs, where) -> tuple[JetsonTensorRT, ...]:
    """The TensorRT releases NVIDIA supports on Jetsons beside JetPack's own."""
    found = []
    for number, entry in enumerate(section["alternatives"]):
        row = f"jetson_tensorrt.alternatives[{number}]"
        _known_socs(where, row, entry["socs"], socs)
        unconfirmed = entry.get("unconfirmed")
        found.append(JetsonTensorRT(
            entry["version"], _specifier(where, row, entry["l4t"]), tuple(entry["socs"]),
            entry["modules"], entry["package"],
            " ".join(unconfirmed.split()) if unconfirmed else None,
        ))  # fmt: skip
    return tuple(found)


def _routes_not_offered(section, socs, where) -> None:
    for name, entry in section.items():
        row = f"routes_not_offered.{name}"
        _specifier(where, row, entry["hosts"]["l4t"])
        _known_socs(where, row, entry["hosts"]["socs"], socs)


def _container_bases(section, where) -> None:
    for name, entry in section["not_running"].items():
        row = f"container_bases.not_running.{name}"
        _specifier(where, row, entry["hosts"])
        try:
            re.compile(entry["match"])
        except re.error as exc:
            raise MatrixError(f"{where}: {row}: match is not a regular expression: {exc}") from None


def _unsupported(section, releases, where) -> dict[str, str]:
    """L4T releases left out on purpose, none also a row: l4t -> its labelled reason."""
    reasons = {}
    for l4t, entry in section.items():
        if l4t in releases:
            raise MatrixError(f"{where}: unsupported R{l4t}: is also a release of the matrix")
        reason = " ".join(entry["reason"].split())
        label = _text(entry.get("jetpack"))
        reasons[l4t] = f"JetPack {label}: {reason}" if label else reason
    return reasons


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _names(cited: Any) -> list[str]:
    return [cited] if isinstance(cited, str) else list(cited or [])


def _images(section, releases, x86, where) -> tuple[Image, ...]:
    """Each image provisions a row, runs on its own L4T, claims no host another claims, and
    has its torch's CUDA major."""
    images = []
    for entry in section["jetson"]:
        l4t = entry["l4t"]
        row = f"image r{l4t}"
        if l4t not in releases:
            raise MatrixError(f"{where}: {row}: L4T R{l4t} is not a release of the matrix")
        hosts = _specifier(where, row, entry["hosts"])
        if Version(l4t) not in hosts:
            raise MatrixError(f"{where}: {row}: hosts '{hosts}' must include its own L4T")
        release = releases[l4t]
        images.append(Image(f"r{l4t}", release, entry["base"], hosts, entry["cuda_from"],
                            entry.get("cuda") or release.cuda))  # fmt: skip
    for index, image in enumerate(images):
        for other in images[index + 1 :]:
            overlap = [r for r in releases if image.runs_on(r) and other.runs_on(r)]
            if overlap:
                raise MatrixError(
                    f"{where}: images {image.name} and {other.name} both claim R{overlap[0]}"
                )
    entry = section["x86"]
    images.append(Image("x86_64", x86, entry["base"], None, entry["cuda_from"], entry["cuda"]))
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
    unknown = [name for name in family["socs"] if name not in socs]
    if unknown:
        raise MatrixError(f"{where}: {row}: socs {unknown!r} are not SoCs of the matrix")
    wanted = sorted({socs[name] for name in family["socs"]}, key=Version)
    archs = family["torch_cuda_arch_list"].split(";")
    if archs != wanted:
        raise MatrixError(
            f"{where}: {row}: torch_cuda_arch_list '{';'.join(archs)}' must be its SoCs'"
            f" compute capabilities '{';'.join(wanted)}'"
        )
