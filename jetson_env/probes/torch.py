"""PyTorch and torchvision facts: versions, CUDA build and availability, kernels, C++ ops.

Read-only; runs in the TARGET interpreter (Python 3.6+) and imports torch only if it
is installed. collect() returns a dict. Importing torch is slow (seconds on a Nano) and can hang
on a broken driver: it has this probe to itself, with its own timeout.

- "no kernel image is available for execution on the device" / CUDA error 48
  (seed 004): the device's sm_XY is not in torch.cuda.get_arch_list().
- torchvision built for another torch, or without CUDA: its C++ ops do not load
  ("Couldn't load custom C++ ops", "operator torchvision::nms does not exist").
"""

import traceback
import warnings


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


def nms_on(torch, torchvision, device):
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0]], device=device)
    scores = torch.tensor([0.9, 0.8], device=device)
    try:
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        return {"ok": keep.tolist() == [0], "error": None, "result": keep.tolist()}
    except Exception as exc:
        return {"ok": False, "error": describe(exc), "result": None}


def inspect_torchvision(torch):
    if not find_spec("torchvision"):
        return {"installed": False}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torchvision
    except BaseException as exc:
        error = describe(exc)
        version = distribution_version("torchvision")
        return {"installed": True, "importable": False, "version": version, "error": error}
    info = {
        "installed": True,
        "importable": True,
        "version": torchvision.__version__,
        "file": torchvision.__file__,
        "cuda_build": getattr(getattr(torchvision, "version", None), "cuda", None),
        "import_warnings": [str(w.message).strip().splitlines()[0] for w in caught][:5],
        "nms_cpu": None,
        "nms_cuda": None,
        "error": None,
    }
    if torch is not None:
        info["nms_cpu"] = nms_on(torch, torchvision, "cpu")
        if torch.cuda.is_available():
            info["nms_cuda"] = nms_on(torch, torchvision, "cuda")
    return info


def collect():
    torch_info, torch = inspect_torch()
    try:
        torchvision_info = inspect_torchvision(torch)
    except Exception:
        torchvision_info = {"installed": True, "importable": False, "error": traceback.format_exc()}
    return {"torch": torch_info, "torchvision": torchvision_info}
