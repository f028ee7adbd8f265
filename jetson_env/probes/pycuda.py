"""pycuda facts: importable, devices, a context, a float32 host <-> device round trip.

Read-only; runs in the TARGET interpreter (Python 3.6+). collect() returns a dict. Importing
pycuda.driver loads libcuda (the driver); creating a context can hang on a broken
driver, so this probe has its own timeout.

Two pycuda errors are reproduced on purpose where a GPU exists: an
allocation without a current context ("explicit_context_dependent failed: invalid
device context"), then the same with a context, which must work.
"""


def round_trip(cuda, numpy):
    host = numpy.arange(16, dtype=numpy.float32)
    device = cuda.mem_alloc(host.nbytes)
    try:
        cuda.memcpy_htod(device, host)
        back = numpy.empty_like(host)
        cuda.memcpy_dtoh(back, device)
    finally:
        device.free()
    return bool((back == host).all())


def collect():
    if not find_spec("pycuda"):
        return {"installed": False}
    info = {
        "installed": True,
        "importable": False,
        "version": None,
        "driver_version": None,
        "device_count": None,
        "without_context": None,
        "context": None,
        "round_trip": None,
        "gpu_work": gpu_work,  # without the smoke: no context, no round trip
        "error": None,
    }
    try:
        import numpy
        import pycuda
        import pycuda.driver as cuda
    except BaseException as exc:
        info["error"] = describe(exc)
        return info
    info["importable"] = True
    info["version"] = getattr(pycuda, "VERSION_TEXT", None)
    try:
        cuda.init()
        info["driver_version"] = cuda.get_driver_version()
        info["device_count"] = cuda.Device.count()
    except Exception as exc:
        info["error"] = describe(exc)
        return info
    if not info["device_count"] or not gpu_work:
        return info
    info["without_context"] = without_context(cuda)
    context = None
    try:
        context = own_context(cuda.Device(0))
        info["context"] = "created"
        info["round_trip"] = round_trip(cuda, numpy)
    except Exception as exc:
        info["error"] = describe(exc)
    finally:
        if context is not None:
            context.pop()
            context.detach()  # released: torch, next in this process, keeps the only context
    return info


def without_context(cuda):
    """An allocation in a new thread, which has no current context whatever torch's probe
    (before this one) made current in this one: what pycuda says to code that has none."""
    import threading

    said = []

    def allocate():
        try:
            cuda.mem_alloc(4).free()
            said.append("allocated")
        except Exception as exc:
            said.append(describe(exc))

    thread = threading.Thread(target=allocate, name="without_context")
    thread.start()
    thread.join()
    return said[0] if said else None


def own_context(device):
    """The device's primary context, made current: the one torch and TensorRT use too, so
    that this process never holds two. pycuda older than 2017.1 can only make a new one."""
    if hasattr(device, "retain_primary_context"):
        context = device.retain_primary_context()
        context.push()
        return context
    return device.make_context()
