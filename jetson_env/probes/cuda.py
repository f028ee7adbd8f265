"""CUDA toolkit facts: version, root, nvcc on PATH, cuda.h reachable, libcudart loadable.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). collect() returns a dict.
pycuda's build needs `cuda.h` (else "cuda.h: No such file or directory"): this probe
asks the real C compiler, the same way the build will, instead of guessing from paths.
"""

import ctypes
import ctypes.util
import glob
import json
import os
import re
import shutil

if "read_text" not in globals():  # imported, not sent after the prelude: the prelude's own
    try:  # as an Ansible module_utils (the collection's module_utils link to the prelude too)
        from ansible_collections.jetson_env.jetson.plugins.module_utils.jetson_env_prelude import (
            command_output,
            read_text,
        )
    except ImportError:  # by the doctor's tests
        from jetson_env.probes._prelude import command_output, read_text

DEFAULT_ROOT = "/usr/local/cuda"

_NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
_TXT_VERSION = re.compile(r"CUDA Version (\d+\.\d+(?:\.\d+)?)")


def parse_version_json(text):
    """/usr/local/cuda/version.json (CUDA >= 11): {"cuda": {"version": "12.6.68"}, ...}."""
    try:
        data = json.loads(text)
        return str(data["cuda"]["version"])
    except (ValueError, KeyError, TypeError):
        raise ValueError("no cuda.version in version.json") from None


def parse_version_txt(text):
    """/usr/local/cuda/version.txt (CUDA <= 10.2): "CUDA Version 10.2.89"."""
    match = _TXT_VERSION.search(text)
    if not match:
        raise ValueError("no 'CUDA Version x.y' in version.txt")
    return match.group(1)


def parse_nvcc_version(text):
    """`nvcc --version`: "Cuda compilation tools, release 12.6, V12.6.68" -> "12.6.68"."""
    match = _NVCC_RELEASE.search(text)
    if not match:
        raise ValueError("no 'release x.y, Vx.y.z' in nvcc --version output")
    return match.group(2)


def cuda_root(nvcc):
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var], var
    if nvcc:
        # nvcc may be a wrapper script (e.g. /usr/local/bin/nvcc): only trust a real toolkit.
        root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        if os.path.isfile(os.path.join(root, "include", "cuda.h")):
            return root, "nvcc"
    if os.path.isdir(DEFAULT_ROOT):
        return DEFAULT_ROOT, "default"
    return None, None


def toolkit_version(root, nvcc, unknown):
    """Version from version.json, version.txt, then nvcc; returns (version, source)."""
    reasons = []
    if root:
        for name, parser in (
            ("version.json", parse_version_json),
            ("version.txt", parse_version_txt),
        ):
            path = os.path.join(root, name)
            try:
                return parser(read_text(path)), path
            except (IOError, OSError):
                continue
            except ValueError as exc:
                reasons.append("%s: %s" % (path, exc))
    compiler = nvcc or (os.path.join(root, "bin", "nvcc") if root else None)
    if compiler and os.path.exists(compiler):
        out, reason = command_output([compiler, "--version"], 20)
        if out is not None:
            try:
                return parse_nvcc_version(out), "nvcc"
            except ValueError as exc:
                reason = str(exc)
        reasons.append("nvcc: %s" % reason)
    unknown["version"] = "; ".join(reasons) or (
        "no version.json, version.txt or nvcc under %s" % (root or DEFAULT_ROOT)
    )
    return None, None


def cuda_h_reachable(unknown):
    """Ask the C compiler to preprocess `#include <cuda.h>` as pycuda's build will."""
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not compiler:
        unknown["cuda_h_reachable"] = "no C compiler (cc/gcc) on PATH"
        return None
    out, reason = command_output([compiler, "-E", "-x", "c", "-"], 20, stdin="#include <cuda.h>\n")
    if out is None:
        unknown["cuda_h_reachable"] = reason
        return False
    return True


