"""torch2trt: importable, and its plugins (the `--plugins` extension or the CMake library)."""

from __future__ import annotations

import shlex

from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, WARN, Finding


def install_remedy(facts: Facts) -> str:
    python = shlex.quote(facts.python)
    source = facts.matrix.torch2trt
    steps = [
        f"git clone {source['git']} torch2trt-src",
        "cd torch2trt-src",
        f"git checkout {source['ref']}",
    ]
    if not facts.is_jetson:
        # setup.py hard-codes TensorRT's aarch64 dirs ("/usr/include/aarch64-linux-gnu").
        steps.append("sed -i 's/aarch64-linux-gnu/x86_64-linux-gnu/g' setup.py")
    steps.append(facts.as_installer(f"{python} setup.py install --plugins"))
    return " && ".join(steps)


def run(facts: Facts) -> list[Finding]:
    data = facts.data("torch2trt")
    if not data.get("installed"):
        return [
            CHECK.finding(
                FAIL, f"torch2trt is not installed for {facts.python}", remedy=install_remedy(facts)
            )
        ]
    version = data.get("version") or "(version unknown)"
    if not data.get("importable"):
        error = data.get("error") or ""
        hint = (
            " (see the tensorrt-python finding)"
            if "tensorrt" in error or "libnvinfer" in error
            else " (see the torch finding)"
            if "torch" in error
            else ""
        )
        return [
            CHECK.finding(
                FAIL,
                f"torch2trt {version} does not import{hint}",
                [error],
                remedy=None if hint else install_remedy(facts),
            )
        ]
    plugins = list(data.get("plugin_files") or [])
    if data.get("cmake_plugins"):
        plugins.append(data["cmake_plugins"])
    creators = data.get("registry_creators") or []
    details = [*plugins, *(f"warning at import: {w}" for w in data.get("import_warnings", []))]
    if creators:
        details.append("plugin creators: " + ", ".join(creators))
    if plugins or creators:
        return [CHECK.finding(OK, f"torch2trt {version} imports, plugins present", details)]
    return [
        CHECK.finding(
            WARN,
            f"torch2trt {version} imports but its plugins are not built "
            "(converters such as interpolate and group_norm need them)",
            details,
            remedy=install_remedy(facts),
        )
    ]


CHECK = Check(
    name="torch2trt",
    area="pytorch",
    summary="torch2trt imports; its plugins are built (--plugins or libtorch2trt_plugins.so)",
    probes=("torch2trt",),
    run=run,
    role="torch2trt",
)
