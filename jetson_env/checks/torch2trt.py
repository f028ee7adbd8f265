"""torch2trt: importable, its plugins, and a TensorRT it can convert with.

The remedy is what the torch2trt role does, for the TensorRT layout this host has: a deb's
headers in /usr/include/<triplet>, a tarball's include/, or pip's tensorrt_libs, which has
no headers (torch2trt then installs without its plugins, and the finding says what they need).
"""

from __future__ import annotations

import shlex

from jetson_env import roles
from jetson_env.checks import Check, libnvinfer
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy

# What the role passes to CMake: torch2trt's CMakeLists.txt asks for CMake 3.0, which CMake 4
# refuses ("Compatibility with CMake < 3.5 has been removed").
CMAKE_POLICY = "-DCMAKE_POLICY_VERSION_MINIMUM=3.5"


def tensorrt_layout(facts: Facts) -> tuple[str | None, str | None, str | None]:
    """(kind, include dir, lib dir) of this host's TensorRT: kind is the tensorrt probe's
    (system, tarball, pip, LD_LIBRARY_PATH); the include dir is None where NvInfer.h is not."""
    data = facts.data("tensorrt")
    files = [f for f in data.get("files", []) if f.get("version")]
    headers = data.get("headers") or []
    if not files:
        return None, (headers[0] if headers else None), None
    best = files[0]
    return best["kind"], (headers[0] if headers else None), best["dir"]


def tensorrt_version(facts: Facts) -> str | None:
    data = facts.data("tensorrt")
    return (data.get("loaded") or {}).get("version") or next(
        (f["version"] for f in data.get("files", []) if f.get("version")), None
    )


def headers_missing(facts: Facts) -> str | None:
    """Why the plugins cannot be built here, or None."""
    kind, include, _ = tensorrt_layout(facts)
    if include:
        return None
    where = "pip's tensorrt_libs has none" if kind == "pip" else "none were found"
    return (
        f"TensorRT's headers (NvInfer.h) are not on this host ({where}): torch2trt installs "
        "without its plugins. For them, unpack the TensorRT tarball of the same release and "
        "give the role its include/ and lib/ (-e torch2trt_tensorrt_include_dir=DIR/include "
        "-e torch2trt_tensorrt_lib_dir=DIR/lib), or install NVIDIA's libnvinfer-dev deb"
    )


def install_remedy(facts: Facts) -> Remedy:
    """The torch2trt role's steps for this host (`jetson-env doctor --fix torch2trt` runs it)."""
    python = shlex.quote(facts.python)
    source = facts.matrix.torch2trt
    _, include, lib = tensorrt_layout(facts)
    steps = [
        facts.pip_install(*roles.default("torch2trt", "build_pip_packages")),
        f"git clone {source['git']} torch2trt-src",
        "cd torch2trt-src",
        f"git checkout {source['ref']}",
    ]
    variables: list[tuple[str, object]] = [("jetson_facts_python", facts.python)]
    build = f"{python} setup.py bdist_wheel --dist-dir dist"
    if include:
        lib = lib or f"/usr/lib/{facts.raw_platform.get('machine', 'x86_64')}-linux-gnu"
        # setup.py hard-codes TensorRT's aarch64 dirs ("/usr/include/aarch64-linux-gnu").
        steps.append(
            "sed -i "
            + shlex.quote(
                f's|"/usr/include/aarch64-linux-gnu"|"{include}"|;'
                f's|"/usr/lib/aarch64-linux-gnu"|"{lib}"|'
            )
            + " setup.py"
        )
        cuda = facts.cuda_root
        build = (
            f"env CPATH={shlex.quote(f'{include}:{cuda}/include')}"
            f" LIBRARY_PATH={shlex.quote(f'{lib}:{cuda}/lib64')} {build} --plugins"
        )
        variables += [("torch2trt_tensorrt_include_dir", include),
                      ("torch2trt_tensorrt_lib_dir", lib)]  # fmt: skip
    steps.append(build)
    # The wheel's name is known once built: the glob stays unquoted for sh.
    wheel = facts.pip_install(extra="--no-deps --force-reinstall dist/torch2trt-*.whl")
    steps.append(wheel.rstrip())
    capability = (facts.compute_capability or "").replace(".", "")
    if include and capability:
        steps += [
            "sed -i "
            + shlex.quote(f"s/set(CUDA_ARCHITECTURES [^)]*)/set(CUDA_ARCHITECTURES {capability})/")
            + " CMakeLists.txt",
            f"cmake -B build . {CMAKE_POLICY}",
            facts.sudo("cmake --build build --target install"),
            facts.sudo("ldconfig"),
        ]
    return Remedy(" && ".join(steps), "torch2trt", tuple(variables))


