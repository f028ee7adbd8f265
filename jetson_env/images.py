"""Container images: which exist (from the matrix), which one runs on a host, building one.

The image for a host follows the L4T compatibility rules kept in the matrix
(`images.jetson[].hosts`), the way jetson-containers' autotag picks a container.
"""

from __future__ import annotations

import json
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from jetson_env import installed
from jetson_env.matrix import Image, Matrix, UnknownRelease, normalize_l4t

DEFAULT_REPOSITORY = "jetson-env"
# uv's own Requires-Python: below it no Python for the controller side can be installed.
UV_PYTHON_MIN = Version("3.8")
IMAGES_DIR = Path(__file__).resolve().parent.parent / "images"


class NoImage(LookupError):
    """No image can run on this host; the message says why and what to do."""


class BuildFailed(RuntimeError):
    """The image build failed; the message ends with where the full log is."""


class DockerUnavailable(RuntimeError):
    """No Docker engine answers; the message says what to start."""


@dataclass(frozen=True)
class HostPlatform:
    is_jetson: bool
    machine: str
    l4t: str | None


def tag(image: Image, repository: str = DEFAULT_REPOSITORY) -> str:
    return f"{repository}:{image.name}"


def dockerfile(image: Image) -> Path:
    """One Dockerfile for every image; the build arguments make the difference."""
    return IMAGES_DIR / "Dockerfile"


def build_args(image: Image, matrix: Matrix) -> dict[str, str]:
    """Everything version-like the Dockerfile needs, from the matrix (never hard-coded there)."""
    release = image.release
    args = {
        "BASE_IMAGE": image.base,
        "JETSON_ENV_IMAGE": image.name,
        "TORCH_VERSION": release.torch.version,
        "TORCHVISION_VERSION": release.torchvision,
        "CUDA_FROM": image.cuda_from,
    }
    if image.hosts is not None:
        args["L4T"] = release.l4t
        args["TORCH_CUDA_ARCH_LIST"] = matrix.family(release.family)["torch_cuda_arch_list"]
    return args


def image_for(host: HostPlatform, matrix: Matrix) -> Image:
    """The image that runs on a host; NoImage or UnknownRelease say why none does."""
    if not host.is_jetson:
        if host.machine != "x86_64":
            raise NoImage(
                f"no image for {host.machine} hosts that are not Jetsons; images exist for "
                "Jetson (L4T) and x86_64"
            )
        return next(i for i in matrix.images if i.hosts is None)
    if host.l4t is None:
        raise NoImage(f"this Jetson's L4T release is unknown (see "
                      f"`{installed.command('jetson-env info')}`); pass --l4t R")  # fmt: skip
    matrix.resolve(host.l4t)  # the row rule: UnknownRelease says why, listing the supported ones
    for image in matrix.images:
        if image.runs_on(normalize_l4t(host.l4t)):
            return image
    raise NoImage(f"no image runs on L4T R{normalize_l4t(host.l4t)}")


def cannot_build(image: Image) -> str | None:
    """Why `image` cannot be built from its matrix base, or None. images/provision.sh runs
    Ansible's controller side (jetson-env[provision]) in a Python jetson-env supports: the
    base's own, another of the base's, or one uv installs, and uv installs only on Python 3.8
    and newer. JetPack 4's bases (Ubuntu 18.04) have Python 3.6 alone."""
    python = image.release.python  # "": the x86 base's own (NGC's, 3.12)
    from importlib import metadata  # slow to import: only where it is read

    required = SpecifierSet(metadata.metadata("jetson-env")["Requires-Python"] or "")
    if not python or Version(python) in required or Version(python) >= UV_PYTHON_MIN:
        return None
    return (
        f"{image.name} cannot be built from {image.base}: its only Python is {python} (Ubuntu"
        f" {image.release.ubuntu}'s, L4T R{image.release.l4t}'s), Ansible's controller side"
        f" (jetson-env[provision]) needs Python {required}, and uv, which installs one where the"
        f" base has none, needs Python {UV_PYTHON_MIN} or newer"
    )


def build_hint(image: Image) -> str:
    return (
        f"build it from a base of {image.base} with a Python 3.10+ beside its"
        f" {image.release.python} (on PATH as python3.1x): "
        + installed.command(f"jetson-env images build {image.name} --base IMAGE")
    )


