"""The TensorRT Python bindings: `import tensorrt` in the target Python, and their version.

Read-only; runs in the TARGET interpreter (Python 3.6+), in the process that imports
frameworks (after torch, as torch2trt does). A bindings/library mismatch can crash the
import: the doctor then reports this probe and runs the next ones in a fresh process.
"""


def collect():
    if not find_spec("tensorrt"):
        return {"imported": False, "error": "ModuleNotFoundError: No module named 'tensorrt'"}
    try:
        import tensorrt
    except BaseException as exc:  # ImportError, OSError from the loader, even SystemExit
        return {"imported": False, "error": describe(exc)}
    return {
        "imported": True,
        "version": getattr(tensorrt, "__version__", None),
        "file": getattr(tensorrt, "__file__", None),
    }
