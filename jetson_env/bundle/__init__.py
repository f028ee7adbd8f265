"""`jetson-env bundle`: every artifact the playbook would fetch for some targets, gathered
once into a folder, so that provisioning from it needs no network at all.

A bundle folder holds:

- `manifest.json`: its targets (machine, Python, glibc, L4T release, the `jetson-env
  bundle` arguments that add them), every artifact (path, sha256, size, role, which
  targets use it, where it came from), what must be supplied by hand and where it goes,
  and the apt packages each target needs with the line that downloads them;
- `pip/`: wheels and sdists (pip's `--no-index --find-links DIR/pip`);
- `files/`: source archives and tarballs (torchvision, torch2trt, cuSPARSELt, TensorRT);
- `apt/<distribution>-<arch>/`: a flat apt repository of the .debs the roles install, with
  their dependencies, where the controller's own apt mirrors serve the target's
  distribution (jetson_env.apt_repository); otherwise the manifest lists the packages and
  the `apt-get download` line to run on a connected machine of that distribution.

The modules, one concern each: targets (which hosts), needs (what their roles fetch),
pip_resolution, fetching, judging (its wheels' kernels for each target's GPU), manifest (and
--verify), making (all of it into a folder),
preflight (what a host gets, checked before any change), doctor_advice, and the
rules every reader of a bundle follows (untrusted) and its signature (signing). This package
names the API the CLI and the collection's filters use.
"""

from jetson_env.bundle.doctor_advice import doctor_fixes
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.fetching import CACHE
from jetson_env.bundle.making import folder_lock, make, sign
from jetson_env.bundle.manifest import MANIFEST, SCHEMA, load_manifest, manual_line, verify
from jetson_env.bundle.needs import ROLES
from jetson_env.bundle.preflight import check_before_provision, check_role, host_plan
from jetson_env.bundle.signing import check as check_signature
from jetson_env.bundle.targets import target_from_facts, targets_from_args
from jetson_env.bundle.untrusted import read_manifest_sha256

__all__ = [
    "CACHE",
    "MANIFEST",
    "ROLES",
    "SCHEMA",
    "BundleError",
    "check_before_provision",
    "check_role",
    "check_signature",
    "doctor_fixes",
    "folder_lock",
    "host_plan",
    "load_manifest",
    "make",
    "manual_line",
    "read_manifest_sha256",
    "sign",
    "target_from_facts",
    "targets_from_args",
    "verify",
]
