"""The collection's plugins import jetson_env in Ansible's Python, which has ansible-core's own
dependencies and fastjsonschema (tests/support/ansible_envs.PLUGIN_DEPENDENCIES), not the
CLI's (rich, paramiko, docker). Session 18: bundle fetching imported the size helper from
jetson_env.terminal (rich), and every playbook's preflight filter failed with "No module
named 'rich'"."""

import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[2] / "ansible_collections/jetson_env/jetson/plugins"
CLI_ONLY = ("rich", "paramiko", "docker")
# Loads a plugin file as Ansible does (by path, not as a package), with the CLI's own
# dependencies made unimportable; prints what the plugin could not import, if anything.
LOAD = """
import importlib.util, sys
for name in {blocked!r}:
    sys.modules[name] = None
spec = importlib.util.spec_from_file_location("plugin", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(getattr(module, "MISSING", ""))
"""


@pytest.mark.parametrize(
    "path", sorted(PLUGINS.glob("*/*.py")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_a_plugin_loads_without_the_clis_dependencies(path):
    proc = subprocess.run(
        [sys.executable, "-c", LOAD.format(blocked=CLI_ONLY, path=str(path))],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", proc.stdout
