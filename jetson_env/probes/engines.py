"""Serialized TensorRT engines under the folders `jetson-env plan --engines DIR` names.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). ARGUMENTS (bound
before this source by jetson_env.probing) is {"folders": [...]}; without it no folder is
searched. For each .engine, .plan or .trt file: its size, the TensorRT that built it where
something says so (a sidecar NAME.json beside it with "tensorrt", written by the tool that
built the engine; else TensorRT's own trtexec, which names the engine's version when it
refuses to load it and its own when it loads it), else why it is not known. Never more
than MAX_ENGINES files or MAX_ENTRIES directory entries. collect() returns a dict.
"""

import os
import re
import shutil
import subprocess

SUFFIXES = (".engine", ".plan", ".trt")
MAX_ENGINES = 200
MAX_ENTRIES = 100000
TRTEXEC_PLACES = ("/usr/src/tensorrt/bin/trtexec",)
TRTEXEC_SECONDS = 120
SIDECAR_LIMIT = 1 << 16
# trtexec's first lines name its TensorRT; a refused engine names its own ("expecting library
# version 8.2.3 got 8.2.1": the library, then the engine).
LIBRARY = re.compile(r"TensorRT version:\s*(\d+)\.(\d+)\.(\d+)")
MISMATCH = re.compile(r"expecting library version (\d+(?:\.\d+)+) got (\d+(?:\.\d+)+)")
LOADED = re.compile(r"Engine loaded in|Engine deserialized in")


def _arguments():
    arguments = globals().get("ARGUMENTS")
    return arguments if isinstance(arguments, dict) else {}


def trtexec():
    found = shutil.which("trtexec")
    if found:
        return found
    for place in TRTEXEC_PLACES:
        if os.access(place, os.X_OK):
            return place
    return None


def read_trtexec(output):
    """(the engine's TensorRT version or None, why not) from trtexec --loadEngine's output."""
    mismatch = MISMATCH.search(output)
    if mismatch:
        return mismatch.group(2), None
    library = LIBRARY.search(output)
    if library and LOADED.search(output):
        return ".".join(library.groups()), None
    lines = [line.strip() for line in output.splitlines() if "ERROR" in line or "[E]" in line]
    return None, "trtexec did not load it: " + (lines[-1][:300] if lines else "no error said")


def sidecar(path):
    """The sidecar's TensorRT version (and the rest of it) where one is beside the engine."""
    import json

    name = path + ".json"
    if not os.path.isfile(name):
        return None
    try:
        data = json.loads(read_text(name, SIDECAR_LIMIT))  # noqa: F821 (the prelude's helper)
    except (OSError, ValueError, RecursionError) as exc:  # a deep one stays this engine's
        return {"error": "%s: %s" % (name, describe(exc))}
    if not isinstance(data, dict):
        return {"error": "%s: not a JSON object" % name}
    version = data.get("tensorrt") or data.get("tensorrt_version")
    return {"file": name, "tensorrt": str(version) if version else None}


def engine(path, tool):
    entry = {"path": path, "size": None, "tensorrt": None, "source": None, "unknown": None}
    try:
        entry["size"] = os.stat(path).st_size
    except OSError as exc:
        entry["unknown"] = describe(exc)
        return entry
    beside = sidecar(path)
    if beside is not None and beside.get("tensorrt"):
        entry.update(tensorrt=beside["tensorrt"], source=beside["file"])
        return entry
    if tool is None:
        entry["unknown"] = "no TensorRT tool on the host (trtexec) and no sidecar " + path + ".json"
        if beside is not None:
            entry["unknown"] += " that names it (%s)" % beside.get("error", 'no "tensorrt"')
        return entry
    try:
        done = subprocess.run([tool, "--loadEngine=" + path, "--skipInference"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=TRTEXEC_SECONDS)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        entry["unknown"] = "trtexec: " + describe(exc)
        return entry
    version, why = read_trtexec(done.stdout.decode("utf-8", "replace"))
    entry.update(tensorrt=version, source="trtexec" if version else None, unknown=why)
    return entry


def collect():
    """ "left_out": engine files found past MAX_ENGINES (counted, not read); "truncated": the
    search stopped at MAX_ENTRIES directory entries (engines beyond it were not looked for)."""
    folders = [str(f) for f in _arguments().get("folders") or []]
    tool = trtexec()
    found, missing, entries, left_out, truncated = [], [], 0, 0, False
    for folder in folders:
        if not os.path.isdir(folder):
            missing.append(folder)
            continue
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            entries += len(dirs) + len(files)
            for name in sorted(files):
                if name.lower().endswith(SUFFIXES):
                    if len(found) >= MAX_ENGINES:
                        left_out += 1
                    else:
                        found.append(os.path.join(root, name))
            if entries > MAX_ENTRIES:
                truncated = True
                break
        if truncated:
            break
    return {
        "folders": folders,
        "missing": missing,
        "reader": tool,
        "engines": [engine(path, tool) for path in found],
        "left_out": left_out,
        "max_engines": MAX_ENGINES,
        "truncated": truncated,
        "max_entries": MAX_ENTRIES,
    }