def cudart(unknown):
    """libcudart through the loader; returns {"path", "version"} or None."""
    name = ctypes.util.find_library("cudart")
    candidates = [name] if name else []
    candidates.append("libcudart.so")
    reason = "libcudart not found"
    for candidate in candidates:
        try:
            lib = ctypes.CDLL(candidate)
        except OSError as exc:
            reason = str(exc)
            continue
        version = ctypes.c_int(0)
        try:
            status = lib.cudaRuntimeGetVersion(ctypes.byref(version))
        except AttributeError:
            reason = "%s has no cudaRuntimeGetVersion" % candidate
            continue
        value = version.value
        return {
            "library": candidate,
            "version": "%d.%d" % (value // 1000, (value % 1000) // 10) if status == 0 else None,
        }
    unknown["cudart"] = reason
    return None


def cudart_files(root):
    """libcudart.so* in the toolkit's library folders (lib64, targets/<arch>/lib)."""
    if not root:
        return []
    folders = [os.path.join(root, "lib64")]
    folders += sorted(glob.glob(os.path.join(root, "targets", "*", "lib")))
    found = []
    for folder in folders:
        found.extend(sorted(glob.glob(os.path.join(folder, "libcudart.so*"))))
    return found


def loader_config_listing(folder, directory="/etc/ld.so.conf.d"):
    """The ld.so.conf.d file that lists `folder` (or a link to it), else None."""
    wanted = os.path.realpath(folder)
    for path in sorted(glob.glob(os.path.join(directory, "*.conf"))):
        try:
            text = read_text(path)
            lines = [line.split("#")[0].strip() for line in text.splitlines()]
        except (IOError, OSError, UnicodeDecodeError):
            continue
        if any(line and os.path.realpath(line) == wanted for line in lines):
            return path
    return None


def read_settings(paths):
    """{path: its lines that are not comments} for the shell files that can be read."""
    found = {}
    for path in paths:
        try:
            lines = read_text(path).splitlines(True)
            found[path] = [line for line in lines if not line.lstrip().startswith("#")]
        except (IOError, OSError, UnicodeDecodeError):
            continue
    return found


def sets(variable, line):
    return re.search(r"\b%s=" % variable, line) is not None


def profile_scripts_setting(variable, directory="/etc/profile.d"):
    """/etc/profile.d scripts that set a variable (login shells read them; others may not)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    files = read_settings(os.path.join(directory, name) for name in names)
    return [path for path, lines in files.items() if any(sets(variable, line) for line in lines)]


LOGIN_FILES = ("/etc/environment", "/etc/profile")
_PATH_WORD = re.compile(r"/[^\s:\"'$;)]+")


def login_settings(root, files=None):
    """The login files (/etc/environment, /etc/profile, /etc/profile.d/*.sh) with a line that
    sets PATH to include <root>/bin, and those that set LD_LIBRARY_PATH to include its
    library folder (lib64 or targets/*/lib), folders compared by their real paths.
    {"PATH": [files], "LD_LIBRARY_PATH": [files]}."""
    if files is None:
        files = list(LOGIN_FILES) + sorted(glob.glob("/etc/profile.d/*.sh"))
    real = os.path.realpath(root)
    wanted = {
        "PATH": lambda folder: folder == real + "/bin",
        "LD_LIBRARY_PATH": lambda folder: (
            folder == real + "/lib64" or folder.startswith(real + "/targets/")
        ),
    }
    settings = read_settings(files)
    return {
        variable: [
            path
            for path, lines in settings.items()
            if any(
                sets(variable, line)
                and any(matches(os.path.realpath(word)) for word in _PATH_WORD.findall(line))
                for line in lines
            )
        ]
        for variable, matches in wanted.items()
    }


def nvcc_in(root):
    """The toolkit's own nvcc (<root>/bin/nvcc), None where it has none: a login script that
    puts <root>/bin on PATH gives new shells nvcc only where it is there."""
    path = os.path.join(root, "bin", "nvcc") if root else None
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def collect():
    unknown = {}
    nvcc = shutil.which("nvcc")
    root, root_source = cuda_root(nvcc)
    version, version_source = toolkit_version(root, nvcc, unknown)
    include = os.path.join(root, "include", "cuda.h") if root else None
    runtime_files = cudart_files(root)
    return {
        "root": root,
        "root_source": root_source,
        "version": version,
        "version_source": version_source,
        "nvcc_on_path": nvcc,
        "nvcc_in_root": nvcc_in(root),
        "cuda_h": include if include and os.path.isfile(include) else None,
        "cuda_h_reachable": cuda_h_reachable(unknown),
        "cudart": cudart(unknown),
        "cudart_files": runtime_files,
        "cudart_dir_listed_in": (
            loader_config_listing(os.path.dirname(runtime_files[0])) if runtime_files else None
        ),
        "env": {
            var: os.environ.get(var) for var in ("PATH", "LD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH")
        },
        "profile_d": {var: profile_scripts_setting(var) for var in ("PATH", "CPATH")},
        "login": login_settings(root) if root else None,
        "unknown": unknown,
    }
