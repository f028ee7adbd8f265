"""Serialized TensorRT engines under the folders `--engines DIR` names (doctor and plan).

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). ARGUMENTS (bound
before this source by jetson_env.probing) is {"folders": [...]}; without it no folder is
searched. For each .engine, .plan or .trt file (and anything else so named: a directory, a
FIFO, a link loop, each said to be no engine file): its size, and the TensorRT that built
it, read from the file's own header where it says so (read_header), else from a sidecar
NAME.json beside it ("tensorrt", written by the tool that built the engine), else from
TensorRT's own trtexec (which names the engine's version when it refuses to load it and its
own when it loads it), else why it is not known. A sidecar also gives what the header does
not carry: the compute capability and the hardware- and version-compatibility settings the
engine was built with. Never more than MAX_ENGINES files or MAX_ENTRIES directory entries.
collect() returns a dict (docs/json.md, "engines").

The header, as TensorRT's trtexec reads it (`--getPlanVersionOnly`, printPlanVersion in
NVIDIA/TensorRT samples/common/sampleEngines.cpp, the same from v9.1.0 to v11.1): the plan's
first 28 bytes; a little-endian uint32 tag 0x74727466 (the bytes "ftrt") at 0, a uint32
serialization version at 4 (only 0 is read), the TensorRT version as four bytes (major,
minor, patch, build) at 24. trtexec's --help: "Supported only for engines created with 8.6
and forward". Ultralytics' exporter writes a little-endian int32 length and that much JSON
metadata before the plan (ultralytics/nn/backends/tensorrt.py reads them, then the plan);
the header is read after them. Engines of TensorRT before 8.6 begin with the tag "ptrt"
instead (no TensorRT source reads it; public engines of TensorRT 7.2 and 8.x show it, and 8.6
and later carry such a plan after their own header): a plan whose version no code of
TensorRT's reads from the file, said so. tests/fixtures/engines/README.md has the layouts.
"""

import os
import re
import shutil
import struct
import subprocess

if "read_head" not in globals():  # imported by the tests, not sent after the prelude
    from jetson_env.probes._prelude import describe, read_head, read_text

SUFFIXES = (".engine", ".plan", ".trt")
MAX_ENGINES = 200
MAX_ENTRIES = 100000
TRTEXEC_PLACES = ("/usr/src/tensorrt/bin/trtexec",)
TRTEXEC_SECONDS = 120
SIDECAR_LIMIT = 1 << 16
PLAN_TAG = b"ftrt"  # 0x74727466 as trtexec compares it, little-endian (x86-64 and aarch64)
OLDER_PLAN_TAG = b"ptrt"  # what engines of TensorRT before 8.6 begin with (the docstring)
PLAN_HEADER = 28  # bytes trtexec reads
FIRST_WITH_VERSION = (8, 6)  # trtexec --help: the version is there from 8.6 on
LFS_POINTER = b"version https://git-lfs"  # what a clone without git-lfs holds instead
METADATA_LIMIT = 1 << 20  # Ultralytics' JSON before the plan: a few hundred bytes in practice
# trtexec's first lines name its TensorRT; a refused engine names its own ("expecting library
# version 8.2.3 got 8.2.1": the library, then the engine).
LIBRARY = re.compile(r"TensorRT version:\s*(\d+)\.(\d+)\.(\d+)")
MISMATCH = re.compile(r"expecting library version (\d+(?:\.\d+)+) got (\d+(?:\.\d+)+)")
LOADED = re.compile(r"Engine loaded in|Engine deserialized in")
# What a sidecar may say the engine was built with (TensorRT's HardwareCompatibilityLevel).
HARDWARE_LEVELS = ("none", "ampere_plus", "same_compute_capability")


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


