"""Which CUDA kernels a GPU runs, and what the loader and the driver say when it cannot: the
one place of these rules (the `kernels` and `libraries` checks read the kernels probe's
facts through them).

A kernel image runs on a GPU of compute capability X.Z when it is:

- SASS (a cubin) for X.Z itself; on a desktop GPU also SASS for X.Y with Y <= Z ("a cubin
  generated for a certain compute capability is supported to run on any GPU with the same
  major revision and same or higher minor revision", CUDA C++ Programming Guide, Binary
  Compatibility). Not on a Jetson before its SBSA stack: "Binary compatibility is supported
  only for the desktop. It is not supported for Tegra" (the same section; measured by
  jax-ml/jax #40492 on a JetPack 6 Orin: `code=sm_80` fails with "no kernel image", sm_87
  runs). JetPack 7.2's CUDA 13.2 lifts it: "CUDA>=13.2 allows Jetson devices to use SBSA
  binaries" (pytorch/pytorch #186285). Arch-specific SASS (sm_90a) runs on X.Z only.
- else PTX for compute_XY with XY <= X.Z (arch-specific compute_90a: X.Z only), compiled by
  the driver at the first load ("runs after a JIT": seconds to minutes, cached in
  ~/.nv/ComputeCache), on Jetsons too (#40492: compute_80 PTX ran on the Orin). The driver
  must know the PTX's ISA version: PTX ISA 9.0 needs CUDA 13.0's driver (PTX_ISA_CUDA);
  an older one fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222).
- else nothing runs: the first launch fails with CUDA error 209 (48 before CUDA 10.1), "no
  kernel image is available for execution on the device".

A library a shared object needs (DT_NEEDED) that ld.so does not find fails the import:
"libX.so.N: cannot open shared object file: No such file or directory".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RUNS, JIT, NO_KERNEL, PTX_TOO_NEW = "runs", "jit", "no-kernel", "ptx-too-new"
NO_KERNEL_ERROR = "CUDA error 209: no kernel image is available for execution on the device"
PTX_TOO_NEW_ERROR = (
    "CUDA error 222 (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): the provided PTX was compiled with "
    "an unsupported toolchain"
)
MISSING_LIBRARY_ERROR = "{}: cannot open shared object file: No such file or directory"
SBSA_JETSON_CUDA = (13, 2)  # pytorch/pytorch #186285

# PTX ISA version -> the CUDA release that introduced it, whose driver is the oldest to JIT
# it (PTX ISA reference, "Release Notes": the PTX ISA version of each CUDA release).
PTX_ISA_CUDA = {
    (6, 0): (9, 0),
    (6, 1): (9, 1),
    (6, 2): (9, 2),
    (6, 3): (10, 0),
    (6, 4): (10, 1),
    (6, 5): (10, 2),
    (7, 0): (11, 0),
    (7, 1): (11, 1),
    (7, 2): (11, 2),
    (7, 3): (11, 3),
    (7, 4): (11, 4),
    (7, 5): (11, 5),
    (7, 6): (11, 6),
    (7, 7): (11, 7),
    (7, 8): (11, 8),
    (8, 0): (12, 0),
    (8, 1): (12, 1),
    (8, 2): (12, 2),
    (8, 3): (12, 3),
    (8, 4): (12, 4),
    (8, 5): (12, 5),
    (8, 6): (12, 7),
    (8, 7): (12, 8),
    (8, 8): (12, 9),
    (9, 0): (13, 0),
}

_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)(a?)$")


def version(text: str | None) -> tuple[int, int] | None:
    """'13.2' -> (13, 2); None for what is not MAJOR.MINOR."""
    match = re.match(r"^(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def arch(name: str) -> tuple[tuple[int, int], bool] | None:
    """'sm_87' -> ((8, 7), False); 'sm_110' -> ((11, 0), False); 'compute_90a' ->
    ((9, 0), True): (the capability, arch-specific)."""
    match = _ARCH.match(name)
    if not match:
        return None
    return (int(match.group(2)), int(match.group(3))), bool(match.group(4))


def ptx_driver(ptx_version: str) -> tuple[int, int] | None:
    """The oldest driver's CUDA version that JIT-compiles PTX of this ISA version (ISA 9.x
    after the table: CUDA 13.x, the pattern 9.0 started)."""
    isa = version(ptx_version)
    if isa is None:
        return None
    if isa in PTX_ISA_CUDA:
        return PTX_ISA_CUDA[isa]
    return (13, isa[1]) if isa[0] == 9 else None


def minor_compatible(is_jetson: bool, jetson_cuda: str | None) -> bool:
    """Whether SASS of a lower minor of the same major runs: a desktop GPU, or a Jetson on
    CUDA 13.2 or newer (the SBSA stack)."""
    if not is_jetson:
        return True
    cuda = version(jetson_cuda)
    return cuda is not None and cuda >= SBSA_JETSON_CUDA


@dataclass(frozen=True)
class Verdict:
    state: str  # RUNS, JIT, NO_KERNEL, PTX_TOO_NEW
    image: str | None  # the kernel image the GPU takes ('sm_80', 'compute_80 (PTX 9.0)')
    why: str


def judge(
    sass: list[str],
    ptx: list[dict[str, str]],
    capability: str,
    is_jetson: bool,
    jetson_cuda: str | None,
    driver_cuda: str | None,
) -> Verdict:
    """What a GPU of `capability` does with a file's device code (ptx: {"arch", "version":
    its ISA, absent where unknown}). jetson_cuda: the Jetson's CUDA release (its L4T row);
    driver_cuda: the CUDA version the driver supports (None: unknown, the PTX version is
    then not held against it)."""
    wanted = version(capability)
    if wanted is None:
        raise ValueError(f"not a compute capability: {capability!r}")
    minor_ok = minor_compatible(is_jetson, jetson_cuda)
    cubins = []
    for name in sass:
        parsed = arch(name)
        if parsed is None:
            continue
        (cc, specific) = parsed
        if cc == wanted or (not specific and minor_ok and cc[0] == wanted[0] and cc < wanted):
            cubins.append((cc, name))
    if cubins:
        image = max(cubins)[1]
        exact = image == f"sm_{wanted[0]}{wanted[1]}" or image == f"sm_{wanted[0]}{wanted[1]}a"
        why = f"SASS {image} for compute capability {capability}" + (
            "" if exact else " (a cubin of the same major and a lower minor)"
        )
        return Verdict(RUNS, image, why)
    candidates = []
    for entry in ptx:
        parsed = arch(entry.get("arch", ""))
        if parsed is None:
            continue
        (cc, specific) = parsed
        if cc == wanted or (not specific and cc < wanted):
            candidates.append((cc, entry["arch"], entry.get("version", "")))
    if candidates:
        driver = version(driver_cuda)
        runnable = [
            c for c in candidates if driver is None or (ptx_driver(c[2]) or (99, 0)) <= driver
        ]
        if runnable:
            _cc, name, isa = max(runnable)
            return Verdict(
                JIT,
                f"{name} (PTX {isa})" if isa else name,
                f"PTX {name}{f' (ISA {isa})' if isa else ''} only: the driver compiles it at "
                "the first load",
            )
        _cc, name, isa = max(candidates)
        needs = ptx_driver(isa)
        return Verdict(
            PTX_TOO_NEW,
            f"{name} (PTX {isa})",
            f"PTX {name} is ISA {isa}, which needs a CUDA "
            f"{'.'.join(map(str, needs)) if needs else 'newer'} driver; this driver is CUDA "
            f"{driver_cuda}: {PTX_TOO_NEW_ERROR}",
        )
    carried = ", ".join(sass + [e.get("arch", "?") for e in ptx]) or "none"
    same_major = [n for n in sass if (arch(n) or ((0, 0), True))[0][0] == wanted[0]]
    rule = (
        (
            " (a Jetson runs only SASS of its exact compute capability before JetPack 7.2's "
            "CUDA 13.2)"
        )
        if same_major and not minor_ok
        else ""
    )
    return Verdict(
        NO_KERNEL,
        None,
        f"no kernel for compute capability {capability} (carries {carried})"
        f"{rule}: {NO_KERNEL_ERROR}",
    )


BEST_FIRST = (RUNS, JIT, PTX_TOO_NEW, NO_KERNEL)
FAILS_AT_LAUNCH = (NO_KERNEL, PTX_TOO_NEW)
TORCH_REQUIRES = "torch requires it, and only what launches its kernels fails"


def blocks(state: str, torch_requires: bool) -> bool:
    """Whether a package's verdict blocks it (the bundle refuses the wheel, the kernels check
    fails): its first launch fails, unless torch requires the package (TORCH_REQUIRES).
    Refused alone, such a package would leave torch uninstallable with no index, while
    torch's own kernels, judged on their own, run: PyPI's aarch64 torch 2.14.1 on a Thor
    (sm_110) requires nvidia-nvshmem-cu13 3.4.5, which carries sm_100 and sm_120 only; only
    what launches its kernels fails there."""
    return state in FAILS_AT_LAUNCH and not torch_requires


def kernel_sass(entry: dict) -> list[str]:
    """The SASS of a file's .nv_fatbin that may hold kernels: not the architectures whose
    cubins the probe read and found without one (`kernelless`: no .text section, as
    libcufftw.so.12's only cubin, sm_75; nothing is launched from it, so it cannot fail with
    "no kernel image")."""
    empty = set(entry.get("kernelless") or [])
    return [name for name in entry.get("sass") or [] if name not in empty]


def carries_code(entry: dict) -> bool:
    """Whether a file the kernels probe read carries device code that needs a kernel for
    the GPU: in its .nv_fatbin (what the CUDA runtime registers at load, what cuobjdump
    lists) or in fatbins it loads itself."""
    loaded = entry.get("loaded") or {}
    return bool(kernel_sass(entry) or entry.get("ptx") or loaded.get("sass") or loaded.get("ptx"))


def without_kernels(entry: dict) -> str | None:
    """Why a file whose .nv_fatbin holds only cubins without a kernel is not judged; None
    for any other file."""
    if carries_code(entry) or not entry.get("kernelless"):
        return None
    return (
        f"its .nv_fatbin holds only {', '.join(entry['kernelless'])} cubins without a kernel "
        "(no .text section): nothing is launched from them, so they cannot fail with "
        '"no kernel image"'
    )


def judge_file(
    entry: dict,
    capability: str,
    is_jetson: bool,
    jetson_cuda: str | None,
    driver_cuda: str | None,
) -> Verdict:
    """A file's verdict: its .nv_fatbin's; where that holds no image for this GPU and the
    library keeps fatbins in its data it loads itself through the driver (cuModuleLoadData:
    libcufft.so.12's .nv_fatbin is one sm_75 cubin without a kernel, cuobjdump -elf; its
    kernels are ~24,000 fatbins in .ldata with sm_75..sm_120 SASS), theirs, saying so; also
    where neither has one, so the verdict names what the library does carry (triton 3.8.0's
    cupti/libcheckpoint.so: nothing in its .nv_fatbin; sm_50..sm_120 SASS in its .rodata,
    CUDA 12's, whose sm_101 is Thor's name before CUDA 13 renamed it sm_110)."""
    args = (capability, is_jetson, jetson_cuda, driver_cuda)
    registered = judge(kernel_sass(entry), entry.get("ptx") or [], *args)
    loaded = entry.get("loaded") or {}
    if registered.state == RUNS or not (loaded.get("sass") or loaded.get("ptx")):
        return registered
    own = judge(loaded.get("sass") or [], loaded.get("ptx") or [], *args)
    if BEST_FIRST.index(own.state) > BEST_FIRST.index(registered.state):
        return registered
    empty = [f"{name} (without a kernel)" for name in entry.get("kernelless") or []]
    carried = ", ".join(kernel_sass(entry) + empty + [p["arch"] for p in entry.get("ptx") or []])
    where = ", ".join(loaded.get("sections") or [])
    return Verdict(
        own.state,
        own.image,
        f"{own.why}, in the {loaded.get('containers', '?')} fatbins the library loads itself "
        f"from its {where} (cuModuleLoadData); the .nv_fatbin the runtime registers at load "
        f"carries {carried or 'none'}",
    )


# Libraries the driver installs: their absence is the driver's (the cuda and gpu checks),
# not a package's.
DRIVER_LIBRARIES = ("libcuda.so", "libnvidia-ml.so")

# A CUDA library's name -> the pip package that ships it. The toolkit's own libraries carry
# the CUDA major in their soname (libcublasLt.so.12); from CUDA 13 their wheels drop the
# -cuXX suffix (nvidia-cublas 13.x; nvidia-cublas-cu13 is a 0.0.1 placeholder). Libraries
# with their own version (cuDNN 9, NCCL 2, cuSPARSELt 0, cuDSS 0) keep -cuXX, the CUDA major
# of the object that needs them. NVPL (libnvpl_lapack_lp64_gomp.so.0): nvpl-lapack, ...
TOOLKIT_LIBRARIES = (
    ("libcudart.so", "nvidia-cuda-runtime"),
    ("libcublasLt.so", "nvidia-cublas"),
    ("libcublas.so", "nvidia-cublas"),
    ("libcufft.so", "nvidia-cufft"),
    ("libcurand.so", "nvidia-curand"),
    ("libcusolver.so", "nvidia-cusolver"),
    ("libcusparse.so", "nvidia-cusparse"),
    ("libnvJitLink.so", "nvidia-nvjitlink"),
    ("libnvrtc.so", "nvidia-cuda-nvrtc"),
    ("libcupti.so", "nvidia-cuda-cupti"),
    ("libnvToolsExt.so", "nvidia-nvtx"),
    ("libcufile.so", "nvidia-cufile"),
    ("libnvjpeg.so", "nvidia-nvjpeg"),
)
VERSIONED_LIBRARIES = (
    ("libcudnn", "nvidia-cudnn"),
    ("libnccl.so", "nvidia-nccl"),
    ("libcusparseLt.so", "nvidia-cusparselt"),
    ("libcudss.so", "nvidia-cudss"),
)
UNSUFFIXED_FROM = 13
_NVPL = re.compile(r"^libnvpl_([a-z]+)_")


def is_driver_library(name: str) -> bool:
    return name.startswith(DRIVER_LIBRARIES)


def cuda_major(needs: list[str]) -> int | None:
    """The CUDA major an object is built for, from the toolkit libraries it needs."""
    for name in needs:
        for prefix, _package in TOOLKIT_LIBRARIES:
            found = re.match(re.escape(prefix) + r"\.(\d+)", name)
            if found:
                return int(found.group(1))
    return None


def library_package(name: str, cuda: int | None) -> str | None:
    """The pip package that ships `name` for an object built for CUDA major `cuda`:
    'libcublasLt.so.12' -> 'nvidia-cublas-cu12', 'libcublasLt.so.13' -> 'nvidia-cublas',
    'libcudnn.so.9' with CUDA 13 -> 'nvidia-cudnn-cu13'; None where it cannot be told."""
    nvpl = _NVPL.match(name)
    if nvpl:
        return f"nvpl-{nvpl.group(1)}"
    for prefix, package in TOOLKIT_LIBRARIES:
        found = re.match(re.escape(prefix) + r"\.(\d+)", name)
        if found:
            major = int(found.group(1))
            return package if major >= UNSUFFIXED_FROM else f"{package}-cu{major}"
    for prefix, package in VERSIONED_LIBRARIES:
        if name.startswith(prefix):
            return f"{package}-cu{cuda}" if cuda else None
    return None
