"""jetson_env.controller_files: where jetson-env keeps its files on the controller, one rule
for the bundle and the roles. The roles' defaults are rendered by a real ansible-playbook and
compared with the bundle's cache, as a user with and without $XDG_CACHE_HOME has them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

COLLECTIONS = Path(__file__).resolve().parents[2]
ROLES = COLLECTIONS / "ansible_collections" / "jetson_env" / "jetson" / "roles"
DEFAULTS = [
    ROLES / role / "defaults" / "main.yml" for role in ("torch", "torchvision", "jetpack_apt")
]
PATHS = {
    "torch_controller_cache": "torch",
    "torchvision_source_cache": "torchvision-src",
    "torchvision_wheel_cache": "torchvision",
    "jetpack_apt_controller_cache": "apt-keys",
}
PLAYBOOK = """
- hosts: all
  gather_facts: false
  vars_files: {defaults}
  tasks:
    - ansible.builtin.debug:
        msg: "{{{{ {{{variables}}} }}}}"
"""


def rendered(tmp_path: Path, env: dict, inventory: str) -> dict:
    """The roles' controller paths as ansible-playbook renders their defaults for one host."""
    names = [*PATHS, "torch_lock_file"]
    playbook = tmp_path / "render.yml"
    playbook.write_text(
        PLAYBOOK.format(
            defaults=json.dumps([str(path) for path in DEFAULTS]),
            variables=", ".join(f"'{name}': {name}" for name in names),
        )
    )
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", inventory, "-c", "local",
         str(playbook)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**env, "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
             "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    hosts = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]
    return next(iter(hosts.values()))["msg"]


def bundle_cache(env: dict) -> Path:
    """The bundle's cache (jetson_env.bundle.fetching.CACHE) in a Python with `env`."""
    code = "from jetson_env.bundle.fetching import CACHE; print(CACHE)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip())


@pytest.mark.parametrize("xdg", [True, False], ids=["XDG_CACHE_HOME", "HOME"])
def test_the_roles_cache_where_the_bundle_caches(tmp_path: Path, xdg: bool):
    env = {key: value for key, value in os.environ.items() if key != "XDG_CACHE_HOME"}
    env["HOME"] = str(tmp_path / "home")
    if xdg:
        env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    root = (tmp_path / "xdg") if xdg else (tmp_path / "home" / ".cache")

    paths = rendered(tmp_path, env, "localhost,")

    assert bundle_cache(env) == root / "jetson-env" / "bundle"
    assert paths == {
        **{name: str(root / "jetson-env" / folder) for name, folder in PATHS.items()},
        "torch_lock_file": str(root / "jetson-env" / "jetson-env.lock.yml"),
    }


def test_the_lock_file_is_beside_an_inventory_file(tmp_path: Path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "hosts.ini").write_text("orin ansible_connection=local\n")

    paths = rendered(tmp_path, dict(os.environ), str(fleet / "hosts.ini"))

    assert paths["torch_lock_file"] == str(fleet / "jetson-env.lock.yml")
