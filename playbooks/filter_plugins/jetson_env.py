"""Filters that give the playbook jetson-env's own Python for the rules it owns.

The matrix is loaded and validated, and a target's wheel tags are computed, by the same
code the doctor and the image builds run (jetson_env, taken from the checkout this
playbook belongs to), so the roles only read the results and cannot disagree with it.
"""

import sys
from pathlib import Path

from ansible.errors import AnsibleFilterError

CHECKOUT = Path(__file__).resolve().parents[2]
if (CHECKOUT / "jetson_env").is_dir() and str(CHECKOUT) not in sys.path:
    sys.path.insert(0, str(CHECKOUT))

from jetson_env import matrix, provisioning, wheels  # noqa: E402


def jetson_env_matrix(path):
    """The version matrix file at `path`, validated, merge keys resolved, as one mapping."""
    return _load(path).raw


def jetson_env_plan(matrix_file, platform, python, host, allow_newer_point_release=False):
    """The host's matrix row and what follows from it (jetson_env.provisioning.plan):
    {"error": None, "family", "l4t", "assumed_from", "row", "compute_capability",
    "platform_key", "pycuda"}, or {"error": the message} for a host it cannot provision."""
    loaded = _load(matrix_file)
    return provisioning.plan(loaded, platform, python, str(host), bool(allow_newer_point_release))


def jetson_env_torch_source(matrix_torch, wheel_file="", wheel_url="", pip_index="", version=""):
    """Where torch comes from for a host (jetson_env.provisioning.torch_source): the matrix
    row's `torch` and the torch role's overrides -> {"kind", "url", "filename", "index",
    "version", "overridden", "matrix_sha256"}."""
    return provisioning.torch_source(
        dict(matrix_torch), str(wheel_file or ""), str(wheel_url or ""), str(pip_index or ""),
        str(version or ""),
    )  # fmt: skip


def jetson_env_torchvision_tag(torch_version, matrix_file):
    """The torchvision release paired with a torch version ("2.5.0a0+..." -> "0.20.0")."""
    try:
        return provisioning.torchvision_tag_for(_load(matrix_file), str(torch_version))
    except matrix.UnknownRelease as exc:
        raise AnsibleFilterError(f"{exc}. Nothing was changed.") from None


def _load(matrix_file):
    try:
        return matrix.load(Path(matrix_file))
    except matrix.MatrixError as exc:
        raise AnsibleFilterError(f"{exc}. Nothing was changed.") from None


def jetson_env_pip_platforms(machine, glibc):
    """`--platform TAG` arguments for every wheel tag a `machine` with `glibc` accepts."""
    return wheels.pip_platform_args(str(machine), str(glibc) if glibc else None)


class FilterModule:
    def filters(self):
        return {
            "jetson_env_matrix": jetson_env_matrix,
            "jetson_env_pip_platforms": jetson_env_pip_platforms,
            "jetson_env_plan": jetson_env_plan,
            "jetson_env_torch_source": jetson_env_torch_source,
            "jetson_env_torchvision_tag": jetson_env_torchvision_tag,
        }
