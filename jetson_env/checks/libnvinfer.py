"""libnvinfer: found through the loader, its version, and the matrix's expectation.

Found only outside the loader path, `import tensorrt` fails with
"libnvinfer.so.N: cannot open shared object file". The fix registers the directory
with the loader (ld.so.conf.d + ldconfig), or LD_LIBRARY_PATH for an install in a
home directory.
"""

from __future__ import annotations

import re
import shlex

from jetson_env import roles, tensorrt_tarballs
from jetson_env.checks import Check
from jetson_env.checks.context import Facts, version_matches
from jetson_env.findings import FAIL, OK, WARN, Finding, Remedy
from jetson_env.matrix import JetsonTensorRT

USER_DIRS = ("/home/", "/root/")
# The tensorrt role's part a TensorRT finding asks for: TensorRT itself, not its onnx set
# (ONNX export's packages, the smoke's onnx finding's).
TENSORRT_SET = (("tensorrt_sets", ["tensorrt"]),)


def loader_remedy(facts: Facts, directory: str) -> Remedy:
    """Register a library directory with the dynamic loader, the way this install needs: the
    tensorrt role's ld.so.conf.d file; the role itself for the pip wheels' tensorrt_libs and
    for a tarball it unpacks (its `tensorrt_tarball` comes from the inventory: the doctor
    cannot know it)."""
    if directory.startswith(USER_DIRS) and not facts.is_root:
        line = f"export LD_LIBRARY_PATH={shlex.quote(directory)}:$LD_LIBRARY_PATH"
        return Remedy(f"echo {shlex.quote(line)} >> ~/.bashrc && {line}",
                      why="a folder in the user's home is the user's own shell setup")  # fmt: skip
    shell = facts.loader_conf("tensorrt", directory)
    install_dir = roles.default("tensorrt", "install_dir").rstrip("/")
    if re.fullmatch(tensorrt_tarballs.LIB_DIR.format(re.escape(install_dir)), directory):
        return Remedy(shell, "tensorrt", TENSORRT_SET)
    if directory.endswith("/tensorrt_libs"):
        return Remedy(shell, "tensorrt", (("jetson_facts_python", facts.python), *TENSORRT_SET))
    return Remedy(shell, why="the tensorrt role registers the folders of what it installed")


def pip_install_remedy(facts: Facts) -> Remedy:
    """x86: the matrix's TensorRT from pip, then its tensorrt_libs registered with the loader
    (C++ builds such as torch2trt's plugins link against it): what the tensorrt role does."""
    python = shlex.quote(facts.python)
    # Where pip's tensorrt-cuXX put libnvinfer: the line the tensorrt role runs.
    script = roles.file_text("tensorrt", "tensorrt_libs_dir.py").splitlines()
    libs_dir = "; ".join(line for line in script if line and not line.startswith("#"))
    where = f"{python} -c {shlex.quote(libs_dir)}"
    conf = shlex.quote(roles.default("tensorrt", "ldconfig_file"))
    shell = (
        facts.pip_install(facts.x86_tensorrt.requirement)
        + f" && {where} | {facts.sudo(f'tee {conf}')} && "
        + facts.sudo("ldconfig")
    )
    return Remedy(shell, "tensorrt", (("jetson_facts_python", facts.python), *TENSORRT_SET),
                  note=NEEDS_NVIDIA_INDEX)  # fmt: skip


# pip's tensorrt-cuXX is an sdist that fetches its -libs and -bindings wheels from NVIDIA's
# own pip index (bundle/needs.py says the same for a bundle): where that index is out of
# reach the install fails, in a long traceback that hides why.
NEEDS_NVIDIA_INDEX = (
    "pip fetches TensorRT's -libs and -bindings wheels from NVIDIA's pip index: this host must "
    "reach it (where it cannot, a bundle made where it can brings them: docs/playbook.md, "
    "Offline fleets)"
)


def install_remedy(facts: Facts) -> str | Remedy:
    """Jetson: JetPack's TensorRT packages, those the tensorrt role installs (its
    tensorrt_apt_packages, not all of JetPack); x86: pip's (pip_install_remedy)."""
    if facts.is_jetson:
        packages = roles.default("tensorrt", "apt_packages")
        return facts.sudo("apt-get update") + " && " + facts.apt_install(*packages)
    return pip_install_remedy(facts)


