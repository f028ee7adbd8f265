"""Filters that give the roles jetson-env's own Python for the rules it owns.

The matrix is loaded and validated, and a target's wheel tags are computed, by the same
code the doctor and the image builds run (the `jetson_env` package on the controller),
so the roles only read the results and cannot disagree with it. The wheel installs that
package beside this collection; a collection installed on its own needs
jetson-env in the controller's Python (`pip install .` in jetson-env's checkout).
"""

import sys
from pathlib import Path

from ansible.errors import AnsibleFilterError

# <root>/ansible_collections/jetson_env/jetson/plugins/filter/jetson_env.py: the wheel's
# site-packages or the checkout, both of which hold the jetson_env package at <root>.
PACKAGE_ROOT = Path(__file__).resolve().parents[5]
if (PACKAGE_ROOT / "jetson_env").is_dir() and str(PACKAGE_ROOT) not in sys.path:
    sys.path.append(str(PACKAGE_ROOT))

# Ansible loads this file again in every task's worker process: the bundle's modules (twice
# the time of all the others) are imported only by the filters that read a bundle.
try:
    from jetson_env import (
        controller_files,
        keeping,
        matrix,
        pins,
        pip_failure,
        pip_satisfied,
        probing,
        provisioning,
        target_python,
        tensorrt_tarballs,
        wheels,
    )
except ImportError as exc:  # the collection without its Python package
    controller_files = keeping = matrix = pins = pip_satisfied = None
    pip_failure = provisioning = probing = target_python = None
    tensorrt_tarballs = wheels = None
    MISSING = (
        f"the jetson_env.jetson collection needs the jetson-env Python package in the "
        f"controller's Python ({sys.executable}): {exc}; install it there with "
        f"`{sys.executable} -m pip install .` in jetson-env's checkout. Nothing was changed"
    )


def matrix_mapping(path):
    """The version matrix file at `path` ("" = jetson-env's own), validated, merge keys
    resolved, as one mapping."""
    return _load(path).raw


def plan(matrix_file, platform, python, host, allow_newer_point_release=False):
    """The host's matrix row and what follows from it (jetson_env.provisioning.plan):
    {"error": None, "family", "l4t", "assumed_from", "row", "compute_capability",
    "platform_key", "pycuda"}, or {"error": the message} for a host it cannot provision."""
    loaded = _load(matrix_file)
    return provisioning.plan(loaded, platform, python, str(host), bool(allow_newer_point_release))


def ansible_core_refusal(core_version, python_version, host, matrix_file=""):
    """Why this ansible-core cannot run modules in the host's Python, with the way out (the
    matrix's ansible_core table, jetson_env.ansible_core); "" when it can."""
    support = _load(matrix_file).ansible_core
    return support.refusal(str(core_version), str(python_version or ""), str(host))


def ansible_core_split(module_pythons, matrix_file=""):
    """Why no one ansible-core manages every host of the play, with the controller venvs that
    do (jetson_env.ansible_core's split, as doctor -i and bundle say it); "" when one does.
    `module_pythons`: each host's registered jetson_env.jetson.module_python result."""
    versions = [str(dict(found or {}).get("version") or "") for found in module_pythons or []]
    return _load(matrix_file).ansible_core.split(versions)


def torch_source(matrix_torch, wheel_file="", wheel_url="", pip_index="", version=""):
    """Where torch comes from for a host (jetson_env.provisioning.torch_source): the matrix
    row's `torch` and the torch role's overrides -> {"kind", "url", "filename", "index",
    "version", "overridden", "matrix_sha256"}."""
    _require_package()
    return provisioning.torch_source(
        dict(matrix_torch), str(wheel_file or ""), str(wheel_url or ""), str(pip_index or ""),
        str(version or ""),
    )  # fmt: skip


def role_installs(variables, role, row, installed=None):
    """What the role installs with pip and apt for its matrix row and its `variables`
    (jetson_env.provisioning.role_installs, the rule a bundle fetches by): {"pip", "apt"}."""
    _require_package()
    try:
        packages = {str(name): str(got or "") for name, got in dict(installed or {}).items()}
        return provisioning.role_installs(str(role), dict(row), dict(variables), packages)
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError(f"role_installs({role}): {exc}. Nothing was changed.") from None


def torchvision_tag(torch_version, matrix_file, row_torchvision=""):
    """The torchvision release to build for a torch version (jetson_env.provisioning): the
    matrix row's own where it pairs, else the pair's first ("2.5.0a0+..." -> "0.20.0")."""
    try:
        return provisioning.torchvision_tag_for(
            _load(matrix_file), str(torch_version), str(row_torchvision or "")
        )
    except matrix.UnknownRelease as exc:
        raise AnsibleFilterError(f"{exc}. Nothing was changed.") from None