def tensorrt_it_cannot_use(facts: Facts) -> Finding | None:
    """torch2trt with a TensorRT major it cannot convert with (TensorRT 11): what fails, and
    the ways out: back to the matrix's TensorRT below 11 where this host's Python has one, and
    the converters that work with this TensorRT and this torch (Torch-TensorRT only where a
    release's Requires-Dist admits both)."""
    version = tensorrt_version(facts)
    converters = facts.matrix.converters
    if (
        not version
        or converters.supports("torch2trt", version)
        or not converters.for_tensorrt(version)
    ):
        return None
    torch = facts.torch_version
    others = converters.for_host(version, torch, facts.is_jetson)
    if facts.is_jetson:
        pinned = facts.release.tensorrt if facts.release else "its JetPack's"
        back = libnvinfer.reinstall_jetpack_remedy(facts)
    else:
        pinned = facts.x86_tensorrt.version
        back = libnvinfer.pip_install_remedy(facts)
    ways = []
    if converters.supports("torch2trt", pinned):
        ways.append(f"TensorRT {pinned} (the matrix's, below 11), the remedy below")
    else:
        back = None
    if others:
        fitting = converters.torch_tensorrt_for(torch, version, facts.is_jetson)
        named = ", ".join(
            converters.names[name] + (f" {fitting.version}" if name == "torch_tensorrt" else "")
            for name in others
        )
        ways.append(
            f"keep TensorRT {version} and convert with {named} instead (the smoke runs each one"
            " that is installed)"
        )
    details = [f"way out {number}: {way}" for number, way in enumerate(ways, 1)]
    if not converters.supports("torch2trt", pinned):
        details.append(
            f"Python {facts.python_version}: the matrix's TensorRT for it is {pinned}, as no"
            " TensorRT below 11 has bindings for it"
        )
        if not facts.data("torch2trt").get("installed"):
            # The matrix gives this host no TensorRT torch2trt can use, and the torch2trt role
            # leaves it out there: nothing to fix, the other converters are the way.
            return CHECK.finding(
                SKIP,
                f"torch2trt is left out: it cannot use TensorRT {version}, and this host has no"
                " TensorRT it can use",
                details,
            )
    return CHECK.finding(
        FAIL,
        f"torch2trt cannot convert with TensorRT {version}: it creates every network with "
        "NetworkDefinitionCreationFlag.EXPLICIT_BATCH and sets BuilderFlag.FP16 for fp16, "
        f"which TensorRT {version.split('.')[0]} removed (networks are strongly typed; "
        "platform_has_fast_fp16 and the INT8 calibrator are gone too)",
        details,
        remedy=back,
    )


def run(facts: Facts) -> list[Finding]:
    data = facts.data("torch2trt")
    too_new = tensorrt_it_cannot_use(facts)
    if too_new is not None:
        return [too_new]
    missing_headers = [why] if (why := headers_missing(facts)) else []
    if not data.get("installed"):
        return [
            CHECK.finding(
                FAIL,
                f"torch2trt is not installed for {facts.python}",
                missing_headers,
                remedy=CHECK.gpu_only(install_remedy(facts)),
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
            details + missing_headers,
            remedy=install_remedy(facts),
        )
    ]


CHECK = Check(
    name="torch2trt",
    area="pytorch",
    summary="torch2trt imports, its plugins are built, and this TensorRT is one it can use",
    run=run,
)
