"""torchvision: paired with torch per the matrix; its C++ ops (nms) load, on CUDA where available.

"Couldn't load custom C++ ops" / "operator torchvision::nms does not exist": a
torchvision built for another torch, or a CUDA build beside a CPU torch.
"""

from __future__ import annotations

import shlex

from jetson_env import installed, pairing
from jetson_env.checks import Check
from jetson_env.checks import torch as torch_check
from jetson_env.checks.context import Facts
from jetson_env.checks.torch import install_remedy as torch_install_remedy
from jetson_env.findings import FAIL, OK, SKIP, Finding, Remedy

OPS_ERRORS = ("torchvision::nms", "Couldn't load custom C++ ops", "undefined symbol")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def install_remedy(facts: Facts, torch: dict) -> Remedy:
    """torchvision of the release that pairs with the installed torch (the torchvision role);
    where the matrix knows no pair for that torch, say so and install the matrix's torch
    (the torch role, replacing the working one), which has one: never a torchvision that
    does not pair."""
    version = torch.get("version") or ""
    paired = facts.matrix.torchvision_pair(version)
    if paired is None:
        profile = facts.profile
        shell = (
            f"no torchvision release is known to pair with torch {version or '(version unknown)'}"
            f" (`{installed.command('jetson-env matrix --json')}` lists the pairs): install the"
            " matrix's torch"
            f" {profile.torch.version}, which pairs with torchvision {profile.torchvision}, then"
            f" run the doctor again: {torch_install_remedy(facts)}"
        )
        return Remedy(shell, torch_check.CHECK.role, (("torch_replace_working", True),))
    return Remedy(_install(facts, torch, paired), CHECK.role)


def _install(facts: Facts, torch: dict, paired: pairing.Pair) -> str:
    if facts.is_jetson:
        tag = pairing.tag(paired, facts.release.torchvision if facts.release else "")
        arch = facts.compute_capability or "5.3;6.2;7.2;8.7"
        python = shlex.quote(facts.python)
        return (
            f"git clone --depth 1 --branch v{tag} https://github.com/pytorch/vision torchvision-src"
            f" && cd torchvision-src && FORCE_CUDA=1 TORCH_CUDA_ARCH_LIST={shlex.quote(arch)}"
            f" BUILD_VERSION={tag} MAX_JOBS=2 "
            + facts.as_installer(f"{python} setup.py install")
            + " && cd .."
        )
    if torch.get("importable") and not torch.get("cuda_build"):
        return facts.pip_install(paired.requirement, extra=f"--index-url {CPU_INDEX}")
    return facts.pip_install(paired.requirement, extra="--no-deps")


def run(facts: Facts) -> list[Finding]:
    probe = facts.data("torch")
    torch, vision = probe.get("torch", {}), probe.get("torchvision", {})
    if not vision.get("installed"):
        if not torch.get("importable"):
            return [CHECK.finding(SKIP, "torchvision not installed; torch does not import either")]
        return [
            CHECK.finding(
                FAIL,
                f"torchvision is not installed for {facts.python}",
                remedy=install_remedy(facts, torch),
            )
        ]
    version = vision.get("version") or "?"
    torch_version = torch.get("version")
    paired = facts.matrix.torchvision_pair(torch_version) if torch_version else None
    details = [vision.get("file") or vision.get("error") or ""]
    if paired:
        details.append(f"pair: {paired.source}")
    if paired and not paired.admits(version):
        return [
            CHECK.finding(
                FAIL,
                f"torchvision {version} does not pair with torch {torch_version} "
                f"(torch {torch_version} needs torchvision {paired.wanted})",
                [*details, vision.get("error") or ""],
                remedy=install_remedy(facts, torch),
            )
        ]
    pairing = f"pairs with torch {torch_version}" if paired else "pairing unknown"
    error = vision.get("error") or ""
    if not vision.get("importable"):
        if any(marker in error for marker in OPS_ERRORS):
            summary = (
                f"torchvision {version} ({pairing}) cannot load its C++ ops: "
                "built for another torch build"
                + (" (a CUDA build beside a CPU-only torch)" if not torch.get("cuda_build") else "")
            )
        else:
            summary = f"torchvision {version} does not import"
        return [CHECK.finding(FAIL, summary, [error], remedy=install_remedy(facts, torch))]
    for where in ("nms_cpu", "nms_cuda"):
        result = vision.get(where)
        if result is not None and not result.get("ok"):
            device = where.split("_")[1].upper()
            return [
                CHECK.finding(
                    FAIL,
                    f"torchvision {version}: torchvision.ops.nms fails on {device}",
                    [result.get("error") or f"wrong result {result.get('result')}"],
                    remedy=install_remedy(facts, torch),
                )
            ]
    cuda = vision.get("nms_cuda")
    on = (
        "CPU"
        if not cuda
        else "CPU and CUDA"
        if cuda.get("ran", True)
        else "CPU (CUDA kernel registered)"
    )
    return [CHECK.finding(OK, f"torchvision {version} ({pairing}); ops.nms works on {on}", details)]


CHECK = Check(
    name="torchvision",
    area="pytorch",
    summary="torchvision pairs with torch (matrix) and its C++ ops (nms) load, on CUDA too",
    run=run,
)
