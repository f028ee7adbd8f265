"""--quick: the frameworks' versions from package metadata, judged without importing them.

Stands in for the torch, torchvision, tensorrt-python, torch2trt and pycuda checks, which
import what they check: torch and torchvision paired per the matrix, the TensorRT
bindings the same release as libnvinfer, with the same remedies as the full checks.
"""

from __future__ import annotations

from jetson_env.checks import Check, pycuda, tensorrt_python, torch, torch2trt, torchvision
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy

NOT_IMPORTED = "package metadata; not imported (--quick)"


def run(facts: Facts) -> list[Finding]:
    packages = facts.data("packages").get("packages", {})

    def version(module: str) -> str | None:
        entry = packages.get(module) or {}
        return (entry.get("version") or "(version unknown)") if entry.get("installed") else None

    def judged(module: str, problem: str | None, remedy: str | Remedy, missing=FAIL,
               details=()) -> Finding:  # fmt: skip
        if version(module) is None:
            what = "the TensorRT Python bindings are" if module == "tensorrt" else f"{module} is"
            # What the full checks install where it is missing: of use only with a GPU, as there.
            missing_remedy = remedy if module == "torchvision" else CHECK.gpu_only(remedy)
            return CHECK.finding(
                missing, f"{what} not installed for {facts.python}", remedy=missing_remedy
            )
        if problem:
            return CHECK.finding(FAIL, problem, details, remedy=remedy)
        return CHECK.finding(OK, f"{module} {version(module)} ({NOT_IMPORTED})")

    torch_version, vision_version = version("torch"), version("torchvision")
    paired = facts.matrix.torchvision_pair(torch_version) if torch_version else None
    unpaired = (
        f"torchvision {vision_version} does not pair with torch {torch_version} "
        f"(torch {torch_version} needs torchvision {paired.wanted})"
        if paired and vision_version and not paired.admits(vision_version)
        else None
    )
    library = (facts.data("tensorrt").get("loaded") or {}).get("version")
    bindings = version("tensorrt")
    mismatch = (
        f"tensorrt {bindings} is installed, but libnvinfer is {library}: bindings and "
        "library must be the same release"
        if library and bindings and bindings.split(".")[:3] != library.split(".")[:3]
        else None
    )
    # torch2trt with a TensorRT it cannot convert with (TensorRT 11): the torch2trt check's.
    too_new = torch2trt.tensorrt_it_cannot_use(facts)
    return [
        judged("torch", None, Remedy(torch.install_remedy(facts), torch.CHECK.role)),
        # Without torch there is no torchvision to pair with it: torch's fix comes first (once).
        CHECK.finding(SKIP, "torchvision not installed; torch is not installed either")
        if torch_version is None and vision_version is None
        else judged(
            "torchvision",
            unpaired,
            torchvision.install_remedy(facts, {"version": torch_version}),
            details=[f"pair: {paired.source}"] if paired else [],
        ),
        judged(
            "tensorrt",
            mismatch,
            tensorrt_python.CHECK.as_remedy(tensorrt_python.install_remedy(facts)),
        ),
        judged(
            "torch2trt",
            too_new.summary if too_new else None,
            too_new.remedy if too_new else torch2trt.install_remedy(facts),
        ),
        judged("pycuda", None, pycuda.remedy(facts), missing=WARN),
    ]


CHECK = Check(
    name="packages",
    area="python",
    summary="--quick only: torch, torchvision, tensorrt, torch2trt, pycuda versions from "
    "package metadata (not imported)",
    run=run,
    manual="--quick gives the remedies of the checks it stands in for",
)