def read_header(path):
    """{"tensorrt": "10.3.0.30" or None, "layout": "plan" or "ultralytics", "unknown": why}
    from the file's first bytes, as trtexec reads them (the module's docstring)."""
    import json

    found = {"tensorrt": None, "layout": None, "unknown": None}
    try:
        head = read_head(path, PLAN_HEADER)
        offset = 0
        if len(head) >= 4 and head[:4] not in (PLAN_TAG, OLDER_PLAN_TAG):
            length = struct.unpack("<i", head[:4])[0]
            if 0 < length <= METADATA_LIMIT:
                wrapped = read_head(path, 4 + length + PLAN_HEADER)
                try:
                    metadata = json.loads(wrapped[4 : 4 + length].decode("utf-8"))
                except (ValueError, RecursionError):
                    metadata = None
                if isinstance(metadata, dict):
                    offset, head = 4 + length, wrapped[4 + length :]
                    found["layout"] = "ultralytics"
    except OSError as exc:
        found["unknown"] = "not read: " + describe(exc)
        return found
    if head[:4] == OLDER_PLAN_TAG:
        found["layout"] = found["layout"] or "plan"
        found["unknown"] = ("a TensorRT plan of a release before 8.6 (the tag ptrt at byte %d; "
                            "8.6 and later begin with ftrt), whose version no code of "
                            "TensorRT's reads from the file" % offset)  # fmt: skip
        return found
    if len(head) >= len(PLAN_TAG) and head[:4] != PLAN_TAG:
        found["unknown"] = "no TensorRT plan tag (ftrt) at byte %d: not a TensorRT plan" % offset
        if head.startswith(LFS_POINTER):
            found["unknown"] += " but a Git LFS pointer to one (`git lfs pull` fetches it)"
        return found
    if len(head) < PLAN_HEADER:
        where = " after Ultralytics' %d bytes of metadata" % offset if offset else ""
        found["unknown"] = "the file ends %d bytes into the plan header%s (TensorRT's is %d)" % (
            len(head), where, PLAN_HEADER)  # fmt: skip
        return found
    found["layout"] = found["layout"] or "plan"
    serialization = struct.unpack("<I", head[4:8])[0]
    if serialization != 0:
        found["unknown"] = ("a TensorRT plan of serialization version %d, whose header TensorRT's "
                            "trtexec (up to 11.1) does not read" % serialization)  # fmt: skip
        return found
    version = tuple(bytearray(head[24:28]))
    if version[:2] < FIRST_WITH_VERSION:
        found["unknown"] = ("a TensorRT plan (tag ftrt) whose bytes 24-27 read %s, no version "
                            "TensorRT writes there (8.6 and later write theirs; older releases "
                            "begin with ptrt): its header is damaged"
                            % ".".join(map(str, version)))  # fmt: skip
        return found
    found["tensorrt"] = ".".join(map(str, version))
    return found


def sidecar(path):
    """What the sidecar beside the engine says: its TensorRT version, compute capability and
    compatibility settings (None where it does not say), or its error."""
    import json

    name = path + ".json"
    if not os.path.isfile(name):
        return None
    try:
        data = json.loads(read_text(name, SIDECAR_LIMIT))
    except (OSError, ValueError, RecursionError) as exc:  # a deep one stays this engine's
        return {"file": name, "error": "%s: %s" % (name, describe(exc))}
    if not isinstance(data, dict):
        return {"file": name, "error": "%s: not a JSON object" % name}
    version = data.get("tensorrt") or data.get("tensorrt_version")
    capability = data.get("compute_capability")
    hardware = data.get("hardware_compatibility")
    compatible = data.get("version_compatible")
    return {
        "file": name,
        "tensorrt": str(version) if isinstance(version, (str, int, float)) and version else None,
        "compute_capability": capability if isinstance(capability, str) else None,
        "hardware_compatibility": hardware if hardware in HARDWARE_LEVELS else None,
        "version_compatible": compatible if isinstance(compatible, bool) else None,
    }


def _same_release(one, other):
    """Two versions agree on every part both name (the header has the build, a sidecar may
    not)."""
    one, other = one.split("."), other.split(".")
    common = min(len(one), len(other))
    return one[:common] == other[:common]


def engine(path, tool):
    entry = {"path": path, "size": None, "tensorrt": None, "source": None, "unknown": None,
             "layout": None, "header": None, "sidecar": None, "compute_capability": None,
             "hardware_compatibility": None, "version_compatible": None}  # fmt: skip
    try:
        entry["size"] = os.stat(path).st_size
    except OSError as exc:
        entry["unknown"] = "not read: " + describe(exc)
        return entry
    if os.path.isdir(path):
        entry["unknown"] = "a directory, not an engine file"
        return entry
    header = read_header(path)
    beside = sidecar(path)
    entry.update(layout=header["layout"], header=header["tensorrt"], sidecar=beside)
    if beside is not None and "error" not in beside:
        entry.update((key, beside[key]) for key in ("compute_capability",
                     "hardware_compatibility", "version_compatible"))  # fmt: skip
    said = beside.get("tensorrt") if beside else None
    if header["tensorrt"]:
        if said and not _same_release(header["tensorrt"], said):
            entry["unknown"] = "its header says TensorRT %s, its sidecar %s: %s" % (
                header["tensorrt"], beside["file"], said)  # fmt: skip
            return entry
        entry.update(tensorrt=header["tensorrt"], source="header")
        return entry
    if said:
        entry.update(tensorrt=said, source=beside["file"])
        return entry
    why = header["unknown"]
    if beside is not None:
        why += "; its sidecar %s does not name it (%s)" % (
            beside["file"], beside.get("error", 'no "tensorrt"'))  # fmt: skip
    if tool is None or header["layout"] != "plan":  # trtexec reads no Ultralytics file
        entry["unknown"] = why
        return entry
    try:
        done = subprocess.run([tool, "--loadEngine=" + path, "--skipInference"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=TRTEXEC_SECONDS)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        entry["unknown"] = why + "; trtexec: " + describe(exc)
        return entry
    version, failed = read_trtexec(done.stdout.decode("utf-8", "replace"))
    entry.update(tensorrt=version, source="trtexec" if version else None,
                 unknown=None if version else why + "; " + failed)  # fmt: skip
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
            for name in sorted(dirs + files):  # a folder so named is said to be no engine
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