def reinstall_jetpack_remedy(facts: Facts) -> Remedy:
    return Remedy(
        facts.sudo("apt-get install --reinstall -y nvidia-tensorrt"),
        why="a reinstall of JetPack's own TensorRT",
        note="reinstalls JetPack's TensorRT",
    )


def expected_version(facts: Facts) -> str | None:
    return facts.release.tensorrt if facts.release else None


def alternative(facts: Facts, version: str) -> JetsonTensorRT | None:
    """The TensorRT NVIDIA supports on this Jetson beside JetPack's that `version` is (11.4.1
    from the SBSA package on R39.2.2+), or None."""
    if not facts.is_jetson or not facts.platform or not facts.platform.get("l4t"):
        return None
    soc = facts.raw_platform.get("soc")
    return next(
        (
            other
            for other in facts.matrix.jetson_tensorrt
            if version_matches(version, other.version) and other.applies(facts.platform["l4t"], soc)
        ),
        None,
    )


def run(facts: Facts) -> list[Finding]:
    data = facts.data("tensorrt")
    files = data.get("files", [])
    loaded = data.get("loaded")
    details = [
        f"{f['path']} ({f['kind']}): "
        + (f"TensorRT {f['version']}" if f.get("version") else f"not loadable: {f.get('error')}")
        + ("" if f.get("in_ldconfig_cache") else ", not in the ldconfig cache")
        for f in files
    ]
    expected = expected_version(facts)
    if loaded:
        version = loaded["version"]
        summary = f"libnvinfer {version} loads through the loader ({loaded['name']})"
        other = alternative(facts, version)
        if other is not None:
            converters = facts.matrix.converters.for_host(version, facts.torch_version, True)
            said = "NVIDIA supports it" if other.unconfirmed is None else "its package installs"
            details.append(
                f"TensorRT {other.version} on L4T R{facts.platform['l4t']} instead of JetPack's"
                f" {expected}: {said} on {other.modules} ({other.package}); it"
                " converts with " + ", ".join(facts.matrix.converters.names[c] for c in converters)
            )
            if other.unconfirmed:
                summary += f" (support on JetPack unconfirmed: {other.unconfirmed})"
            return [CHECK.finding(OK, summary, details)]
        if expected and not version_matches(version, expected):
            return [
                CHECK.finding(
                    WARN,
                    f"{summary}, but L4T R{facts.platform['l4t']} ships TensorRT {expected}",
                    details,
                    remedy=reinstall_jetpack_remedy(facts),
                )
            ]
        if expected:
            details.append(f"matches TensorRT {expected} of L4T R{facts.platform['l4t']}")
        return [CHECK.finding(OK, summary, details)]
    loadable = [f for f in files if f.get("version")]
    if loadable:
        best = loadable[0]
        errors = [f"{name}: {error}" for name, error in data.get("load_errors", {}).items()]
        if best["kind"] == "pip":
            return [
                CHECK.finding(
                    WARN,
                    f"libnvinfer {best['version']} is only in the pip wheel (tensorrt_libs): "
                    "Python finds it, C++ builds (torch2trt plugins) do not",
                    details + errors,
                    remedy=loader_remedy(facts, best["dir"]),
                )
            ]
        return [
            CHECK.finding(
                FAIL,
                f"libnvinfer {best['version']} is in {best['dir']} but the loader does not find "
                f'it: `import tensorrt` fails with "libnvinfer.so.{best["major"]}: cannot open '
                'shared object file"',
                details + errors,
                remedy=loader_remedy(facts, best["dir"]),
            )
        ]
    return [
        CHECK.finding(
            FAIL,
            "libnvinfer (TensorRT) is not installed"
            + (f": JetPack ships TensorRT {expected}" if expected else ""),
            details or ["searched the ldconfig cache, LD_LIBRARY_PATH and known install dirs"],
            remedy=CHECK.gpu_only(install_remedy(facts)),
        )
    ]


CHECK = Check(
    name="libnvinfer",
    area="tensorrt",
    summary="TensorRT's library loads through the loader, version as the matrix expects",
    run=run,
    variables=TENSORRT_SET,
)
