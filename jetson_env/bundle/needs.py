"""What the playbook fetches for a target: the pip sets, files, sdists and apt packages
its roles install, and what must be supplied by hand."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from jetson_env import provisioning, tensorrt_tarballs
from jetson_env import roles as role_defaults
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.targets import Target
from jetson_env.matrix import Matrix, UnknownRelease

ROLES = ("python_base", "torch", "torchvision", "pycuda", "tensorrt", "torch2trt")
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


def needs_for(
    matrix: Matrix, target: Target, roles: Iterable[str], files: dict[str, Path]
) -> Needs:
    """What the playbook fetches for `target` with `roles` (the matrix row, the roles'
    defaults), and what a `--file KIND=PATH` supplies instead."""
    roles = set(roles)
    needs = Needs()
    if target.l4t:
        release = matrix.release(target.l4t)
        family = matrix.family(release.family)
        row = {
            "apt_prerequisites": list(family["apt_prerequisites"]),
            "pip_prerequisites": list(family["pip_prerequisites"]),
            "onnx_export_packages": list(family["onnx_export_packages"]),
            "numpy": family["numpy"],
        }
        torch, torchvision, cusparselt = release.torch, release.torchvision, release.cusparselt
    else:
        raw = matrix.raw["x86"]
        row = raw
        torch, torchvision, cusparselt = matrix.x86.torch, matrix.x86.torchvision, None
    if "python_base" in roles:
        own = role_defaults.default("python_base", "pip_packages")
        needs.pip.append(
            # The role's own list (termcolor, ...): its defaults are the one source.
            PipSet("python_base", [row["numpy"], *row["pip_prerequisites"], *own])
        )
        needs.apt["python_base"] = list(row["apt_prerequisites"])
    if "torch" in roles:
        if "torch" in files:
            needs.urls.append(UrlFile.local("torch", "torch wheel", files["torch"], folder="pip"))
        elif torch.url:
            needs.urls.append(
                UrlFile(
                    "torch",
                    "torch wheel",
                    torch.url,
                    torch.filename or Path(urllib.parse.urlsplit(torch.url).path).name,
                    torch.sha256,
                    "pip",
                )
            )
        else:
            needs.pip.append(
                PipSet("torch", [f"torch=={torch.version}"], torch.index, no_deps=True)
            )
        # torch's own dependencies: resolved once the wheel is here (see Bundler._torch_deps).
        if cusparselt is not None:
            if "cusparselt" in files:
                needs.urls.append(
                    UrlFile.local(
                        "torch", "cuSPARSELt archive", files["cusparselt"], cusparselt.sha256
                    )
                )
            else:
                needs.urls.append(
                    UrlFile(
                        "torch",
                        "cuSPARSELt archive",
                        cusparselt.url,
                        Path(urllib.parse.urlsplit(cusparselt.url).path).name,
                        cusparselt.sha256,
                    )
                )
            needs.apt["torch"] = role_defaults.default("torch", "cusparselt_apt_packages")
    if "torchvision" in roles:
        pins = matrix.raw.get("torchvision_archives", {}).get("sha256", {})
        if "torchvision" in files:
            # A release tarball of another version (Debian's pytorch-vision_0.21.0.orig.tar.gz):
            # the matrix's pin for the version its name carries.
            version = archive_version(files["torchvision"].name) or torchvision
            source = files["torchvision"].resolve().as_uri()
            filename = files["torchvision"].name
        else:
            # The pairing rule, for the torch this bundle brings (the row's, or --file's wheel).
            try:
                torch_version = (
                    str(parse_wheel_filename(files["torch"].name)[1])
                    if "torch" in files
                    else torch.version
                )
                version = provisioning.torchvision_tag_for(matrix, torch_version, torchvision)
            except (InvalidWheelFilename, UnknownRelease) as exc:
                raise BundleError(
                    f"--file torch: {exc}, or bring its source: --file torchvision=PATH"
                ) from None
            source = github_archive(
                "https://github.com/pytorch/vision.git", f"refs/tags/v{version}"
            )
            filename = f"vision-{version}.tar.gz"
        needs.urls.append(
            UrlFile(
                "torchvision", "torchvision source archive", source, filename, pins.get(version)
            )
        )
        # The role's build requirements (its defaults) with the row's numpy pin first.
        build = role_defaults.default("torchvision", "build_pip_packages")
        needs.pip.append(PipSet("torchvision", [row["numpy"], *build]))
        needs.apt["torchvision"] = role_defaults.default("torchvision", "apt_packages")
    if "pycuda" in roles:
        needs.sdists.append(("pycuda", f"pycuda=={matrix.pycuda_for(target.python)}"))
        # The role's cuda-python: the host's CUDA major where its facts said it (bundle -i),
        # else the row's (x86: its torch's, the CUDA it runs).
        cuda = target.cuda or (matrix.release(target.l4t).cuda if target.l4t else torch.cuda)
        cuda_python = matrix.cuda_python_for(target.python, cuda)
        if cuda_python:
            needs.pip.append(PipSet("pycuda", [cuda_python]))
    if "torch2trt" in roles:
        ref = matrix.torch2trt["ref"]
        if "torch2trt" in files:
            url = files["torch2trt"].resolve().as_uri()
        else:
            url = github_archive(matrix.torch2trt["git"], ref)
        needs.urls.append(
            UrlFile(
                "torch2trt",
                f"torch2trt {ref[:12]} source archive",
                url,
                f"torch2trt-{ref}.tar.gz" if "torch2trt" not in files else files["torch2trt"].name,
                None,
            )
        )
        build = role_defaults.default("torch2trt", "build_pip_packages")
        needs.pip.append(PipSet("torch2trt", list(build)))
        needs.apt["torch2trt"] = role_defaults.default("torch2trt", "cmake_apt_packages")
    if "tensorrt" in roles:
        # The TensorRT the role installs: the row's, the tarball's, or x86's pin.
        if target.l4t:
            tensorrt = release.tensorrt
        elif "tensorrt" in files:
            named = tensorrt_tarballs.NAME.match(files["tensorrt"].name)
            tensorrt = named.group(1) if named else ""
        else:
            tensorrt = matrix.x86_tensorrt_for(target.python).version
        # The role's onnx set (the role's rule), resolved with the row's numpy pin first.
        onnx = provisioning.onnx_export_packages(matrix, row, tensorrt)
        if onnx:
            needs.pip.append(PipSet("tensorrt", [row["numpy"], *onnx]))
        if target.l4t:
            needs.apt["tensorrt"] = role_defaults.default("tensorrt", "apt_packages")
        elif "tensorrt" in files:
            needs.urls.append(UrlFile.local("tensorrt", "TensorRT tarball", files["tensorrt"]))
        else:
            # x86's TensorRT from pip (the matrix's pin): PyPI has tensorrt-cuXX only as an
            # sdist and no tensorrt-cuXX-libs wheels; NVIDIA's own pip index has the wheels.
            pinned = matrix.x86_tensorrt_for(target.python)
            requirement = pinned.requirement
            needs.pip.append(
                PipSet(
                    "tensorrt",
                    [requirement],
                    unresolved=Manual(
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
                    ),
                )
            )
    needs.apt = {role: packages for role, packages in needs.apt.items() if packages}
    return needs


def file_kind(entry: dict) -> str:
    """The --file KIND that brings in a manifest's artifact or manual entry again."""
    return {"torch wheel": "torch", "cuSPARSELt archive": "cusparselt"}.get(
        entry["what"], entry["role"]
    )
