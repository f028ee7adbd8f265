"""What the playbook fetches for a target: the pip sets, files, sdists and apt packages
its roles install, and what must be supplied by hand. What a role installs is the roles'
own rule (jetson_env.provisioning: role_installs, torch_source, the torchvision pairing, the
matrix's pycuda, cuda-python and TensorRT pins), applied here to the row and the roles'
defaults; the roles apply it through the collection's filters."""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from jetson_env import collection, provisioning, tensorrt_tarballs
from jetson_env import roles as role_defaults
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.targets import BundleTarget
from jetson_env.matrix import CusparseLt, Matrix, TorchSource, UnknownRelease

ROLES = collection.roles_a_bundle("files")  # the roles whose files a bundle carries
# What a --file KIND=PATH can bring in (files NVIDIA serves behind a login or from hosts
# this machine cannot reach).
FILE_KINDS = ("torch", "torchvision", "torch2trt", "tensorrt", "cusparselt")


@dataclass
class PipSet:
    """Requirements pip resolves for a target (wheels only, the target's tags)."""

    role: str
    requirements: list[str]
    index: str | None = None  # None: pip's configured indexes
    no_deps: bool = False
    # Where pip cannot resolve the set (wheels NVIDIA serves only from its own index), this
    # goes to the manifest's "supply by hand" list instead of failing the bundle.
    unresolved: Manual | None = None


@dataclass
class UrlFile:
    """A file from an https URL (or a local file given with --file), into files/ or pip/."""

    role: str
    what: str
    url: str
    filename: str
    sha256: str | None
    folder: str = "files"

    @classmethod
    def local(cls, role: str, what: str, path: Path, sha256: str | None = None,
              folder: str = "files") -> UrlFile:  # fmt: skip
        """A file given with --file KIND=PATH."""
        return cls(role, what, path.resolve().as_uri(), path.name, sha256, folder)


@dataclass
class Manual:
    """Something the bundle cannot fetch: what, where it goes, where to get it."""

    role: str
    what: str
    expected: str  # path inside the bundle
    where_from: str
    kind: str  # the --file KIND that brings it in
    sha256: str | None = None
    target: str = ""


@dataclass
class Needs:
    pip: list[PipSet] = field(default_factory=list)
    urls: list[UrlFile] = field(default_factory=list)
    manual: list[Manual] = field(default_factory=list)
    sdists: list[tuple[str, str]] = field(default_factory=list)  # (role, "pycuda==2025.1.3")
    apt: dict[str, list[str]] = field(default_factory=dict)  # role -> the apt packages it installs


def github_archive(git_url: str, ref: str) -> str:
    """A GitHub repository's source archive of a tag or commit (https)."""
    base = git_url.removesuffix(".git")
    return f"{base}/archive/{ref}.tar.gz"


def archive_version(name: str) -> str:
    """The torchvision version a source archive's name carries (vision-0.29.1.tar.gz,
    Debian's pytorch-vision_0.21.0.orig.tar.gz), "" for none: the bundle records each
    archive under it, and the torchvision role asks the bundle for its paired version's."""
    named = re.search(r"(\d+\.\d+\.\d+)", name)
    return named.group(1) if named else ""


@dataclass(frozen=True)
class Row:
    """A target's matrix row as its roles read it, and the --file KIND=PATH files given."""

    matrix: Matrix
    target: BundleTarget
    fields: dict  # numpy, pip_prerequisites, apt_prerequisites, onnx_export_packages
    torch: TorchSource
    torchvision: str
    cusparselt: CusparseLt | None
    files: dict[str, Path]


def needs_for(
    matrix: Matrix, target: BundleTarget, roles: Iterable[str], files: dict[str, Path]
) -> Needs:
    """What the playbook fetches for `target` with `roles` (the matrix row, the roles'
    defaults), and what a `--file KIND=PATH` supplies instead: each role's ROLE_NEEDS."""
    roles = set(roles)
    if target.l4t:
        release = matrix.release(target.l4t)
        family = matrix.family(release.family)
        fields = {key: family[key] for key in ("apt_prerequisites", "pip_prerequisites",
                                               "onnx_export_packages", "numpy")}  # fmt: skip
        row = Row(matrix, target, fields, release.torch, release.torchvision, release.cusparselt,
                  files)  # fmt: skip
    else:
        row = Row(matrix, target, matrix.raw["x86"], matrix.x86.torch, matrix.x86.torchvision,
                  None, files)  # fmt: skip
    needs = Needs()
    for role, add in ROLE_NEEDS.items():
        if role in roles:
            add(row, needs)
    needs.apt = {role: packages for role, packages in needs.apt.items() if packages}
    return needs


