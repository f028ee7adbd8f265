"""What hides every GPU from CUDA while the driver is fine, named before a check blames the
driver: the variables schedulers and containers set and a container started without GPUs. The
platform probe reads them in the target's own environment (`visibility`); torch and
cuda-python both judge them here.
"""

from __future__ import annotations

import re

from jetson_env.checks.context import Facts, shell_word

HIDDEN_BY_THE_SESSION = (
    "what hides the GPU is this session's environment or its container's start, not a role's"
)
START_WITH_GPUS = "start the container with the GPUs: docker run --gpus all (or --runtime nvidia)"


def what_hides_the_gpu(facts: Facts) -> tuple[str, str] | None:
    """(what hides every GPU from CUDA, how to show them) where the driver is not to blame:
    CUDA_VISIBLE_DEVICES (CUDA reads its list up to the first entry that names no device),
    NVIDIA_VISIBLE_DEVICES=void/none (the container runtime gave no GPU), a container without
    NVIDIA's device nodes. None where nothing does (then the driver is the suspect)."""
    seen = facts.raw_platform.get("visibility")
    seen = seen if isinstance(seen, dict) else {}
    cuda = seen.get("cuda_visible_devices")
    if isinstance(cuda, str):
        first = cuda.split(",")[0].strip()
        listed = facts.platform["gpus"] if facts.platform else []
        gpus = 1 if facts.is_jetson else len(listed) or None  # nvidia-smi's, or unknown
        shown = f"CUDA_VISIBLE_DEVICES={shell_word(cuda)}"
        unset = "unset CUDA_VISIBLE_DEVICES  # or name a GPU: CUDA_VISIBLE_DEVICES=0"
        if not first:
            return f"{shown} (set empty) hides every GPU", unset
        if re.fullmatch(r"-?\d+", first):
            if int(first) < 0:
                return f"{shown} hides every GPU", unset
            if gpus is not None and int(first) >= gpus:
                return (f"{shown} names GPU {first}, and this host has {gpus} "
                        f"(0 to {gpus - 1})", unset)  # fmt: skip
        elif not first.startswith(("GPU-", "MIG-")):
            return f"{shown} names no GPU", unset
    nvidia = seen.get("nvidia_visible_devices")
    if isinstance(nvidia, str) and nvidia.strip().lower() in ("void", "none", ""):
        return (f"NVIDIA_VISIBLE_DEVICES={shell_word(nvidia)} gives this container no GPU",
                START_WITH_GPUS)  # fmt: skip
    nodes = seen.get("device_nodes")
    if (
        seen.get("container")
        and not facts.is_jetson
        and isinstance(nodes, list)
        and not any(re.fullmatch(r"/dev/nvidia\d+", str(node)) for node in nodes)
    ):
        return "this container has no NVIDIA device nodes (/dev/nvidia0 ...)", START_WITH_GPUS
    return None
