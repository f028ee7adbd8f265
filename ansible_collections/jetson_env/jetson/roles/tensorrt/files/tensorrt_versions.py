# The TensorRT bindings' version and the libnvinfer the loader gives, as JSON. Runs in the
# target's Python (3.6+) after the probes' prelude and the doctor's tensorrt probe (the filter
# jetson_env.jetson.probe_source), whose functions find libnvinfer and decode its version: the
# bindings' major, or where none import, every major the host has (libnvinfer.so.11 too).
import json

result = {"bindings": None, "library": None, "library_file": None, "error": None}
try:
    import tensorrt

    result["bindings"] = tensorrt.__version__
except Exception as exc:  # any import failure is reported, not raised
    result["error"] = "%s: %s" % (type(exc).__name__, exc)
if result["bindings"]:
    majors = {int(result["bindings"].split(".")[0])}
else:
    majors = majors_of(parse_ldconfig(ldconfig_cache({})), find_files())
loaded, _errors = load_through_loader(majors)
if loaded:
    result["library"], result["library_file"] = loaded["version"], loaded["name"]
print(json.dumps(result))