def _python_base(row: Row, needs: Needs) -> None:
    installs = role_installs("python_base", row.fields)
    needs.pip.append(PipSet("python_base", installs["pip"]))
    needs.apt["python_base"] = installs["apt"]


def _torch(row: Row, needs: Needs) -> None:
    # Where the torch role takes it from (the row's torch, no override: the role's rule).
    source = provisioning.torch_source(dataclasses.asdict(row.torch))
    if "torch" in row.files:
        needs.urls.append(UrlFile.local("torch", "torch wheel", row.files["torch"], folder="pip"))
    elif source["kind"] == "url":
        needs.urls.append(UrlFile("torch", "torch wheel", source["url"], source["filename"],
                                  source["matrix_sha256"] or None, "pip"))  # fmt: skip
    else:
        needs.pip.append(PipSet("torch", [f"torch=={source['version']}"],
                                source["index"] or None, no_deps=True))  # fmt: skip
    # torch's own dependencies: resolved once the wheel is here (see Bundler._torch_deps).
    cusparselt = row.cusparselt
    if cusparselt is None:
        return
    what = "cuSPARSELt archive"
    if "cusparselt" in row.files:
        needs.urls.append(UrlFile.local("torch", what, row.files["cusparselt"], cusparselt.sha256))
    else:
        name = Path(urllib.parse.urlsplit(cusparselt.url).path).name
        needs.urls.append(UrlFile("torch", what, cusparselt.url, name, cusparselt.sha256))
    needs.apt["torch"] = role_defaults.default("torch", "cusparselt_apt_packages")


def _torchvision(row: Row, needs: Needs) -> None:
    files = row.files
    pins = row.matrix.raw.get("torchvision_archives", {}).get("sha256", {})
    if "torchvision" in files:
        # A release tarball of another version (Debian's pytorch-vision_0.21.0.orig.tar.gz):
        # the matrix's pin for the version its name carries.
        version = archive_version(files["torchvision"].name) or row.torchvision
        source = files["torchvision"].resolve().as_uri()
        filename = files["torchvision"].name
    else:
        # The pairing rule, for the torch this bundle brings (the row's, or --file's wheel).
        try:
            torch_version = (
                str(parse_wheel_filename(files["torch"].name)[1])
                if "torch" in files
                else row.torch.version
            )
            version = provisioning.torchvision_tag_for(row.matrix, torch_version, row.torchvision)
        except (InvalidWheelFilename, UnknownRelease) as exc:
            raise BundleError(
                f"--file torch: {exc}, or bring its source: --file torchvision=PATH"
            ) from None
        source = github_archive("https://github.com/pytorch/vision.git", f"refs/tags/v{version}")
        filename = f"vision-{version}.tar.gz"
    needs.urls.append(
        UrlFile("torchvision", "torchvision source archive", source, filename, pins.get(version))
    )
    installs = role_installs("torchvision", row.fields)
    needs.pip.append(PipSet("torchvision", installs["pip"]))
    needs.apt["torchvision"] = installs["apt"]


def _pycuda(row: Row, needs: Needs) -> None:
    target, matrix = row.target, row.matrix
    needs.sdists.append(("pycuda", f"pycuda=={matrix.pycuda_for(target.python)}"))
    # The role's cuda-python: the host's CUDA major where its facts said it (bundle -i),
    # else the row's (x86: its torch's, the CUDA it runs).
    cuda = target.cuda or (matrix.release(target.l4t).cuda if target.l4t else row.torch.cuda)
    cuda_python = matrix.cuda_python_for(target.python, cuda)
    if cuda_python:
        needs.pip.append(PipSet("pycuda", [cuda_python]))


