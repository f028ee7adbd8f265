"""Platform facts: Jetson or not, architecture, L4T release, model, SoC, OS, Python, GPUs.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+), locally,
over SSH (sent on stdin) and as Ansible module_utils. collect() returns its facts.
A fact that cannot be read is None, with the reason under "unknown".

Overrides (documented in docs/probes.md): JETSON_ENV_DEVICE_TREE points at a
directory laid out like /proc/device-tree (files `model`, `compatible`), for
containers, where the host's device tree is not visible.
"""

import glob
import os
import platform as _platform
import re
import sys

if "read_bytes" not in globals():  # imported, not sent after the prelude: the prelude's own
    try:  # as an Ansible module_utils (the collection's module_utils link to the prelude too)
        from ansible_collections.jetson_env.jetson.plugins.module_utils.jetson_env_prelude import (
            command_output,
            read_bytes,
        )
    except ImportError:  # by the doctor's tests
        from jetson_env.probes._prelude import command_output, read_bytes

NV_TEGRA_RELEASE = "/etc/nv_tegra_release"
OS_RELEASE = "/etc/os-release"
DEVICE_TREE_DIRS = ("/proc/device-tree", "/sys/firmware/devicetree/base")
DEVICE_TREE_OVERRIDE = "JETSON_ENV_DEVICE_TREE"

_RELEASE_LINE = re.compile(
    r"^#\s*R(?P<major>\d+)\s*\(release\),\s*REVISION:\s*(?P<revision>\d+(?:\.\d+)*)(?P<rest>.*)$"
)


def parse_nv_tegra_release(text):
    """Parse /etc/nv_tegra_release; returns {"l4t", "board", "fields"} or raises ValueError.

    First line: "# R32 (release), REVISION: 4.3, GCID: 21589087, BOARD: t210ref, EABI: ..."
    R36+ adds lines such as "# KERNEL_VARIANT: oot", kept under "fields".
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValueError("the file is empty")
    match = _RELEASE_LINE.match(lines[0])
    if not match:
        raise ValueError(
            "first line is not '# R<major> (release), REVISION: <x.y>, ...': %r" % lines[0][:80]
        )
    revision = match.group("revision")
    if revision.count(".") == 0:
        revision += ".0"
    fields = {}
    for part in match.group("rest").split(","):
        if ":" in part:
            key, _, value = part.partition(":")
            fields[key.strip()] = value.strip()
    for line in lines[1:]:
        body = line.lstrip("#").strip()
        for sep in (":", "="):
            key, found, value = body.partition(sep)
            if found and re.match(r"^[A-Z_]+$", key.strip()):
                fields[key.strip()] = value.strip()
                break
    return {
        "l4t": "%s.%s" % (match.group("major"), revision),
        "board": fields.get("BOARD"),
        "fields": fields,
    }


def parse_dpkg_version(text):
    """`dpkg-query -W -f '${Version}' nvidia-l4t-core` -> "36.4.3" ("36.4.3-20250107174145")."""
    version = text.strip().strip("'").split("-")[0]
    if not re.match(r"^\d+\.\d+(\.\d+)?$", version):
        raise ValueError("not an L4T version: %r" % text.strip()[:80])
    if version.count(".") == 1:
        version += ".0"
    return version


def parse_compatible(raw):
    """/proc/device-tree/compatible is NUL-separated: b"nvidia,p3449-0000\\0nvidia,tegra210\\0"."""
    return [item for item in raw.decode("ascii", "replace").split("\0") if item]


def soc_from_compatible(entries):
    """The SoC is the last "nvidia,tegraNNN" entry, e.g. "tegra234"."""
    for entry in reversed(entries):
        vendor, _, name = entry.partition(",")
        if vendor == "nvidia" and name.startswith("tegra"):
            return name
    return None


def parse_os_release(text):
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"')
    return {
        "id": values.get("ID"),
        "version_id": values.get("VERSION_ID"),
        # apt's suite name (bookworm, jammy): which apt repository of a bundle fits.
        "version_codename": values.get("VERSION_CODENAME") or values.get("UBUNTU_CODENAME"),
        "pretty_name": values.get("PRETTY_NAME"),
    }


def parse_nvidia_smi_gpus(text):
    """`nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader` -> list of GPUs."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, _, cap = line.rpartition(",")
        gpus.append({"name": name.strip(), "compute_capability": cap.strip() or None})
    return gpus


