"""PyTorch and torchvision facts: versions, CUDA build and availability, kernels, C++ ops.

Read-only; runs in the TARGET interpreter (Python 3.6+) and imports torch only if it
is installed. collect() returns a dict. Importing torch is slow (seconds on a Nano) and can hang
on a broken driver: it has this probe to itself, with its own timeout.

- "no kernel image is available for execution on the device" / CUDA error 209 (48):
  no kernel of torch.cuda.get_arch_list() runs on the device (the torch check judges it).
- torchvision built for another torch, or without CUDA: its C++ ops do not load
  ("Couldn't load custom C++ ops", "operator torchvision::nms does not exist"). They
  are loaded and run here without importing torchvision's Python package.
"""

import glob
import importlib.machinery
import importlib.util
import os
import re
import traceback

if "read_text" not in globals():  # imported here (the tests), not sent with the prelude
    from jetson_env.probes._prelude import read_text


def inspect_torch():
    if not find_spec("torch"):
        return {"installed": False}, None
    try:
        import torch
    except BaseException as exc:  # a broken torch raises OSError, ImportError, even SystemExit
        error = describe(exc)
        version = distribution_version("torch")
        return {"installed": True, "importable": False, "version": version, "error": error}, None
    info = {
        "installed": True,
        "importable": True,
        "version": torch.__version__,
        "file": torch.__file__,
        "cuda_build": getattr(torch.version, "cuda", None),
        "cuda_available": False,
        "device_count": 0,
        "devices": [],
        "arch_list": [],
        "error": None,
    }
    try:
        info["cuda_available"] = bool(torch.cuda.is_available())
        if info["cuda_available"]:
            info["device_count"] = torch.cuda.device_count()
            info["arch_list"] = list(torch.cuda.get_arch_list())
            for index in range(info["device_count"]):
                major, minor = torch.cuda.get_device_capability(index)
                info["devices"].append(
                    {
                        "name": torch.cuda.get_device_name(index),
                        "compute_capability": "%d.%d" % (major, minor),
                    }
                )
    except Exception as exc:
        info["error"] = describe(exc)
    return info, torch


def nms_cuda_registered(torch):
    """Whether torchvision registered a CUDA kernel for nms, asked of torch's dispatcher
    without running it (running it makes a CUDA context: only with the smoke)."""
    has_kernel = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has_kernel is None:  # torch < 1.10
        return None
    registered = bool(has_kernel("torchvision::nms", "CUDA"))
    error = None if registered else "torchvision::nms has no CUDA kernel: built without CUDA"
    return {"ok": registered, "error": error, "result": None, "ran": False}


def nms_on(torch, device):
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0]], device=device)
    scores = torch.tensor([0.9, 0.8], device=device)
    try:
        keep = torch.ops.torchvision.nms(boxes, scores, 0.5)
        return {"ok": keep.tolist() == [0], "error": None, "result": keep.tolist()}
    except Exception as exc:
        return {"ok": False, "error": describe(exc), "result": None}


def package_version(package_dir):
    """__version__ from torchvision/version.py, read as text (importing it imports torchvision)."""
    try:
        text = read_text(os.path.join(package_dir, "version.py"))
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    except (IOError, OSError, ValueError):
        match = None
    return match.group(1) if match else distribution_version("torchvision")


def load_ops(torch, package_dir):
    """Load torchvision's C++ ops (_C) the way torchvision does; returns an error or None."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    libraries = [p for s in suffixes for p in glob.glob(os.path.join(package_dir, "_C" + s))]
    if not libraries:
        return "operator torchvision::nms does not exist: no _C library in %s" % package_dir
    try:
        torch.ops.load_library(libraries[0])
    except Exception as exc:  # OSError: undefined symbol, a CUDA library missing ...
        cause = exc.__cause__ or exc
        return "operator torchvision::nms does not exist: %s does not load (%s)" % (
            os.path.basename(libraries[0]),
            describe(cause),
        )
    return None


def inspect_torchvision(torch):
    """Its C++ ops, loaded and run without `import torchvision`: importing the Python package
    imports torch._dynamo too (4.5 s of the doctor's 7.5 s on an H100, more on a Nano)."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        return {"installed": False}
    package_dir = next(iter(spec.submodule_search_locations or []), None)
    if package_dir is None or torch is None:
        version = distribution_version("torchvision")
        return {"installed": True, "importable": False, "version": version, "error": None}
    error = load_ops(torch, package_dir)
    info = {
        "installed": True,
        "importable": error is None,  # its C++ ops load: what `import torchvision` needs
        "version": package_version(package_dir),
        "file": os.path.join(package_dir, "__init__.py"),
        "cuda_build": None,
        "import_warnings": [],
        "nms_cpu": None,
        "nms_cuda": None,
        "error": error,
    }
    if error is None:
        try:
            built = torch.ops.torchvision._cuda_version()
        except Exception:  # a partial build without that op: its nms is what is checked
            built = -1
        info["cuda_build"] = "%d.%d" % (built // 1000, built % 1000 // 10) if built > 0 else None
        info["nms_cpu"] = nms_on(torch, "cpu")
        if torch.cuda.is_available():
            info["nms_cuda"] = nms_on(torch, "cuda") if gpu_work else nms_cuda_registered(torch)
    return info


def collect():
    torch_info, torch = inspect_torch()
    try:
        torchvision_info = inspect_torchvision(torch)
    except Exception:
        torchvision_info = {"installed": True, "importable": False, "error": traceback.format_exc()}
    return {"torch": torch_info, "torchvision": torchvision_info}