def torchvision_kept(installed, torch_version, matrix_file, wanted_version=""):
    """Whether the installed torchvision stays (the pairing rule, local labels such as +cu130
    included, jetson_env.provisioning.torchvision_kept)."""
    return provisioning.torchvision_kept(
        _load(matrix_file), str(installed or ""), str(torch_version or ""),
        str(wanted_version or ""),
    )  # fmt: skip


def torch_probe(_name="torch"):
    """The doctor's torch probe as one script for `python -c` (jetson_env.keeping)."""
    _require_package()
    return keeping.probe_script()


def probe_source(name):
    """A probe's functions (and the probes' prelude) for a role's `python -c` script, the
    role's own lines after it (jetson_env.probing.functions): the doctor's code, not a copy."""
    _require_package()
    return probing.functions(str(name))


def torch_keeping(probe_stdout, matrix_file, platform, cuda, wanted_version, replace_working=False,
                  installed_version=None):  # fmt: skip
    """Whether the installed torch is kept (jetson_env.keeping.decide, the doctor's own torch
    check): {"keep", "version", "reason"}; `installed_version` is the facts' (decides alone
    where the probe could not change the answer)."""
    installed = None if installed_version is None else str(installed_version or "")
    return keeping.decide(_load(matrix_file), str(probe_stdout), platform, cuda,
                          str(wanted_version), bool(replace_working), installed)  # fmt: skip


def torch_probe_needed(installed_version, wanted_version):
    """Whether the torch probe can change the keep decision (jetson_env.keeping.probe_needed)."""
    _require_package()
    return keeping.probe_needed(str(installed_version or ""), str(wanted_version))


def pip_requirement(requirement, installed="", move=False):
    """The requirement for pip, "" where the installed release is kept: an exact pin of the
    matrix (numpy==1.26.1) does not move an installed release of its major unless `move`
    (jetson_env.pins)."""
    _require_package()
    return pins.requirement_for(str(requirement), str(installed or "") or None, _truthy(move))


def pip_installed_argv(names, python, args=()):
    """The command that reads the installed versions of the requirements `names` in the host's
    `python`, [] where pip must be asked anyway (jetson_env.pip_satisfied)."""
    _require_package()
    return pip_satisfied.read_argv(str(python), [str(n) for n in names], [str(a) for a in args])


def pip_satisfied_by(names, read):
    """["numpy 2.4.6", ...] where what pip_installed_argv's command printed meets every
    requirement in `names`, [] otherwise: pip is not asked then (jetson_env.pip_satisfied)."""
    _require_package()
    return pip_satisfied.satisfied([str(n) for n in names], str(read or ""))


def pip_failure_sentence(output, argv=(), env=None):
    """pip's failure (its stderr `output`) in one sentence: the index it could not reach among
    those in `argv` and `env`, its final error (jetson_env.pip_failure)."""
    _require_package()
    return pip_failure.sentence(str(output or ""), [str(a) for a in argv or ()],
                                {str(k): str(v) for k, v in (env or {}).items()})  # fmt: skip


def pip_platforms(machine, glibc):
    """`--platform TAG` arguments for every wheel tag a `machine` with `glibc` accepts."""
    _require_package()
    return wheels.pip_platform_args(str(machine), str(glibc) if glibc else None)


def bundle_plan(directory, platform, python, roles, manifest_sha256="", cuda=None):
    """What a host can install from the bundle in `directory` for the enabled `roles`
    (jetson_env.bundle.host_plan), from the manifest with `manifest_sha256` when given (the
    one `jetson-env provision --bundle [--trust]` checked): {"error": None | why, with the
    `jetson-env bundle` line that fixes it, "target", "skipped", "pip", "torch_wheel", ...}."""
    _require_package()
    from jetson_env import bundle

    return bundle.host_plan(
        str(directory),
        dict(platform),
        dict(python),
        {str(k): _truthy(v) for k, v in dict(roles).items()},
        str(manifest_sha256 or ""),
        dict(cuda or {}),
    )


def bundle_check(plan, role, lock_sha256=None):
    """The files of bundle_plan's `plan` that `role` is about to use, against the manifest's
    sha256 and the lock file's (jetson_env.bundle.check_role): {"error", "checked"}."""
    _require_package()
    from jetson_env import bundle

    return bundle.check_role(dict(plan), str(role), dict(lock_sha256 or {}))


def apt_download_line(packages):
    """The line that downloads `packages` with their dependencies on a connected machine of
    the host's distribution (the bundle manifest's, jetson_env.apt_repository.download_line)."""
    _require_package()
    from jetson_env import apt_repository

    return apt_repository.download_line([str(p) for p in packages])


def _truthy(value):
    """A boolean, also from ansible-core 2.16's rendering of one ("True", "False")."""
    return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "yes", "1")


