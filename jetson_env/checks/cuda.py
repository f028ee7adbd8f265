"""CUDA: toolkit version, nvcc on PATH, cuda.h reachable by the compiler, libcudart.

On a Jetson the toolkit must be the one of the L4T row (JetPack 5+ allows newer
CUDA; that is a warning, not a failure). pycuda's build finds CUDA through nvcc on
PATH and needs cuda.h (else "cuda.h: No such file or directory").
"""

from __future__ import annotations

from jetson_env.checks import Check
from jetson_env.checks.context import Facts, shell_word, version_matches
from jetson_env.findings import FAIL, OK, WARN, Finding, Remedy

X86_CUDA = "an x86 host's CUDA toolkit is its own (NVIDIA's installer for its driver)"


def run(facts: Facts) -> list[Finding]:
    """The toolkit against the row; with a toolkit, what builds need of it (nvcc, login
    shells, cuda.h); then libcudart."""
    data = facts.data("cuda")
    root = facts.cuda_root
    findings = [_odd_root(facts, root), _toolkit(facts, data, root)]
    if data.get("version") is not None:
        login = data.get("login") or {}
        findings += [
            _nvcc(facts, data, login, root),
            _login_shells(facts, login, root),
            _cuda_h(facts, data, root),
        ]
    findings.append(_cudart(facts, data, root))
    return [finding for finding in findings if finding is not None]


def _odd_root(facts: Facts, root: str) -> Finding | None:
    """A CUDA root the target names (CUDA_HOME, CUDA_PATH, nvcc's folder) that is no path."""
    if facts.odd_cuda_root is None:
        return None
    return CHECK.finding(
        WARN,
        f"the CUDA root this target names is not a path: {facts.odd_cuda_root!r} "
        f"(CUDA_HOME, CUDA_PATH or nvcc's folder); the fixes below use {root}",
        remedy=Remedy(
            "set CUDA_HOME to the toolkit's folder (an absolute path)",
            why="CUDA_HOME is the user's own setting",
            prose=True,
        ),
    )


def _toolkit(facts: Facts, data: dict, root: str) -> Finding:
    """The toolkit's version, against the L4T row's on a Jetson."""
    version = data.get("version")
    release = facts.release
    if version is None:
        if facts.is_jetson:
            remedy = facts.jetpack_install()
        else:
            remedy = Remedy(
                "install the CUDA toolkit: https://developer.nvidia.com/cuda-downloads",
                why=X86_CUDA,
                prose=True,
            )
        return CHECK.finding(
            FAIL if facts.is_jetson else WARN,
            "CUDA toolkit not found",
            [data.get("unknown", {}).get("version", "")],
            remedy=remedy,
        )
    summary = f"CUDA {version} at {root} (from {data.get('version_source')})"
    if not release or version_matches(version, release.cuda):
        return CHECK.finding(OK, summary)
    newer = version.split(".")[:2] > release.cuda.split(".")[:2]
    upgrade = " (an upgrade: torch wheels of the matrix are built for the shipped one)"
    return CHECK.finding(
        WARN,
        f"{summary}; L4T R{release.l4t} ships CUDA {release.cuda}" + (upgrade if newer else ""),
        remedy=Remedy(
            facts.apt_install(f"cuda-toolkit-{release.cuda.replace('.', '-')}"),
            "jetpack_apt",
        ),
    )


def _nvcc(facts: Facts, data: dict, login: dict, root: str) -> Finding:
    """nvcc on PATH, where pycuda's build looks for CUDA."""
    nvcc = data.get("nvcc_on_path")
    if nvcc:
        return CHECK.finding(OK, f"nvcc on PATH: {nvcc}")
    if "nvcc_in_root" in data and not data["nvcc_in_root"]:
        return CHECK.finding(
            WARN,
            f"nvcc is not on PATH and the toolkit at {root} has none ({root}/bin/nvcc): "
            "pycuda's build cannot find CUDA",
            remedy=_toolkit_install(facts),
        )
    return _predates(login.get("PATH"), f"nvcc is not on PATH in this shell ({root}/bin)") or (
        CHECK.finding(
            WARN,
            f"nvcc is not on PATH: pycuda's build cannot find CUDA ({root}/bin)",
            remedy=facts.cuda_login_script(),
        )
    )


