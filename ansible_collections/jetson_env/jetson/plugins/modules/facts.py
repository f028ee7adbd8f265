#!/usr/bin/python
# ruff: noqa: E402, UP021, UP022, UP024, UP031
# (Ansible wants DOCUMENTATION before the imports; the module runs on Python 3.6 targets.)
"""Ansible module: the host's platform, CUDA and Python facts for the jetson-env roles.

Platform and CUDA detection are the doctor's own probes (jetson_env/probes), shared
as module_utils through symlinks, so there is one implementation. Stdlib only and
Python 3.6 compatible: on JetPack 4 it runs in the system Python 3.6.
"""

DOCUMENTATION = r"""
module: facts
short_description: Platform, CUDA and Python facts for jetson-env
description:
  - Runs the jetson-env platform and CUDA probes on the host and reports a Python
    interpreter's version, wheel tag and installed distributions. Read-only.
  - Honours C(JETSON_ENV_DEVICE_TREE) like the probes do.
options:
  gather:
    description: Which facts to collect.
    type: list
    elements: str
    choices: [platform, cuda, python]
    default: [platform, cuda, python]
  python:
    description:
      - The interpreter whose version and packages are reported (the target Python).
        Empty means the one this module runs in, the interpreter Ansible runs modules
        with (jetson_env.target_python's rule for a host without jetson_facts_python).
    type: path
    default: ""
  l4t:
    description:
      - Report this L4T release (and a Jetson) instead of the detected one, for image
        builds, whose base image has no L4T files. Empty means detect.
    type: str
    default: ""
author: jetson-env
"""

RETURN = r"""
ansible_facts:
  description: jetson_env_platform, jetson_env_cuda, jetson_env_memory, jetson_env_python.
  returned: always
  type: dict
"""

import json
import os
import subprocess
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson_env.jetson.plugins.module_utils.jetson_env_cuda import (
    collect as collect_cuda,
)
from ansible_collections.jetson_env.jetson.plugins.module_utils.jetson_env_packages import (
    DISTRIBUTIONS,
)
from ansible_collections.jetson_env.jetson.plugins.module_utils.jetson_env_platform import (
    collect as collect_platform,
)

# Runs in the target interpreter (3.6+): importlib.metadata from 3.8, pkg_resources before.
# argv[1]: the probes' table of distributions, [[module, [distribution, ...]], ...].
PYTHON_INFO = r"""
import json, os, platform, sys, sysconfig
table = json.loads(sys.argv[1])

def glibc():
    # Python < 3.8's platform.libc_ver() scans the interpreter binary for the newest
    # GLIBC_x.y symbol it uses, not the system's glibc: ask the C library itself.
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        return version if name == "glibc" else None
    except (AttributeError, OSError, ValueError):
        return platform.libc_ver()[1] or None

try:
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None
except ImportError:
    import pkg_resources

    def version(name):
        try:
            return pkg_resources.get_distribution(name).version
        except pkg_resources.DistributionNotFound:
            return None
def first_version(names):
    for name in names:
        found = version(name)
        if found:
            return found
    return None
tag = "cp%d%d" % sys.version_info[:2]
print(json.dumps({
    "executable": sys.executable,
    "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
    # PEP 668's marker (the probe's field): whether pip honours it is target_python's rule.
    "externally_managed": os.path.exists(
        os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")),
    "version": "%d.%d.%d" % sys.version_info[:3],
    "major_minor": "%d.%d" % sys.version_info[:2],
    "tag": tag,
    "include": sysconfig.get_paths()["include"],
    "libc": glibc(),
    "packages": dict((module, first_version(names)) for module, names in table),
}))
"""


def memory():
    """MemTotal and SwapTotal from /proc/meminfo, in MiB (None when unreadable)."""
    values = {}
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                values[key] = int(rest.split()[0]) // 1024
    except (IOError, OSError, ValueError, IndexError):
        return {"total_mb": None, "swap_mb": None, "cpus": os.cpu_count()}
    return {
        "total_mb": values.get("MemTotal"),
        "swap_mb": values.get("SwapTotal"),
        "cpus": os.cpu_count(),
    }


def python_info(module, python):
    try:
        proc = subprocess.run(
            [python, "-c", PYTHON_INFO, json.dumps(DISTRIBUTIONS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        module.fail_json(msg="cannot run the Python interpreter %s: %s" % (python, exc))
    if proc.returncode != 0:
        module.fail_json(
            msg="the Python interpreter %s failed: %s" % (python, proc.stderr.strip()[-500:])
        )
    return json.loads(proc.stdout)


def main():
    module = AnsibleModule(
        argument_spec={
            "gather": {
                "type": "list",
                "elements": "str",
                "choices": ["platform", "cuda", "python"],
                "default": ["platform", "cuda", "python"],
            },
            "python": {"type": "path", "default": ""},
            "l4t": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    facts = {}
    gather = module.params["gather"]
    if "platform" in gather:
        facts["jetson_env_platform"] = collect_platform()
        if module.params["l4t"]:
            facts["jetson_env_platform"].update(
                is_jetson=True, l4t=module.params["l4t"], l4t_source="jetson_facts_l4t", gpus=[]
            )
        facts["jetson_env_memory"] = memory()
    if "cuda" in gather:
        facts["jetson_env_cuda"] = collect_cuda()
    if "python" in gather:
        facts["jetson_env_python"] = python_info(module, module.params["python"] or sys.executable)
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
