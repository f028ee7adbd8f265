"""torch2trt facts: importable, version, and its plugins.

Read-only; runs in the TARGET interpreter (Python 3.6+). collect() returns a dict. torch2trt
imports torch and tensorrt, so the import only happens when it is installed.

Plugins come in two builds: `setup.py install --plugins` (an extension module
`torch2trt/torch_plugins*.so`, or `libtorch2trt*.so` in the package, loaded by
torch2trt's load_plugins()), and the CMake build (`libtorch2trt_plugins.so`,
installed to a library dir and found by the loader). Either registers creators
under the "torch2trt" namespace in TensorRT's plugin registry.
"""

import ctypes.util
import glob
import os
import warnings


def collect():
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch2trt")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        # No plugin lookup: find_library runs ldconfig, then gcc and ld twice for a library it
        # does not find (0.1-0.3 s after torch's import), and the check reads it only for an
        # installed torch2trt.
        return {"installed": False}
    cmake_plugins = ctypes.util.find_library("torch2trt_plugins")
    info = {
        "installed": True,
        "importable": False,
        "version": distribution_version("torch2trt"),
        "package_dir": None,
        "plugin_files": [],
        "cmake_plugins": cmake_plugins,
        "plugins_loaded": None,
        "registry_creators": None,
        "import_warnings": [],
        "error": None,
    }
    if spec.submodule_search_locations:
        package_dir = next(iter(spec.submodule_search_locations))
        info["package_dir"] = package_dir
        patterns = ("torch_plugins*.so", "libtorch2trt*.so", "plugins*.so")
        for pattern in patterns:
            info["plugin_files"] += sorted(glob.glob(os.path.join(package_dir, pattern)))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch2trt
        info["import_warnings"] = [str(w.message).strip().splitlines()[0] for w in caught][:5]
    except BaseException as exc:
        info["error"] = describe(exc)
        return info
    info["importable"] = True
    info["plugins_loaded"] = getattr(torch2trt, "PLUGINS_LOADED", None)
    try:
        import tensorrt

        registry = tensorrt.get_plugin_registry()
        # plugin_creator_list (TensorRT <= 10) is gone in 11; all_creators came with 10.
        creators = getattr(registry, "all_creators", None)
        if creators is None:
            creators = getattr(registry, "plugin_creator_list", None)
        info["registry_creators"] = sorted(
            creator.name
            for creator in creators or []
            if getattr(creator, "plugin_namespace", None) == "torch2trt"
        )
    except Exception as exc:
        info["error"] = "plugin registry: " + describe(exc)
    return info
