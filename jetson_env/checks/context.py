"""What every check reads: the probes' facts, the matrix, and this platform's remedies.

A remedy is the exact command for THIS target: `sudo` only when the probes ran as
a user other than root, the target interpreter's own path for pip, apt for the
system Python where pip is refused (PEP 668) or where JetPack ships the package.
Where a role of the playbook applies the same fix, the remedy names the role and is
rendered from its defaults (jetson_env.roles): the same files, the same installer.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from jetson_env import roles, target_python
from jetson_env.findings import Remedy
from jetson_env.matrix import Matrix, Release, TensorRTPip, UnknownRelease
from jetson_env.probing import ProbeResult

DEFAULT_CUDA_ROOT = "/usr/local/cuda"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_path(value: Any) -> bool:
    """An absolute path without control characters: what a target's folder may be before
    it goes, quoted, into a fix."""
    return isinstance(value, str) and value.startswith("/") and not _CONTROL.search(value)


def shell_word(value: str) -> str:
    """Every value from a target that goes into a fix goes through here (or login_line):
    one word for sh, whatever it holds."""
    return shlex.quote(value)


def login_line(variable: str, value: str, prepend: bool = False) -> str:
    """`export VARIABLE=value` (prepended to what it was) as a line of a login script that
    sh sources: the value quoted, so a target's text stays text there too."""
    keep = f"${{{variable}:+:${variable}}}" if prepend else ""
    return f"export {variable}={shell_word(value)}{keep}"


