"""TensorRT Python bindings: importable in the target Python, same version as libnvinfer."""

from __future__ import annotations

import shlex

from jetson_env import roles
from jetson_env.checks import Check, libnvinfer
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, Finding, Remedy


def install_remedy(facts: Facts) -> str | Remedy:
    """The bindings of the libnvinfer this host has; where it has none (x86), the matrix's
    TensorRT from pip, libraries and bindings together: libnvinfer's one remedy."""
    if facts.is_jetson:
        remedy = facts.apt_install("python3-libnvinfer")
        return remedy if facts.system_python else venv_remedy(facts, remedy)
    data = facts.data("tensorrt")
    wheels = [w for f in data.get("files", []) for w in f.get("wheels", [])]
    python_tag = "cp" + "".join(
        facts.raw_platform.get("python", {}).get("version", "").split(".")[:2]
    )
    matching = [w for w in wheels if f"-{python_tag}-" in w]
    if matching:
        return facts.pip_install(matching[0])
    requirement = pip_requirement(facts)
    return facts.pip_install(requirement) if requirement else libnvinfer.pip_install_remedy(facts)


def venv_remedy(facts: Facts, apt: str) -> str | Remedy:
    """JetPack's bindings for a venv, as the tensorrt role makes them importable there: apt
    installs them for the system Python, then the venv's site-packages gets a .pth listing a
    folder of links to them alone (the venv keeps its own packages; --system-site-packages
    would bring all of the system's). A venv not made from /usr/bin/python3 cannot load them."""
    python = facts.data("pymodules").get("python", {})
    base = python.get("base_prefix")
    if base and base != "/usr":
        return Remedy(
            f"/usr/bin/python3 -m venv VENV && {apt}",
            note=f"JetPack's bindings are built for the system Python, and {facts.python} is a "
            f"venv of {base}'s: VENV is the folder of a new venv of the system Python",
            why="a venv of another Python cannot load JetPack's bindings: a new venv is the "
            "user's to make",
        )
    links = shlex.quote(roles.default("tensorrt", "venv_links_dir"))
    site = python.get("site_packages")
    folder = shlex.quote(site) if site else (
        f"\"$({shlex.quote(facts.python)} -c 'import sysconfig; "
        "print(sysconfig.get_paths()[\"purelib\"])')\""
    )  # fmt: skip
    pth = f"{folder}/{roles.default('tensorrt', 'venv_pth')}"
    return " && ".join([
        apt,
        "p=$(dpkg-query -L python3-libnvinfer | sed -n 's|/tensorrt/__init__.py$||p' | head -n 1)",
        facts.sudo(f"mkdir -p {links}"),
        facts.sudo(f'ln -sfn "$p"/tensorrt "$p"/tensorrt-*-info {links}/'),
        f"echo {links} | {facts.as_installer(f'tee {pth}')}",
    ])  # fmt: skip


def venv_note(facts: Facts) -> list[str]:
    """Which way a Jetson venv gets JetPack's bindings (the remedy's and the role's)."""
    if not facts.is_jetson or facts.system_python:
        return []
    return [
        "JetPack's bindings (python3-libnvinfer) are the system Python's: a venv made from "
        "/usr/bin/python3 gets them through <site-packages>/"
        f"{roles.default('tensorrt', 'venv_pth')}, which lists "
        f"{roles.default('tensorrt', 'venv_links_dir')} (links to tensorrt alone), not "
        "--system-site-packages, which would bring all of the system's packages"
    ]


def pip_requirement(facts: Facts) -> str | None:
    """The bindings of libnvinfer's own release: PyPI has `tensorrt` up to 8.x and
    `tensorrt-cuXX` (per CUDA major) from 10 on; None without a libnvinfer."""
    data = facts.data("tensorrt")
    library = (data.get("loaded") or {}).get("version") or next(
        (f["version"] for f in data.get("files", []) if f.get("version")), None
    )
    if library is None:
        return None
    release = ".".join(library.split(".")[:3])
    if int(release.split(".")[0]) < 10:
        return f"tensorrt=={release}.*"
    return f"tensorrt-cu{(facts.cuda_version or '12').split('.')[0]}=={release}.*"


def run(facts: Facts) -> list[Finding]:
    data = facts.data("tensorrt")
    bindings = facts.data("tensorrt_bindings")
    library = (data.get("loaded") or {}).get("version")
    if bindings.get("imported"):
        version = bindings.get("version")
        details = [f"{bindings.get('file')}"]
        if library and version and version.split(".")[:3] != library.split(".")[:3]:
            return [
                CHECK.finding(
                    FAIL,
                    f"tensorrt {version} imports, but libnvinfer is {library}: bindings "
                    "and library must be the same release",
                    details,
                    remedy=install_remedy(facts),
                )
            ]
        return [CHECK.finding(OK, f"tensorrt {version} imports in {facts.python}", details)]
    error = bindings.get("error", "unknown error")
    if "cannot open shared object file" in error:
        outside = [f for f in data.get("files", []) if f.get("version")]
        remedy = (
            libnvinfer.loader_remedy(facts, outside[0]["dir"])
            if outside
            else CHECK.gpu_only(libnvinfer.install_remedy(facts))
        )
        return [
            CHECK.finding(
                FAIL,
                "tensorrt is installed but cannot load libnvinfer: "
                '"libnvinfer.so.N: cannot open shared object file"',
                [error],
                remedy=remedy,
            )
        ]
    if "No module named" in error:
        return [
            CHECK.finding(
                FAIL,
                f"the TensorRT Python bindings are not installed for {facts.python}",
                [error, *venv_note(facts)],
                remedy=CHECK.gpu_only(install_remedy(facts)),
            )
        ]
    return [
        CHECK.finding(
            FAIL,
            "import tensorrt fails",
            [error],
            remedy=_see_the_error(facts, install_remedy(facts)),
        )
    ]


def _see_the_error(facts: Facts, reinstall: str | Remedy) -> str | Remedy:
    python = shlex.quote(facts.python)
    first = f"run {python} -c 'import tensorrt' to see the whole error; reinstall: "
    if isinstance(reinstall, Remedy):
        return Remedy(first + reinstall.shell, reinstall.role, reinstall.variables)
    return first + reinstall  # this check's role's, as its other plain-text remedies


CHECK = Check(
    name="tensorrt-python",
    area="tensorrt",
    summary="the TensorRT Python bindings import in the target Python, same version as libnvinfer",
    run=run,
    variables=libnvinfer.TENSORRT_SET,
)