def _read(path, binary=False):
    """Bounded (the prelude's read_bytes): an endless file is named, not read whole."""
    data = read_bytes(path)
    return data if binary else data.decode("utf-8", "replace")


def detect_l4t(unknown):
    """L4T from /etc/nv_tegra_release, falling back to the nvidia-l4t-core package."""
    try:
        parsed = parse_nv_tegra_release(_read(NV_TEGRA_RELEASE))
        return parsed["l4t"], "nv_tegra_release", parsed["board"]
    except (IOError, OSError) as exc:
        file_reason = "%s: %s" % (NV_TEGRA_RELEASE, exc.strerror or exc)
    except ValueError as exc:
        file_reason = "%s is malformed: %s" % (NV_TEGRA_RELEASE, exc)
    out, reason = command_output(["dpkg-query", "-W", "-f", "${Version}", "nvidia-l4t-core"], 10)
    if out is not None:
        try:
            return parse_dpkg_version(out), "dpkg", None
        except ValueError as exc:
            reason = "nvidia-l4t-core: %s" % exc
    unknown["l4t"] = "%s; %s" % (file_reason, reason)
    return None, None, None


def device_tree_dir():
    override = os.environ.get(DEVICE_TREE_OVERRIDE)
    if override:
        return override
    for candidate in DEVICE_TREE_DIRS:
        if os.path.isdir(candidate):
            return candidate
    return None


def detect_device_tree(unknown):
    directory = device_tree_dir()
    if directory is None:
        unknown["model"] = unknown["soc"] = "no device tree (%s)" % " or ".join(DEVICE_TREE_DIRS)
        return None, [], None
    model = compatible = None
    try:
        model = _read(os.path.join(directory, "model"), binary=True)
        model = model.decode("utf-8", "replace").rstrip("\0").strip() or None
    except (IOError, OSError) as exc:
        unknown["model"] = "%s/model: %s" % (directory, exc.strerror or exc)
    try:
        compatible = parse_compatible(_read(os.path.join(directory, "compatible"), binary=True))
    except (IOError, OSError) as exc:
        unknown["soc"] = "%s/compatible: %s" % (directory, exc.strerror or exc)
        return model, [], None
    soc = soc_from_compatible(compatible)
    if soc is None:
        unknown["soc"] = "no nvidia,tegra entry in %s/compatible" % directory
    return model, compatible, soc


def detect_gpus(unknown):
    out, reason = command_output(
        ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"], 10
    )
    if out is None:
        unknown["gpus"] = reason
        return []
    return parse_nvidia_smi_gpus(out)


def glibc_version():
    """The C library's own glibc version ("2.36"), None where it is not glibc (the wheels
    a bundle's target may hold: manylinux tags up to it)."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (AttributeError, OSError, ValueError):
        return None
    return version if name == "glibc" else None


def gpu_visibility():
    """What hides a GPU from CUDA whatever the driver: the variables schedulers and containers
    set (CUDA_VISIBLE_DEVICES empty, -1 or no such index; NVIDIA_VISIBLE_DEVICES=void/none)
    and the device nodes a container was given (none: started without GPUs)."""
    return {
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "nvidia_visible_devices": os.environ.get("NVIDIA_VISIBLE_DEVICES"),
        "device_nodes": sorted(glob.glob("/dev/nvidia*")),
        "container": any(os.path.exists(p) for p in ("/.dockerenv", "/run/.containerenv")),
    }


def collect():
    unknown = {}
    l4t, l4t_source, board = detect_l4t(unknown)
    model, compatible, soc = detect_device_tree(unknown)
    is_jetson = l4t is not None or (soc or "").startswith("tegra")
    try:
        os_info = parse_os_release(_read(OS_RELEASE))
    except (IOError, OSError) as exc:
        os_info = {"id": None, "version_id": None, "pretty_name": None}
        unknown["os"] = "%s: %s" % (OS_RELEASE, exc.strerror or exc)
    return {
        "is_jetson": is_jetson,
        "machine": _platform.machine(),
        "l4t": l4t,
        "l4t_source": l4t_source,
        "board": board,
        "model": model,
        "soc": soc,
        "compatible": compatible,
        "os": os_info,
        "python": {
            "version": _platform.python_version(),
            "executable": sys.executable,
            "libc": glibc_version(),
        },
        "uid": os.getuid() if hasattr(os, "getuid") else None,
        "gpus": [] if is_jetson else detect_gpus(unknown),
        "visibility": gpu_visibility(),
        "unknown": unknown,
    }