def describe(image: Image, matrix: Matrix, repository: str) -> dict[str, Any]:
    release = image.release
    return {
        "name": image.name,
        "tag": tag(image, repository),
        "base": image.base,
        "hosts": str(image.hosts) if image.hosts is not None else "x86_64",
        "l4t": release.l4t or None,
        "jetpack": release.jetpack or None,
        "cuda": release.cuda or None,
        "image_cuda": image.cuda,
        "cuda_from": image.cuda_from,
        "tensorrt": release.tensorrt or None,
        "python": release.python or None,
        "torch": release.torch.version,
        "torchvision": release.torchvision,
        "platform": "linux/amd64" if image.hosts is None else "linux/arm64",
        "dockerfile": str(dockerfile(image).relative_to(IMAGES_DIR.parent)),
        "build_args": build_args(image, matrix),
        "cannot_build": cannot_build(image),
    }


def find(name: str, matrix: Matrix) -> Image:
    wanted = name if name == "x86_64" else "r" + name.lstrip("Rr")
    for image in matrix.images:
        if image.name == wanted:
            return image
    raise UnknownRelease(f"no image '{name}'; images: " + ", ".join(i.name for i in matrix.images))


def build(
    image: Image,
    matrix: Matrix,
    *,
    repository: str,
    log_path: Path,
    base: str | None = None,
    playbook_vars: dict[str, Any] | None = None,
    no_cache: bool = False,
    on_line: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Build one image with the docker SDK, streaming its log; returns id, tag and sizes.

    `base` replaces the matrix's FROM (the tests pass stand-in bases, as no registry
    is reachable here); `playbook_vars` are more variables for playbooks/jetson.yml in
    the build (e.g. controller files staged in images/inputs/); `no_cache` runs every step
    again (a cached step keeps what pip resolved when it ran). The whole build log is kept
    at log_path.
    """
    import docker  # imported here: only `images build` needs the engine

    args = build_args(image, matrix)
    if base:
        args["BASE_IMAGE"] = base
    if playbook_vars:
        args["PLAYBOOK_VARS"] = json.dumps(playbook_vars)
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise DockerUnavailable(
            f"no Docker engine answers ({exc}); start it (e.g. `sudo systemctl start docker`)"
        ) from exc
    log_path.parent.mkdir(parents=True, exist_ok=True)
    image_id = None
    with log_path.open("w") as log:
        for chunk in _stream(client, image, args, repository, no_cache):
            if "error" in chunk:
                log.write(chunk["error"] + "\n")
                raise BuildFailed(f"{chunk['error'].strip()} (full log: {log_path})")
            text = chunk.get("stream") or chunk.get("status") or ""
            if text:
                log.write(text if text.endswith("\n") else text + "\n")
                for line in text.splitlines():
                    if line.strip():
                        on_line(line)
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = chunk["aux"]["ID"]
    if image_id is None:
        raise BuildFailed(f"the build returned no image id (full log: {log_path})")
    built = client.images.get(image_id)
    layers = [entry.get("Size", 0) for entry in built.history()]
    return {
        "id": image_id,
        "tag": tag(image, repository),
        "size_bytes": built.attrs["Size"],
        "largest_layer_bytes": max(layers, default=0),
        "log": str(log_path),
    }


def same_everywhere(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Root's, and 644 or 755 by the owner's execute bit: a checkout's umask and user would
    otherwise change the image's files and miss Docker's layer cache (a Dockerfile COPY is
    cached by its files' bytes, mode and owner)."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if not info.issym():
        info.mode = 0o755 if info.isdir() or info.mode & 0o100 else 0o644
    return info


def write_context(root: Path, dockerfile_path: str, into: IO[bytes]) -> None:
    """Write the build context the docker SDK sends for `root` (its .dockerignore applied, by
    the SDK's own matcher), each entry same_everywhere, and rewind."""
    from docker.utils.build import exclude_paths

    ignore = root / ".dockerignore"
    lines = ignore.read_text().splitlines() if ignore.exists() else []
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    with tarfile.open(fileobj=into, mode="w") as tar:
        for path in sorted(exclude_paths(str(root), patterns, dockerfile=dockerfile_path)):
            tar.add(root / path, arcname=path, recursive=False, filter=same_everywhere)
    into.seek(0)


def _stream(
    client, image: Image, args: dict[str, str], repository: str, no_cache: bool
) -> Iterator[dict]:
    root = IMAGES_DIR.parent
    path = str(dockerfile(image).relative_to(root))
    with tempfile.TemporaryFile() as context:
        write_context(root, path, context)
        for chunk in client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=path,
            buildargs=args,
            tag=tag(image, repository),
            rm=True,
            forcerm=True,
            pull=False,
            nocache=no_cache,
            network_mode="host",
            decode=True,
        ):
            yield chunk if isinstance(chunk, dict) else json.loads(chunk)
