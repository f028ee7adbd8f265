"""TensorRT facts: where libnvinfer is, whether the loader finds it, its version, the bindings.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). collect() returns a dict.

libnvinfer is looked for the way the dynamic loader does (the ldconfig cache,
LD_LIBRARY_PATH, a dlopen of its soname) and in the places installs put it
(JetPack's lib dir, TensorRT tarballs under /opt or /usr/local, the pip wheel's
tensorrt_libs). A library found only outside the loader path is what makes
`import tensorrt` fail with "libnvinfer.so.N: cannot open shared object file". The Python bindings
are imported by the tensorrt_bindings probe, in the process that imports frameworks.
"""

import ctypes
import glob
import os
import re
import sys

if "command_output" not in globals():  # imported, not sent after the prelude: the prelude's own
    from jetson_env.probes._prelude import command_output

SYSTEM_DIRS = (
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu/nvidia",
    "/usr/lib64",
    "/usr/local/lib",
)
TARBALL_GLOBS = ("/opt/TensorRT-*/lib", "/usr/local/TensorRT*/lib", "/opt/tensorrt/lib")
_SONAME = re.compile(r"^libnvinfer\.so\.(\d+)(?:\.[\d.]+)?$")


def decode_version(value):
    """getInferLibVersion(): MAJOR*1000+MINOR*100+PATCH before TensorRT 10, MAJOR*10000+... from 10.

    7103 -> "7.1.3", 8201 -> "8.2.1", 100300 -> "10.3.0", 101300 -> "10.13.0".
    """
    if value >= 100000:
        return "%d.%d.%d" % (value // 10000, (value % 10000) // 100, value % 100)
    return "%d.%d.%d" % (value // 1000, (value % 1000) // 100, value % 100)


def parse_ldconfig(text, name="libnvinfer.so"):
    """`ldconfig -p` lines "\tlibnvinfer.so.8 (libc6,x86-64) => /usr/lib/.../libnvinfer.so.8"."""
    found = []
    for line in text.splitlines():
        left, arrow, path = line.partition("=>")
        soname = left.strip().split(" ")[0]
        if arrow and soname.startswith(name):
            found.append({"soname": soname, "path": path.strip()})
    return found


def ldconfig_cache(unknown):
    for ldconfig in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        out, reason = command_output([ldconfig, "-p"], 20)
        if out is not None:
            return out
    unknown["ldconfig"] = reason
    return ""


def candidate_dirs():
    """(directory, kind) in search order; kind says how the directory came to be searched."""
    dirs = []
    for entry in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if entry:
            dirs.append((entry, "LD_LIBRARY_PATH"))
    for entry in SYSTEM_DIRS:
        dirs.append((entry, "system"))
    for pattern in TARBALL_GLOBS:
        for entry in sorted(glob.glob(pattern)):
            dirs.append((entry, "tarball"))
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "tensorrt_libs")):
            dirs.append((os.path.join(entry, "tensorrt_libs"), "pip"))
    seen = set()
    unique = []
    for entry, kind in dirs:
        real = os.path.realpath(entry)
        if real not in seen and os.path.isdir(entry):
            seen.add(real)
            unique.append((entry, kind))
    return unique


def library_version(path_or_name):
    """Load a library with ctypes and decode getInferLibVersion(); returns (version, error)."""
    try:
        lib = ctypes.CDLL(path_or_name)
    except OSError as exc:
        return None, str(exc)
    try:
        function = lib.getInferLibVersion
    except AttributeError:
        return None, "%s has no getInferLibVersion" % path_or_name
    function.restype = ctypes.c_int
    return decode_version(function()), None


def tarball_wheels(lib_dir):
    """A TensorRT tarball keeps the bindings' wheels in python/ next to lib/."""
    python_dir = os.path.join(os.path.dirname(os.path.abspath(lib_dir)), "python")
    return sorted(glob.glob(os.path.join(python_dir, "tensorrt-*.whl")))


def header_dirs(files):
    """Where NvInfer.h is (what torch2trt's plugins compile against): a deb's
    /usr/include/<triplet>, /usr/include, a tarball's include/ beside its lib/. pip's
    tensorrt_libs has no headers."""
    triplet = "/usr/include/%s-linux-gnu" % os.uname()[4]
    dirs = [triplet, "/usr/include"]
    for entry in files:
        if entry["kind"] in ("tarball", "LD_LIBRARY_PATH"):
            dirs.append(os.path.join(os.path.dirname(os.path.abspath(entry["dir"])), "include"))
    found = []
    for directory in dirs:
        if directory not in found and os.path.isfile(os.path.join(directory, "NvInfer.h")):
            found.append(directory)
    return found


def find_files():
    """Each libnvinfer found in a candidate dir, once per real file (links are followed)."""
    seen = set()
    files = []
    for directory, kind in candidate_dirs():
        for path in sorted(glob.glob(os.path.join(directory, "libnvinfer.so.*"))):
            match = _SONAME.match(os.path.basename(path))
            real = os.path.realpath(path)
            if not match or real in seen or not os.path.isfile(real):
                continue
            seen.add(real)
            files.append(
                {"path": path, "dir": directory, "kind": kind, "major": int(match.group(1))}
            )
    return files


def load_through_loader(majors):
    """dlopen by soname, as `import tensorrt` does; returns (loaded or None, errors)."""
    errors = {}
    for major in sorted(majors, reverse=True) or [None]:
        name = "libnvinfer.so.%d" % major if major is not None else "libnvinfer.so"
        version, error = library_version(name)
        if version:
            return {"name": name, "version": version}, errors
        errors[name] = error
    return None, errors


def majors_of(cache, files):
    """The libnvinfer majors the loader's cache and the files found name (any: 7 to 11 and on)."""
    majors = {entry["major"] for entry in files} | {_major(entry["soname"]) for entry in cache}
    return majors - {None}


def collect():
    unknown = {}
    cache = parse_ldconfig(ldconfig_cache(unknown))
    cached_real = {os.path.realpath(entry["path"]) for entry in cache}
    files = find_files()
    # Through the loader first: once a file is loaded by its path, dlopen of its soname
    # would succeed from the process's own list even when the loader cannot find it.
    loaded, load_errors = load_through_loader(majors_of(cache, files))
    for entry in files:
        entry["version"], entry["error"] = library_version(entry["path"])
        entry["in_ldconfig_cache"] = os.path.realpath(entry["path"]) in cached_real
        entry["wheels"] = tarball_wheels(entry["dir"])
    return {
        "ldconfig": cache,
        "files": files,
        "loaded": loaded,
        "load_errors": load_errors,
        "headers": header_dirs(files),
        "python": sys.executable,
        "unknown": unknown,
    }


def _major(soname):
    match = _SONAME.match(soname)
    return int(match.group(1)) if match else None
