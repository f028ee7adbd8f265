"""jetson_env.controller_files: where jetson-env keeps its files on the controller, one rule
for the bundle and the roles. The roles' defaults are rendered by a real ansible-playbook and
compared with the bundle's cache, as a user with and without $XDG_CACHE_HOME has them (the
lock file beside an inventory file: tests/integration/test_playbook_x86.py)."""

import subprocess
import sys
from pathlib import Path

import pytest
from support.local_play import COLLECTION, run_on_localhost

PATHS = {
    "torch_controller_cache": "torch",
    "torchvision_source_cache": "torchvision-src",
    "torchvision_wheel_cache": "torchvision",
    "jetpack_apt_controller_cache": "apt-keys",
    "torch_lock_file": "jetson-env.lock.yml",  # -i localhost,: no inventory file
}
ROLES = ("torch", "torchvision", "jetpack_apt")


def bundle_cache() -> Path:
    """The bundle's cache (jetson_env.bundle.fetching.CACHE) in a Python of this environment."""
    code = "from jetson_env.bundle.fetching import CACHE; print(CACHE)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip())


@pytest.mark.parametrize("xdg", [True, False], ids=["XDG_CACHE_HOME", "HOME"])
def test_the_roles_cache_where_the_bundle_caches(tmp_path: Path, monkeypatch, xdg: bool):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    else:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    root = (tmp_path / "xdg" if xdg else tmp_path / "home" / ".cache") / "jetson-env"
    play = {
        "vars_files": [
            str(COLLECTION / "roles" / role / "defaults" / "main.yml") for role in ROLES
        ],
        "tasks": [
            {"ansible.builtin.debug": {"msg": {name: f"{{{{ {name} }}}}" for name in PATHS}}}
        ],
    }

    [rendered] = run_on_localhost(tmp_path, play, {})

    assert bundle_cache() == root / "bundle"
    assert rendered["msg"] == {name: str(root / folder) for name, folder in PATHS.items()}