def _torch2trt(row: Row, needs: Needs) -> None:
    tensorrt = _tensorrt_of(row)
    if tensorrt and not row.matrix.converters.supports("torch2trt", tensorrt):
        return  # the role leaves torch2trt out where it cannot use the TensorRT (11: Python 3.14)
    ref = row.matrix.torch2trt["ref"]
    given = row.files.get("torch2trt")
    url = given.resolve().as_uri() if given else github_archive(row.matrix.torch2trt["git"], ref)
    filename = given.name if given else f"torch2trt-{ref}.tar.gz"
    needs.urls.append(
        UrlFile("torch2trt", f"torch2trt {ref[:12]} source archive", url, filename, None)
    )
    build = role_defaults.default("torch2trt", "build_pip_packages")
    needs.pip.append(PipSet("torch2trt", list(build)))
    needs.apt["torch2trt"] = role_defaults.default("torch2trt", "cmake_apt_packages")


def _tensorrt_of(row: Row) -> str:
    """The TensorRT the tensorrt role installs for the row: the row's, the tarball's, or x86's
    pin for the target's Python ("" for a tarball whose name says no version)."""
    if row.target.l4t:
        return row.matrix.release(row.target.l4t).tensorrt
    if "tensorrt" in row.files:
        named = tensorrt_tarballs.NAME.match(row.files["tensorrt"].name)
        return named.group(1) if named else ""
    return row.matrix.x86_tensorrt_for(row.target.python).version


def _tensorrt(row: Row, needs: Needs) -> None:
    target = row.target
    # The TensorRT the role installs decides its onnx set (the role's rule), resolved with the
    # row's numpy pin first.
    tensorrt = _tensorrt_of(row)
    onnx = provisioning.onnx_export_packages(row.matrix, row.fields, tensorrt)
    if onnx:
        needs.pip.append(PipSet("tensorrt", [row.fields["numpy"], *onnx]))
    if target.l4t:
        needs.apt["tensorrt"] = role_defaults.default("tensorrt", "apt_packages")
        return
    if "tensorrt" in row.files:
        needs.urls.append(UrlFile.local("tensorrt", "TensorRT tarball", row.files["tensorrt"]))
        return
    # x86's TensorRT from pip (the matrix's pin): PyPI has tensorrt-cuXX only as an sdist
    # and no tensorrt-cuXX-libs wheels; NVIDIA's own pip index has the wheels.
    pinned = row.matrix.x86_tensorrt_for(target.python)
    requirement = pinned.requirement
    manual = Manual(
        "tensorrt",
        f"TensorRT wheels ({requirement} with its -libs and -bindings)",
        f"pip/{pinned.package.replace('-', '_')}*-*.whl",
        "NVIDIA's pip index (pip resolves only wheels here and PyPI has none of"
        f" {pinned.package}'s libraries): add that index to pip's"
        " configuration (pip config set global.extra-index-url URL) and run"
        " this bundle command again, or bring a TensorRT tarball with"
        " --file tensorrt=PATH",
        "tensorrt",
        target=target.key,
    )
    needs.pip.append(PipSet("tensorrt", [requirement], unresolved=manual))


# What each role a bundle carries files for fetches (the registry's `bundle: files` roles,
# ROLES), in the order a bundle fetches them.
ROLE_NEEDS = {
    "python_base": _python_base,
    "torch": _torch,
    "torchvision": _torchvision,
    "pycuda": _pycuda,
    "torch2trt": _torch2trt,
    "tensorrt": _tensorrt,
}


def role_installs(role: str, row: dict) -> dict[str, list[str]]:
    """What `role` installs with its defaults on a host of `row` with nothing installed: the
    roles' own rule (jetson_env.provisioning.role_installs, which they apply through the
    collection's filter), so a bundle brings what they install."""
    return provisioning.role_installs(role, row, role_defaults.defaults(role))


def file_kind(entry: dict) -> str:
    """The --file KIND that brings in a manifest's artifact or manual entry again: a file of
    Needs.urls (a wheel, archive or tarball --file replaces) has its KIND; any other is a
    download the same line fetches again (a wheel pip resolved, a .deb): its role's name,
    or "pip" for a role that is a KIND (torch's dependencies: `--file torch=` would take
    one of them for the torch wheel)."""
    if entry["what"] == "cuSPARSELt archive":
        return "cusparselt"
    if entry["role"] in FILE_KINDS and not entry["what"].endswith((" wheel", " archive",
                                                                   " tarball")):  # fmt: skip
        return "pip"
    return entry["role"]
