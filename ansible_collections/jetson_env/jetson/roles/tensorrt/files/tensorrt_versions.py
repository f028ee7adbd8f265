# The TensorRT bindings' version and libnvinfer's, as JSON. Runs in the target's Python (3.6+).
import ctypes
import json

result = {"bindings": None, "library": None, "library_file": None, "error": None}
try:
    import tensorrt

    result["bindings"] = tensorrt.__version__
except Exception as exc:  # any import failure is reported, not raised
    result["error"] = "%s: %s" % (type(exc).__name__, exc)
majors = [result["bindings"].split(".")[0]] if result["bindings"] else ["10", "8", "7"]
for major in majors:
    name = "libnvinfer.so.%s" % major
    try:
        value = ctypes.CDLL(name).getInferLibVersion()
    except (OSError, AttributeError):
        continue
    # TensorRT < 10: MAJOR*1000 + MINOR*100 + PATCH; from 10: MAJOR*10000 + MINOR*100 + PATCH.
    base = 10000 if value >= 100000 else 1000
    result["library"] = "%d.%d.%d" % (value // base, (value % base) // 100, value % 100)
    result["library_file"] = name
    break
print(json.dumps(result))
