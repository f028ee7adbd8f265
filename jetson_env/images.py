"""Container images: which exist (from the matrix), which one runs on a host, building one.

The image for a host follows the L4T compatibility rules kept in the matrix
(`images.jetson[].hosts`), the way jetson-containers' autotag picks a container.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jetson_env.matrix import Image, Matrix, UnknownRelease, normalize_l4t

DEFAULT_REPOSITORY = "jetson-env"
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
        raise NoImage("this Jetson's L4T release is unknown (see `jetson-env info`); pass --l4t R")
    matrix.resolve(host.l4t)  # the row rule: UnknownRelease says why, listing the supported ones
    for image in matrix.images:
        if image.runs_on(normalize_l4t(host.l4t)):
            return image
    raise NoImage(f"no image runs on L4T R{normalize_l4t(host.l4t)}")


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
    on_line: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Build one image with the docker SDK, streaming its log; returns id, tag and sizes.

    `base` replaces the matrix's FROM (the tests pass stand-in bases, as no registry
    is reachable here); `playbook_vars` are more variables for playbooks/jetson.yml in
    the build (e.g. controller files staged in images/inputs/). The whole build log is
    kept at log_path.
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
        for chunk in _stream(client, image, args, repository):
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


def _stream(client, image: Image, args: dict[str, str], repository: str) -> Iterator[dict]:
    root = IMAGES_DIR.parent
    for chunk in client.api.build(
        path=str(root),
        dockerfile=str(dockerfile(image).relative_to(root)),
        buildargs=args,
        tag=tag(image, repository),
        rm=True,
        forcerm=True,
        pull=False,
        network_mode="host",
        decode=True,
    ):
        yield chunk if isinstance(chunk, dict) else json.loads(chunk)
