"""cuDNN facts: the library the loader finds and its version from cudnnGetVersion().

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). collect() returns a dict.
"""

import ctypes
import ctypes.util

SONAMES = ("libcudnn.so.9", "libcudnn.so.8", "libcudnn.so.7", "libcudnn.so")


def decode_version(value):
    """cudnnGetVersion(): MAJOR*1000+MINOR*100+PATCH before cuDNN 9, MAJOR*10000+... from 9.

    8201 -> "8.2.1", 8600 -> "8.6.0", 90300 -> "9.3.0", 91200 -> "9.12.0".
    """
    if value >= 10000:
        return "%d.%d.%d" % (value // 10000, (value % 10000) // 100, value % 100)
    return "%d.%d.%d" % (value // 1000, (value % 1000) // 100, value % 100)


def collect():
    errors = {}
    names = list(SONAMES)
    found = ctypes.util.find_library("cudnn")
    if found and found not in names:
        names.insert(0, found)
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            errors[name] = str(exc)
            continue
        try:
            get_version = lib.cudnnGetVersion
        except AttributeError:
            errors[name] = "no cudnnGetVersion"
            continue
        get_version.restype = ctypes.c_size_t
        value = int(get_version())
        return {"library": name, "raw": value, "version": decode_version(value), "errors": errors}
    return {"library": None, "raw": None, "version": None, "errors": errors}
