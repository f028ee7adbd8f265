"""cuDNN: the library the loader finds and its version (cudnnGetVersion)."""

from __future__ import annotations

from jetson_env.checks import Check
from jetson_env.checks.context import Facts, version_matches
from jetson_env.findings import FAIL, OK, WARN, Finding, Remedy


def run(facts: Facts) -> list[Finding]:
    data = facts.data("cudnn")
    release = facts.release
    version = data.get("version")
    if version is None:
        details = [f"{name}: {error}" for name, error in data.get("errors", {}).items()][:2]
        if facts.is_jetson:
            remedy = facts.jetpack_install()
            return [CHECK.finding(FAIL, "cuDNN is not found by the loader", details, remedy)]
        cuda = (facts.cuda_version or "12").split(".")[0]
        return [
            CHECK.finding(
                WARN,
                "cuDNN is not found by the loader (torch wheels bring their own; TensorRT's "
                "cuDNN-based tactics need it)",
                details,
                remedy=Remedy(
                    f"install cuDNN for CUDA {cuda}: https://developer.nvidia.com/cudnn-downloads",
                    why="an x86 host's cuDNN is its own (NVIDIA's packages for its CUDA)",
                    prose=True,
                    gpu=True,
                ),
            )
        ]
    summary = f"cuDNN {version} ({data.get('library')})"
    if release and not version_matches(version, release.cudnn):
        return [
            CHECK.finding(
                WARN,
                f"{summary}; L4T R{release.l4t} ships cuDNN {release.cudnn}",
                remedy=Remedy(
                    facts.sudo("apt-get install --reinstall -y nvidia-cudnn"),
                    why="a reinstall of JetPack's own cuDNN package (the role installs a "
                    "missing one)",
                ),
            )
        ]
    return [CHECK.finding(OK, summary)]


CHECK = Check(
    name="cudnn",
    area="cuda",
    summary="cuDNN version through ctypes (the L4T row's on Jetson)",
    run=run,
)
