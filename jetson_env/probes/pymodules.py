"""The target Python itself (venv, PEP 668) and the light package the workflow imports.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). collect()
returns a dict. termcolor: torch2trt <= 0.5.0 imports it in torch2trt.test and no
requirements file lists it ("No module named 'termcolor'"). numpy is not
imported here (a third of a second, for no check); the packages probe reads its version.
Heavy packages (torch, pycuda, torch2trt) have probes of their own.
"""

import os
import sys
import sysconfig
import warnings

MODULES = ("termcolor",)


def inspect(name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = __import__(name)
            version = getattr(module, "__version__", None)
    except ImportError as exc:
        return {"importable": False, "version": None, "file": None, "error": str(exc)}
    except Exception as exc:  # a broken install raises anything at import
        error = "%s: %s" % (type(exc).__name__, exc)
        return {"importable": False, "version": None, "file": None, "error": error}
    return {
        "importable": True,
        "version": str(version) if version else distribution_version(name),
        "file": getattr(module, "__file__", None),
        "error": None,
    }


def collect():
    return {
        "python": {
            "executable": sys.executable,
            "version": "%d.%d.%d" % sys.version_info[:3],
            "prefix": sys.prefix,
            # A venv's interpreter: JetPack's apt bindings fit one made from /usr/bin/python3.
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "site_packages": sysconfig.get_paths()["purelib"],
            "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
            # PEP 668: pip refuses to install into this interpreter (Debian 12, Ubuntu 24.04).
            "externally_managed": os.path.exists(
                os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")
            ),
            # Whether this user can install into it without sudo (the pip policy's sudo).
            "site_packages_writable": os.access(sysconfig.get_paths()["purelib"], os.W_OK),
        },
        "modules": {name: inspect(name) for name in MODULES},
    }