@dataclass(frozen=True)
class Facts:
    results: dict[str, ProbeResult]
    matrix: Matrix
    # platform_in_matrix.describe(): platform facts read against the matrix
    platform: dict[str, Any] | None

    def data(self, probe: str) -> dict[str, Any]:
        result = self.results.get(probe)
        return result.data if result is not None and result.data is not None else {}

    @property
    def raw_platform(self) -> dict[str, Any]:
        return self.data("platform")

    @property
    def is_jetson(self) -> bool:
        return bool(self.platform and self.platform["is_jetson"])

    @property
    def release(self) -> Release | None:
        """The matrix row of this Jetson's L4T release, or for a point release without a row
        (R36.4.9) its line's newest row (the platform check says so); None on x86 or when
        the line is unknown."""
        if not self.is_jetson or not self.platform or not self.platform["l4t"]:
            return None
        try:
            return self.matrix.resolve(self.platform["l4t"]).release
        except UnknownRelease:
            return None

    @property
    def profile(self) -> Release:
        """The matrix row that applies: the L4T release on a Jetson, the x86 profile elsewhere."""
        return self.release or self.matrix.x86

    @property
    def without_gpu(self) -> bool:
        """The doctor's no-GPU verdict: an x86 host whose nvidia-smi lists no NVIDIA GPU
        (the platform check says TensorRT cannot build engines there)."""
        return bool(self.platform) and not self.is_jetson and not self.platform["gpus"]

    @property
    def compute_capability(self) -> str | None:
        return self.platform["compute_capability"] if self.platform else None

    @property
    def python(self) -> str:
        """The target interpreter, as the probes saw it (sys.executable)."""
        python = self.raw_platform.get("python", {}).get("executable")
        return python or "python3"

    @property
    def python_version(self) -> str | None:
        """The target interpreter's version ("3.14.0"), as the platform probe saw it."""
        return self.raw_platform.get("python", {}).get("version")

    @property
    def torch_version(self) -> str | None:
        """The host's torch, else the matrix row's (what provisioning installs)."""
        found = self.data("torch").get("torch", {})
        return found.get("version") if found.get("installed") else self.profile.torch.version

    @property
    def x86_tensorrt(self) -> TensorRTPip:
        """x86's pip TensorRT for this host's Python (3.14 has no 10.x bindings)."""
        return self.matrix.x86_tensorrt_for(self.python_version)

    @property
    def is_root(self) -> bool:
        return self.raw_platform.get("uid") == 0

    def sudo(self, command: str) -> str:
        return command if self.is_root else f"sudo {command}"

    @property
    def system_python(self) -> bool:
        """The distribution's interpreter (apt installs its packages), not a venv or conda."""
        python = self.data("pymodules").get("python", {})
        in_venv = python.get("in_venv", False)
        executable = python.get("executable") or self.python
        return not in_venv and executable.startswith(("/usr/bin/python3", "/bin/python3"))

    @property
    def externally_managed(self) -> bool:
        """pip must override PEP 668 for it (jetson_env.target_python, the roles' rule too)."""
        return target_python.overrides_pep668(self.data("pymodules").get("python", {}))

    @property
    def needs_sudo_to_install(self) -> bool:
        """Not root and its site-packages is not this user's to write (the system Python, a
        venv root made); older probes did not say: then the system Python needs sudo."""
        if self.is_root:
            return False
        writable = self.data("pymodules").get("python", {}).get("site_packages_writable")
        return not writable if writable is not None else self.system_python

    def as_installer(self, command: str) -> str:
        """`command` run as the one who can write the interpreter's site-packages."""
        return self.sudo(command) if self.needs_sudo_to_install else command

    def pip_install(self, *requirements: str, extra: str = "", env: tuple[str, ...] = ()) -> str:
        """The one pip policy, the roles' (docs/playbook.md, "pip"): the target interpreter's
        own pip (`python -m pip`), never --user; sudo only where this user cannot write its
        site-packages (the system Python, a venv root made; a venv of one's own: none);
        `--break-system-packages` where the interpreter is externally managed (PEP 668, as
        NVIDIA's JetPack 7 instructions do; the roles set PIP_BREAK_SYSTEM_PACKAGES). `env`
        (VAR=value) goes after sudo, which would reset it."""
        args = " ".join(shlex.quote(r) for r in requirements)
        options = [*([extra] if extra else []),
                   *(["--break-system-packages"] if self.externally_managed else [])]  # fmt: skip
        command = f"{shlex.quote(self.python)} -m pip install {' '.join([*options, args])}"
        return self.as_installer(f"env {' '.join(env)} {command}" if env else command)

    def cuda_login_script(self) -> Remedy:
        """The cuda_env role's whole profile.d script, as its template writes it (CUDA_HOME;
        PATH, LD_LIBRARY_PATH, CPATH and LIBRARY_PATH each gaining CUDA's folder once), then
        read by this shell: the one remedy of every cuda finding about a shell setting."""
        root = self.cuda_root
        folders = {"PATH": f"{root}/bin", "LD_LIBRARY_PATH": f"{root}/lib64",
                   "CPATH": f"{root}/include", "LIBRARY_PATH": f"{root}/lib64"}  # fmt: skip
        lines = [login_line("CUDA_HOME", root)] + [
            f'case ":${{{variable}:-}}:" in *{shell_word(f":{folder}:")}*) ;; '
            f"*) {login_line(variable, folder, prepend=True)} ;; esac"
            for variable, folder in folders.items()
        ]
        script = shlex.quote(roles.default("cuda_env", "profile_file"))
        shell = "printf '%s\\n' " + " ".join(shlex.quote(line) for line in lines)
        return self.cuda_env_remedy(
            f"{shell} | {self.sudo(f'tee {script}')} >/dev/null && . {script}"
        )

    def cuda_env_remedy(self, shell: str, extra_lib_dirs: tuple[str, ...] = ()) -> Remedy:
        variables = [("cuda_env_root", self.cuda_root)]
        if extra_lib_dirs:
            variables.append(("cuda_env_extra_lib_dirs", list(extra_lib_dirs)))
        return Remedy(shell, "cuda_env", tuple(variables))

    def loader_conf(self, role: str, directory: str) -> str:
        """List `directory` for the loader in the role's ld.so.conf.d file, then ldconfig."""
        conf = shlex.quote(roles.default(role, "ldconfig_file"))
        return f"echo {shlex.quote(directory)} | {self.sudo(f'tee {conf}')} && " + self.sudo(
            "ldconfig"
        )

    def apt_install(self, *packages: str) -> str:
        return self.sudo(f"apt-get install -y {' '.join(packages)}")

    def jetpack_install(self) -> Remedy:
        """Install JetPack's CUDA and cuDNN: the matrix row's packages, as the jetpack_apt
        role installs them, or all of JetPack where the release is unknown (no role then:
        it installs a row's packages only)."""
        if self.release is None:
            shell = self.sudo("apt-get update") + " && " + self.apt_install("nvidia-jetpack")
            return Remedy(shell, why="this L4T release has no matrix row to take packages from")
        packages = self.release.jetpack_packages["build"]
        return Remedy(self.sudo("apt-get update") + " && " + self.apt_install(*packages),
                      "jetpack_apt")  # fmt: skip

    def python_base_install(
        self, requirement: str, package_set: str, packages: tuple[str, ...] = ()
    ) -> Remedy:
        """pip, as the python_base role installs its packages (the pip policy), into the
        Python the doctor probed (the role's jetson_facts_python): only the finding's package
        set (python_base_sets; `packages`: that set's packages), so the fix moves nothing
        else (no numpy pin with termcolor)."""
        variables: list[tuple[str, Any]] = [("jetson_facts_python", self.python),
                                            ("python_base_sets", [package_set])]  # fmt: skip
        if packages:
            variables.append(("python_base_pip_packages", list(packages)))
        return Remedy(self.pip_install(requirement), "python_base", tuple(variables))

    def onnx_export_install(self, requirement: str) -> Remedy:
        """pip, as the tensorrt role installs what torch.onnx.export needs for the ONNX
        converter (its `onnx` set: the matrix row's onnx_export_packages), into the Python the
        doctor probed; TensorRT itself is not touched (tensorrt_sets: onnx only)."""
        variables = (("jetson_facts_python", self.python), ("tensorrt_sets", ["onnx"]))
        return Remedy(self.pip_install(requirement), "tensorrt", variables)

    @property
    def cuda_root(self) -> str:
        """The target's CUDA root (CUDA_HOME, CUDA_PATH, nvcc's place), where it is a path;
        the default where it cannot be one (the cuda check names what it was)."""
        root = self.data("cuda").get("root")
        return root if is_path(root) else DEFAULT_CUDA_ROOT

    @property
    def odd_cuda_root(self) -> str | None:
        """A CUDA root the target gave that cannot be a path (relative, control characters)."""
        root = self.data("cuda").get("root")
        return None if not root or is_path(root) else root

    @property
    def cuda_version(self) -> str | None:
        return self.data("cuda").get("version")


def version_matches(found: str | None, expected: str | None) -> bool:
    """'8.5.2.2' matches '8.5.2' and '8.5'; '10.3.0' matches '10.3'."""
    if not found or not expected:
        return False
    found_parts, expected_parts = found.split("."), expected.split(".")
    return found_parts[: len(expected_parts)] == expected_parts
