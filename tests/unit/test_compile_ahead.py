"""What the suite byte-compiles ahead (support/compile_ahead.py), on real folders and a real
venv: a venv's file that does not compile fails nothing (as pip's own compile), the checkout's
does; only what this machine imports is compiled."""

import importlib.util
import subprocess
import venv
from pathlib import Path

from support.compile_ahead import compile_checkout, venv_command


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _compiled(root: Path, name: str) -> bool:
    return Path(importlib.util.cache_from_source(str(root / name))).exists()


def test_a_venv_compiles_but_the_unused_collections_and_an_unparsable_file_fails_nothing(
    tmp_path: Path,
):
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    (site,) = env.glob("lib/python3*/site-packages")
    _write(site, {
        "good.py": "X = 1\n",
        "broken.py": "def (:\n",  # a release shipping one unparsable file
        "ansible_collections/community/docker/plugins/connection/docker.py": "Y = 2\n",
        "ansible_collections/cisco/ios/plugins/modules/ios.py": "Z = 3\n",
    })  # fmt: skip

    proc = subprocess.run(venv_command(env), capture_output=True, text=True, check=False)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "broken.py" in proc.stdout  # reported, not fatal
    assert _compiled(site, "good.py")
    assert not _compiled(site, "broken.py")
    assert _compiled(site, "ansible_collections/community/docker/plugins/connection/docker.py")
    assert not _compiled(site, "ansible_collections/cisco/ios/plugins/modules/ios.py")


CHECKOUT = {
    "jetson_env/cli.py": "A = 1\n",
    "ansible_collections/jetson_env/jetson/plugins/filter/rows.py": "B = 1\n",
    "ansible_collections/jetson_env/jetson/roles/tensorrt/files/probe.py": "C = 1\n",
    "tests/support/hosts.py": "D = 1\n",
    "tests/integration/playbook_support.py": "E = 1\n",
    "tests/integration/conftest.py": "F = 1\n",
    "tests/unit/test_cli.py": "G = 1\n",
    "tests/fixtures/tree/usr/bin/tool.py": "H = 1\n",
}
IMPORTED_HERE = {
    "jetson_env/cli.py",
    "ansible_collections/jetson_env/jetson/plugins/filter/rows.py",
    "tests/support/hosts.py",
    "tests/integration/playbook_support.py",
}


def test_the_checkout_compiles_what_this_machine_imports_only(tmp_path: Path):
    _write(tmp_path, CHECKOUT)

    assert compile_checkout(tmp_path)

    assert {name for name in CHECKOUT if _compiled(tmp_path, name)} == IMPORTED_HERE


def test_a_checkout_module_that_does_not_compile_fails_the_run(tmp_path: Path):
    _write(tmp_path, {**CHECKOUT, "jetson_env/broken.py": "def (:\n"})

    assert not compile_checkout(tmp_path)
    assert _compiled(tmp_path, "jetson_env/cli.py")
