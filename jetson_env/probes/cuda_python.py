"""cuda-python facts: cuda.bindings imports, the driver's and the runtime's versions, and where
the smoke lets a probe use the GPU, a context and a host <-> device round trip; plus which of
cuda-python and pycuda the host's TensorRT Python samples import.

Read-only; runs in the TARGET interpreter (Python 3.6+; cuda-python itself needs 3.9, so
cuda.bindings is imported only inside try). NVIDIA's TensorRT samples moved from pycuda to
cuda-python in 10.14 ("Replace all pycuda usages with cuda-python APIs"); at 11.1
samples/python/common_runtime.py does `from cuda.bindings import driver as cuda, runtime as
cudart, nvrtc`. cuda-python before 12.6 had no cuda.bindings (`from cuda import cuda, cudart`).
"""

import glob
import re

# Where TensorRT's Python samples are: JetPack's and the deb packages' /usr/src/tensorrt, a
# tarball's samples/ under /opt or /usr/local.
SAMPLE_GLOBS = (
    "/usr/src/tensorrt/samples/python/common*.py",
    "/opt/TensorRT-*/samples/python/common*.py",
    "/usr/local/TensorRT-*/samples/python/common*.py",
)
IMPORTS = (
    ("cuda-python", re.compile(r"^\s*(from|import)\s+cuda\.bindings\b", re.M)),
    ("cuda-python", re.compile(r"^\s*from\s+cuda\s+import\s+(cuda|cudart)", re.M)),
    ("pycuda", re.compile(r"^\s*import\s+pycuda|^\s*from\s+pycuda", re.M)),
)


def checked(result):
    """The value of a cuda.bindings call (it returns (error, value...)); RuntimeError naming
    the error where it is not success."""
    error, rest = result[0], result[1:]
    if int(getattr(error, "value", error)) != 0:
        raise RuntimeError(getattr(error, "name", str(error)))
    return rest[0] if len(rest) == 1 else (rest or None)


def round_trip(driver):
    """16 float32 values to the device and back, through the driver API (ctypes buffers)."""
    import ctypes

    host = (ctypes.c_float * 16)(*range(16))
    back = (ctypes.c_float * 16)()
    nbytes = ctypes.sizeof(host)
    device = checked(driver.cuMemAlloc(nbytes))
    try:
        checked(driver.cuMemcpyHtoD(device, ctypes.addressof(host), nbytes))
        checked(driver.cuMemcpyDtoH(ctypes.addressof(back), device, nbytes))
    finally:
        checked(driver.cuMemFree(device))
    return list(back) == list(host)


def samples():
    """The host's TensorRT Python sample helpers and the CUDA bindings each imports."""
    found = []
    for pattern in SAMPLE_GLOBS:
        for path in sorted(glob.glob(pattern)):
            try:
                text = read_text(path)  # noqa: F821 (the prelude's helper)
            except (OSError, ValueError) as exc:
                found.append({"path": path, "uses": None, "error": describe(exc)})
                continue
            uses = sorted(set(name for name, pattern in IMPORTS if pattern.search(text)))
            found.append({"path": path, "uses": uses})
    return found


def collect():
    info = {
        "installed": bool(find_spec("cuda")),
        "bindings": False,
        "importable": False,
        "version": distribution_version("cuda-bindings"),
        "cuda_python": distribution_version("cuda-python"),
        "driver_version": None,
        "runtime_version": None,
        "device_count": None,
        "context": None,
        "round_trip": None,
        "gpu_work": gpu_work,  # without the smoke: no context, no round trip
        "error": None,
        "samples": samples(),
    }
    if not info["installed"]:
        return info
    info["bindings"] = bool(find_spec("cuda.bindings"))
    try:
        from cuda.bindings import driver, runtime
    except BaseException as exc:
        info["error"] = describe(exc)
        return info
    info["importable"] = True
    try:
        checked(driver.cuInit(0))
        info["driver_version"] = checked(driver.cuDriverGetVersion())
        info["runtime_version"] = checked(runtime.cudaRuntimeGetVersion())
        info["device_count"] = checked(driver.cuDeviceGetCount())
    except Exception as exc:
        info["error"] = describe(exc)
        return info
    if not info["device_count"] or not gpu_work:
        return info
    device = previous = None
    try:
        device = checked(driver.cuDeviceGet(0))
        # The primary context, as torch and TensorRT use: this process never holds two. The
        # thread's current context (torch's, where its probe ran first) is current again after.
        previous = checked(driver.cuCtxGetCurrent())
        context = checked(driver.cuDevicePrimaryCtxRetain(device))
        checked(driver.cuCtxSetCurrent(context))
        info["context"] = "created"
        info["round_trip"] = round_trip(driver)
    except Exception as exc:
        info["error"] = describe(exc)
    finally:
        if info["context"]:
            driver.cuCtxSetCurrent(previous if previous is not None else driver.CUcontext(0))
            driver.cuDevicePrimaryCtxRelease(device)
    return info