def _cuda_h(facts: Facts, data: dict, root: str) -> Finding:
    """cuda.h reachable by the C compiler (pycuda's build), or no compiler at all."""
    unknown = data.get("unknown", {})
    reachable = data.get("cuda_h_reachable")
    if reachable:
        return CHECK.finding(OK, "cuda.h is reachable by the C compiler")
    if reachable is False:
        details = [unknown.get("cuda_h_reachable", ""), f"cuda.h at {data.get('cuda_h')}"]
        return _predates(
            data.get("profile_d", {}).get("CPATH"),
            f"the C compiler does not find cuda.h in this shell (CPATH: {root}/include)",
            details,
        ) or CHECK.finding(
            WARN,
            "the C compiler does not find cuda.h: building pycuda fails with "
            '"cuda.h: No such file or directory"',
            details,
            remedy=facts.cuda_login_script(),
        )
    return CHECK.finding(
        WARN,
        "no C compiler: pycuda and torch2trt's plugins cannot be built",
        [unknown.get("cuda_h_reachable", "")],
        remedy=Remedy(
            facts.apt_install("build-essential"),
            why="a compiler for the user's own builds (the roles that compile install their own)",
        ),
    )


def _cudart(facts: Facts, data: dict, root: str) -> Finding | None:
    """libcudart loads; where it does not and a toolkit is there, why."""
    cudart = data.get("cudart")
    if cudart:
        return CHECK.finding(
            OK, f"libcudart {cudart.get('version') or ''} loads ({cudart['library']})"
        )
    if data.get("version") is not None:
        return _cudart_not_loaded(facts, data, root)
    return None


def _toolkit_install(facts: Facts, why: str = "part of it is missing") -> Remedy:
    """The toolkit again: JetPack's packages on a Jetson, NVIDIA's installer on x86."""
    if facts.is_jetson:
        return facts.jetpack_install()
    return Remedy(
        f"reinstall the CUDA toolkit ({why}): https://developer.nvidia.com/cuda-downloads",
        why=X86_CUDA,
        prose=True,
    )


def _predates(scripts: list[str] | None, missing: str, details=()) -> Finding | None:
    """ok where a login script already gives new shells the setting this shell lacks (a shell
    started before provisioning wrote it): what is missing is this shell's, not the host's."""
    if not scripts:
        return None
    return CHECK.finding(
        OK,
        f"{missing}, which predates {scripts[0]}: new login shells get it "
        f"(`. {shell_word(scripts[0])}` gives it to this one)",
        details,
    )


def _login_shells(facts: Facts, login: dict, root: str) -> Finding:
    """Whether a login file (/etc/profile.d, /etc/environment) gives every login shell CUDA's
    bin on PATH and its libraries on LD_LIBRARY_PATH."""
    missing = [variable for variable in ("PATH", "LD_LIBRARY_PATH") if not login.get(variable)]
    if not missing:
        files = sorted({path for paths in login.values() for path in paths})
        return CHECK.finding(
            OK, f"login shells get {root}/bin on PATH and its libraries on LD_LIBRARY_PATH "
            f"({', '.join(files)})",
        )  # fmt: skip
    return CHECK.finding(
        WARN,
        f"login shells do not get CUDA on {' and '.join(missing)}: no login script "
        "(/etc/profile.d, /etc/environment) adds it, so builds in a new shell miss CUDA",
        remedy=facts.cuda_login_script(),
    )


def _cudart_not_loaded(facts: Facts, data: dict, root: str) -> Finding:
    """Why the loader misses libcudart: not installed, a stale cache, or a folder not listed."""
    details = [data.get("unknown", {}).get("cudart", "")]
    files = data.get("cudart_files") or []
    if not files:
        remedy = _toolkit_install(facts, "its runtime library is missing")
        return CHECK.finding(WARN, f"libcudart is not in the toolkit at {root}", details, remedy)
    folder = files[0].rsplit("/", 1)[0]
    listed_in = data.get("cudart_dir_listed_in")
    if listed_in:
        return CHECK.finding(
            WARN,
            f"libcudart is in {folder}, which {listed_in} lists, but the loader's cache is stale",
            details,
            remedy=Remedy(
                facts.sudo("ldconfig"), why=f"{listed_in} lists the folder, not a role's file"
            ),
        )
    extra = () if folder == f"{root}/lib64" else (folder,)
    return CHECK.finding(
        WARN,
        f"libcudart is in {folder}, which the loader does not search",
        details,
        remedy=facts.cuda_env_remedy(facts.loader_conf("cuda_env", folder), extra),
    )


CHECK = Check(
    name="cuda",
    area="cuda",
    summary="CUDA toolkit version (the L4T row's on Jetson), nvcc on PATH, cuda.h, libcudart",
    run=run,
)
