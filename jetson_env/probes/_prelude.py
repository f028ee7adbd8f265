"""What every probe process starts with: the helpers probes share, and the loop that runs them.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). The doctor
sends this file once per process, followed by the probes that process runs (each a
module with a collect() function, as source text) and a call of run_probes().

Records go to stdout, one line each, starting with RECORD at the start of a line so
that an import that prints a banner cannot hide them:

    @@jetson-env begin NAME             the probe NAME starts (its timeout starts now)
    @@jetson-env result NAME {...}      what collect() returned
    @@jetson-env error NAME {...}       collect() raised: {"error": ..., "traceback": [...]}
"""

import json
import os
import sys
import traceback

RECORD = "@@jetson-env"
STAGE = "@@stage"  # a probe's progress line on stderr (the smoke's stages)


def describe(exc):
    """'ImportError: libnvinfer.so.8: cannot open shared object file' (first line only)."""
    text = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, text[0] if text else "")


READ_LIMIT = 1 << 20  # bytes: the most a probe reads of any file on the target


def read_head(path, count):
    """The first `count` bytes of a regular file (fewer where it is shorter): OSError (its
    strerror says why; callers name the file) for anything else (a FIFO, a device such as a
    link to /dev/zero, a directory, a link loop), never a hang."""
    import errno
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (not read)")
        return handle.read(count)


def read_bytes(path, limit=READ_LIMIT):
    """A regular file's bytes, at most `limit`: read_head()'s OSError for anything else, and
    for a file that is larger (never a read of gigabytes)."""
    import errno

    data = read_head(path, limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, "larger than %d bytes (not read)" % limit)
    return data


def read_text(path, limit=READ_LIMIT):
    """read_bytes() decoded as UTF-8 (UnicodeDecodeError, a ValueError, where it is not)."""
    return read_bytes(path, limit).decode("utf-8")


def run_command(argv, timeout, stdin=None, env=None):
    """Run a read-only command, never raising: (done, None), done with its returncode and its
    stdout and stderr as text (UTF-8, what does not decode replaced), or (None, why it did not
    run: not found, failed to start, past `timeout` seconds). Its stdin is `stdin` (text) or
    nothing: it never reads the probe's own."""
    import subprocess

    feed = {"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin.encode("utf-8")}
    try:
        done = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env, **feed
        )
    except FileNotFoundError:
        return None, "%s not found" % argv[0]
    except subprocess.TimeoutExpired:
        return None, "%s timed out after %ss" % (argv[0], timeout)
    except OSError as exc:
        return None, "%s failed: %s" % (argv[0], exc)
    done.stdout = done.stdout.decode("utf-8", "replace")
    done.stderr = done.stderr.decode("utf-8", "replace")
    return done, None


def command_output(argv, timeout, stdin=None):
    """A command's stdout, (text, None), or (None, why not): run_command()'s reason, or for a
    non-zero exit "CMD exited N: " and the first line it printed (stderr's, else stdout's)."""
    done, reason = run_command(argv, timeout, stdin)
    if done is None:
        return None, reason
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        return None, "%s exited %d: %s" % (argv[0], done.returncode, lines[0][:200])
    return done.stdout, None


# A distribution's file list (RECORD, installed-files.txt) is over READ_LIMIT for the
# largest: torch's is 1.3-1.5 MB (2.13.0+cpu installed: 1,468,285 bytes, 14,623 files; the
# 2.14.1 CUDA wheel's 1,308,438), ansible's 4.7 MB (12.3.0: 36,750 files). Both bounds are
# several times those; a list past either is not read (a finding), so a hostile one costs
# at most LISTING_LIMIT bytes and LISTING_FILES paths, never its size in path strings.
LISTING_LIMIT = 16 << 20  # bytes
LISTING_FILES = 200000  # files listed


def installed_files(path):
    """The files a dist-info (RECORD) or egg-info (installed-files.txt) folder lists; OSError
    or ValueError where the listing cannot be read or is past the bounds above."""
    import errno
    import io

    base = os.path.dirname(path)
    if path.endswith(".dist-info"):
        listing, prefix = os.path.join(path, "RECORD"), base
    else:
        listing, prefix = os.path.join(path, "installed-files.txt"), path
    files = []
    for line in io.BytesIO(read_bytes(listing, LISTING_LIMIT)):  # a line at a time
        line = line.decode("utf-8")
        name = line.split(",")[0].strip() if path.endswith(".dist-info") else line.strip()
        if not name:
            continue
        if len(files) == LISTING_FILES:
            raise OSError(errno.EFBIG, "lists more than %d files (not read)" % LISTING_FILES)
        files.append(os.path.normpath(os.path.join(prefix, name)))
    return files


