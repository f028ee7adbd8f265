"""The doctor's checks as plain data: their order, the probes each reads, and which of them
a doctor run selects (plain, --no-smoke, --quick, --engines, --check).

The one place for these decisions: the checks (jetson_env.checks) read their probes here,
the doctor selects with it (doctor.select), and the head start (jetson_env.head_start) reads
it before the command line's imports, so this module imports nothing the head start does not
already load (the probe registry, for which probes import frameworks).
"""

from __future__ import annotations

from collections.abc import Iterable

from jetson_env import probing

ENGINE_FILES = "engine-files"  # the check doctor --engines adds
SMOKE = "smoke"  # the check --no-smoke leaves out

# Each check and the probes it reads (a failed one is its crash finding), in the order the
# doctor runs the checks and prints their findings.
CATALOGUE = {
    "platform": ("platform",),
    "libnvinfer": ("tensorrt",),
    "tensorrt-python": ("tensorrt", "tensorrt_bindings"),
    "cuda": ("cuda", "platform"),
    "cudnn": ("cudnn",),
    "kernels": ("kernels", "platform"),
    "libraries": ("kernels",),
    "pycuda": ("pycuda", "cuda"),
    "cuda-python": ("cuda_python", "cuda"),
    "termcolor": ("pymodules",),
    "torch": ("torch",),
    "torchvision": ("torch",),
    "torch2trt": ("torch2trt", "tensorrt"),
    "packages": ("packages", "tensorrt", "cuda"),
    "docker": ("docker",),
    "engine-portability": ("tensorrt", "platform"),
    ENGINE_FILES: ("engines", "tensorrt", "platform"),
    SMOKE: ("smoke",),
}
QUICK_ONLY = {"packages"}  # stands in for the framework checks under --quick
ON_REQUEST = {ENGINE_FILES}  # runs only when asked (by name, or doctor --engines)
DEEP = {"kernels", "libraries"}  # reads every shared object: --quick runs it only by name


class UnknownCheck(LookupError):
    """A --check name that is not a check, or one --quick cannot run; the message says which
    names can."""


def needs_framework(name: str) -> bool:
    return any(probing.BY_NAME[probe].framework for probe in CATALOGUE[name])


def select(
    names: Iterable[str] | None, smoke: bool = True, quick: bool = False, engines: bool = False
) -> list[str]:
    """The checks to run, in CATALOGUE order. --quick leaves out those that import
    frameworks and those that read every shared object (deep: kernels, libraries; they run
    when named), and adds the package-metadata check that stands in for them (only there);
    the checks on request run when named, the engine files' also with --engines."""
    names = list(names or [])
    if engines and names and ENGINE_FILES not in names:
        names.append(ENGINE_FILES)
    unknown = [n for n in names if n not in CATALOGUE]
    if unknown:
        raise UnknownCheck(
            f"unknown check {', '.join(map(repr, unknown))}; checks: {', '.join(CATALOGUE)}"
        )
    if quick and (heavy := [n for n in names if needs_framework(n)]):
        raise UnknownCheck(
            f"--quick imports no framework: {', '.join(heavy)} cannot run with it; "
            f"quick checks: {', '.join(n for n in CATALOGUE if not needs_framework(n))}"
        )
    if names:
        return [n for n in CATALOGUE if n in names]
    asked = [n for n in CATALOGUE if n not in ON_REQUEST or (engines and n == ENGINE_FILES)]
    if quick:
        return [n for n in asked if not needs_framework(n) and n not in DEEP]
    return [n for n in asked if n not in QUICK_ONLY and (smoke or n != SMOKE)]


def needed_probes(names: Iterable[str]) -> set[str]:
    """What the checks read, and platform and cuda always (the report's platform)."""
    return {"platform", "cuda"} | {p for name in names for p in CATALOGUE[name]}