def _load(matrix_file):
    _require_package()
    try:
        return matrix.load(Path(matrix_file) if matrix_file else None)
    except matrix.MatrixError as exc:
        raise AnsibleFilterError(f"{exc}. Nothing was changed.") from None


def _require_package():
    if matrix is None:
        raise AnsibleFilterError(MISSING)


def x86_tensorrt_requirement(python_version, matrix_file=""):
    """x86's pip TensorRT for a target CPython ("3.14.0" -> tensorrt-cu13==11.1.0.106: no 10.x
    has cp314 bindings), jetson_env.matrix.Matrix.x86_tensorrt_for."""
    return _load(matrix_file).x86_tensorrt_for(str(python_version or "")).requirement


def cuda_python_requirement(python_version, cuda_version, matrix_file=""):
    """The cuda-python for a target Python and CUDA ("cuda-python==13.*"), "" where Python is
    below cuda-python's floor or there is no CUDA (jetson_env.matrix.Matrix.cuda_python_for)."""
    found = _load(matrix_file).cuda_python_for(str(python_version or ""), str(cuda_version or ""))
    return found or ""


def tensorrt_converters(tensorrt_version, matrix_file=""):
    """The converters whose code can use this TensorRT ("11.1.0.106" -> onnx, torch_tensorrt:
    torch2trt cannot use 11), the matrix's rule the doctor follows too
    (jetson_env.matrix.Converters.for_tensorrt)."""
    return list(_load(matrix_file).converters.for_tensorrt(str(tensorrt_version or "").strip()))


def numpy_major(requirement):
    """The row's numpy requirement widened to its major (jetson_env.provisioning.numpy_major),
    installed beside the tensorrt role's onnx set so that pip keeps python_base's numpy."""
    _require_package()
    return provisioning.numpy_major(str(requirement))


def onnx_export_packages(tensorrt_version, row, matrix_file=""):
    """What the tensorrt role's onnx set installs with this TensorRT ("10.3.0", the matrix row
    of the host): jetson_env.provisioning.onnx_export_packages, the bundle's rule too."""
    return provisioning.onnx_export_packages(
        _load(matrix_file), dict(row), str(tensorrt_version or "").strip()
    )


def tensorrt_tarball_folder(tarball):
    """The folder NVIDIA's TensorRT tarball unpacks to, "TensorRT-<version>", for 10.x and 11.x
    names alike (jetson_env.tensorrt_tarballs)."""
    _require_package()
    try:
        return tensorrt_tarballs.folder(str(tarball))
    except ValueError as exc:
        raise AnsibleFilterError(f"{exc}. Nothing was changed.") from None


def pip_overrides_pep668(python):
    """Whether pip installs into this Python (the facts module's jetson_env_python) need
    --break-system-packages: jetson_env.target_python's rule, the doctor's too."""
    _require_package()
    return target_python.overrides_pep668(dict(python))


def controller_cache(name=""):
    """The controller's cache folder `name` of jetson-env ("torch", "apt-keys" ...): under
    $XDG_CACHE_HOME, else ~/.cache (jetson_env.controller_files, the bundle's cache too)."""
    _require_package()
    return str(controller_files.cache_root() / str(name or ""))


def lock_file(inventory_file):
    """The lock file of sha256 recorded on first download for a host from `inventory_file`
    (Ansible's magic variable): beside it, else in the controller's cache
    (jetson_env.controller_files)."""
    _require_package()
    return str(controller_files.lock_file(str(inventory_file or "")))


class FilterModule:
    def filters(self):
        return {
            "ansible_core_refusal": ansible_core_refusal,
            "ansible_core_split": ansible_core_split,
            "apt_download_line": apt_download_line,
            "bundle_check": bundle_check,
            "bundle_plan": bundle_plan,
            "controller_cache": controller_cache,
            "cuda_python_requirement": cuda_python_requirement,
            "tensorrt_converters": tensorrt_converters,
            "lock_file": lock_file,
            "matrix": matrix_mapping,
            "numpy_major": numpy_major,
            "onnx_export_packages": onnx_export_packages,
            "pip_failure": pip_failure_sentence,
            "pip_installed_argv": pip_installed_argv,
            "pip_overrides_pep668": pip_overrides_pep668,
            "pip_satisfied_by": pip_satisfied_by,
            "pip_platforms": pip_platforms,
            "pip_requirement": pip_requirement,
            "plan": plan,
            "probe_source": probe_source,
            "role_installs": role_installs,
            "tensorrt_tarball_folder": tensorrt_tarball_folder,
            "x86_tensorrt_requirement": x86_tensorrt_requirement,
            "torch_source": torch_source,
            "torchvision_tag": torchvision_tag,
            "torchvision_kept": torchvision_kept,
            "torch_keeping": torch_keeping,
            "torch_probe_needed": torch_probe_needed,
            "torch_probe": torch_probe,
        }