def distribution_version(name):
    """The installed version from package metadata, without importing the package."""
    try:
        from importlib import metadata  # novermin (3.8+; older Pythons fall back to site dirs)
    except ImportError:
        return _dist_info_version(name)
    try:
        return metadata.version(name)
    except Exception:  # PackageNotFoundError, or broken metadata: the version stays unknown
        return None


def _dist_info_version(name):
    """Python 3.6/3.7: NAME-VERSION.dist-info or .egg-info folders on sys.path."""
    import glob
    import os

    wanted = name.lower().replace("-", "_")
    for entry in sys.path:
        for pattern in ("*.dist-info", "*.egg-info"):
            for path in glob.glob(os.path.join(entry or ".", pattern)):
                stem = os.path.basename(path).rsplit(".", 1)[0]
                project, _, version = stem.partition("-")
                if project.lower().replace("-", "_") == wanted and version:
                    return version.split("-")[0]
    return None


def find_spec(name):
    """Whether `import name` would find something, without importing it."""
    try:
        import importlib.util

        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _record(kind, name, data=None):
    line = "\n%s %s %s" % (RECORD, kind, name)
    if data is not None:
        line += " " + json.dumps(data)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def warm_cuda(context=True):
    """Initialise the CUDA driver (cuInit: tenths of a second) and, with `context`, create the
    GPU's primary CUDA context (seconds on a cold GPU) while torch imports (seconds too):
    torch, TensorRT, cuda-python and pycuda then find the driver ready and all use this one
    context. ctypes releases the GIL for the calls. Nothing happens where there is no driver
    or no device."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            driver = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return
    if driver.cuInit(0) != 0 or not context:
        return
    device, handle = ctypes.c_int(), ctypes.c_void_p()
    if driver.cuDeviceGet(ctypes.byref(device), 0) == 0:
        driver.cuDevicePrimaryCtxRetain(ctypes.byref(handle), device)


def run_probes(probes, gpu_work=False, cuda=False):
    """probes: [(name, source)]; each runs in a namespace of its own that has these helpers.
    gpu_work: the probes may make a CUDA context and run on the GPU (the smoke is among
    them); warm_cuda() starts beside them. Without it no probe makes a context, so the
    process holds no more than an `import torch` (what collect_env holds); with `cuda` (the
    probes initialise the driver: torch's first, importing) the driver alone is initialised
    beside them."""
    # Lazy kernel loading unless the user chose. The driver fixes the mode at cuInit (an
    # H100, driver 580: EAGER set after cuInit is ignored), and warm_cuda calls cuInit
    # before torch starts CUDA. torch sets LAZY itself, where it does at all,
    # only when it initialises CUDA (pytorch#85692; #152695: for drivers before CUDA 12.2;
    # torch 2.11+cu130 names the variable only in collect_env): too late after them.
    # Drivers of CUDA 11.7-12.1 default to EAGER: every kernel loaded with the context, GBs
    # of host memory. Set before any thread starts: setenv is not thread-safe.
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    if gpu_work or cuda:
        import threading

        thread = threading.Thread(target=warm_cuda, args=(gpu_work,), name="warm_cuda")
        thread.daemon = True
        thread.start()
    helpers = {
        "STAGE": STAGE,
        "describe": describe,
        "read_head": read_head,
        "read_bytes": read_bytes,
        "read_text": read_text,
        "run_command": run_command,
        "command_output": command_output,
        "installed_files": installed_files,
        "distribution_version": distribution_version,
        "find_spec": find_spec,
        "gpu_work": gpu_work,
    }
    for name, source in probes:
        _record("begin", name)
        namespace = dict(helpers, __name__="jetson_env_probe_" + name)
        try:
            exec(compile(source, name + ".py", "exec"), namespace)
            data = namespace["collect"]()
        except BaseException as exc:  # a probe that raises is reported, the next one still runs
            _record("error", name, {"error": describe(exc), "traceback": traceback.format_exc()})
            continue
        _record("result", name, data)
