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
    data = facts.data("cuda")
    unknown = data.get("unknown", {})
    root = facts.cuda_root
    version = data.get("version")
    release = facts.release
    findings = []
    if facts.odd_cuda_root is not None:
        findings.append(
            CHECK.finding(
                WARN,
                f"the CUDA root this target names is not a path: {facts.odd_cuda_root!r} "
                f"(CUDA_HOME, CUDA_PATH or nvcc's folder); the fixes below use {root}",
                remedy=Remedy(
                    "set CUDA_HOME to the toolkit's folder (an absolute path)",
                    why="CUDA_HOME is the user's own setting",
                    prose=True,
                ),
            )
        )
    if version is None:
        if facts.is_jetson:
            remedy = facts.jetpack_install()
        else:
            remedy = Remedy(
                "install the CUDA toolkit: https://developer.nvidia.com/cuda-downloads",
                why=X86_CUDA,
                prose=True,
            )
        findings.append(
            CHECK.finding(
                FAIL if facts.is_jetson else WARN,
                "CUDA toolkit not found",
                [unknown.get("version", "")],
                remedy=remedy,
            )
        )
    else:
        summary = f"CUDA {version} at {root} (from {data.get('version_source')})"
        if release and not version_matches(version, release.cuda):
            newer = version.split(".")[:2] > release.cuda.split(".")[:2]
            findings.append(
                CHECK.finding(
                    WARN,
                    f"{summary}; L4T R{release.l4t} ships CUDA {release.cuda}"
                    + (
                        " (an upgrade: torch wheels of the matrix are built for the shipped one)"
                        if newer
                        else ""
                    ),
                    remedy=Remedy(
                        facts.apt_install(f"cuda-toolkit-{release.cuda.replace('.', '-')}"),
                        "jetpack_apt",
                    ),
                )
            )
        else:
            findings.append(CHECK.finding(OK, summary))
    if version is not None:
        login = data.get("login") or {}
        nvcc = data.get("nvcc_on_path")
        if nvcc:
            findings.append(CHECK.finding(OK, f"nvcc on PATH: {nvcc}"))
        elif "nvcc_in_root" in data and not data["nvcc_in_root"]:
            findings.append(
                CHECK.finding(
                    WARN,
                    f"nvcc is not on PATH and the toolkit at {root} has none ({root}/bin/nvcc): "
                    "pycuda's build cannot find CUDA",
                    remedy=_toolkit_install(facts),
                )
            )
        else:
            findings.append(
                _predates(login.get("PATH"), f"nvcc is not on PATH in this shell ({root}/bin)")
                or CHECK.finding(
                    WARN,
                    f"nvcc is not on PATH: pycuda's build cannot find CUDA ({root}/bin)",
                    remedy=facts.cuda_login_script(),
                )
            )
        findings.append(_login_shells(facts, login, root))
        reachable = data.get("cuda_h_reachable")
        if reachable:
            findings.append(CHECK.finding(OK, "cuda.h is reachable by the C compiler"))
        elif reachable is False:
            details = [unknown.get("cuda_h_reachable", ""), f"cuda.h at {data.get('cuda_h')}"]
            findings.append(
                _predates(
                    data.get("profile_d", {}).get("CPATH"),
                    f"the C compiler does not find cuda.h in this shell (CPATH: {root}/include)",
                    details,
                )
                or CHECK.finding(
                    WARN,
                    "the C compiler does not find cuda.h: building pycuda fails with "
                    '"cuda.h: No such file or directory"',
                    details,
                    remedy=facts.cuda_login_script(),
                )
            )
        else:
            findings.append(
                CHECK.finding(
                    WARN,
                    "no C compiler: pycuda and torch2trt's plugins cannot be built",
                    [unknown.get("cuda_h_reachable", "")],
                    remedy=Remedy(
                        facts.apt_install("build-essential"),
                        why="a compiler for the user's own builds (the roles that compile "
                        "install their own)",
                    ),
                )
            )
    cudart = data.get("cudart")
    if cudart:
        findings.append(
            CHECK.finding(
                OK, f"libcudart {cudart.get('version') or ''} loads ({cudart['library']})"
            )
        )
    elif version is not None:
        findings.append(_cudart_not_loaded(facts, data, root))
    return findings


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
    probes=("cuda", "platform"),
    run=run,
)
