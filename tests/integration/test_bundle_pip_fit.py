"""A bundle's pip sets fit their targets whatever the controller's pip does (issue 44, case 2).

The resolution runs with the oldest pip jetson-env supports (22.2, the first with `install
--dry-run --report`) and with the newest, each in a venv of the tests' Python (3.11): pip 23.2
and older check Requires-Python against that Python instead of the target's, so a set for a
JetPack 5 target (Python 3.8) got termcolor 3.3.0 (Requires-Python >=3.10) and a controller
set for Python 3.12 stopped at ansible-core 2.19. An older pip (Ubuntu 22.04's 22.0.2) is
refused with the way out.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.pip_resolution import resolve
from jetson_env.bundle.targets import BundleTarget

JETPACK5 = BundleTarget("aarch64", "3.8", "2.31", "35.6.0")
CONTROLLER_312 = BundleTarget("x86_64", "3.12", "2.36")


def pip_venv(where: Path, pip: str) -> list[str]:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    python = str(where / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    pip], check=True, timeout=300)  # fmt: skip
    return [python, "-m", "pip"]


@pytest.mark.parametrize("pip", ["pip==22.2", "pip"], ids=["oldest-pip", "newest-pip"])
def test_sets_fit_the_targets_python_with_the_oldest_and_the_newest_pip(pip, tmp_path):
    command = pip_venv(tmp_path / "venv", pip)

    termcolor = resolve(JETPACK5, ["termcolor"], python=command)

    (found,) = termcolor
    assert found["name"] == "termcolor" and found["version"].startswith("2."), found
    metadata = subprocess.run(
        [*command, "download", "--quiet", "--no-deps", "--only-binary=:all:", "--dest",
         str(tmp_path / "w"), f"termcolor=={found['version']}"], check=True, timeout=300,
    )  # fmt: skip
    assert metadata.returncode == 0
    wheel = next((tmp_path / "w").glob("termcolor-*.whl"))
    requires_python = _requires_python(wheel)
    assert "3.8" in SpecifierSet(requires_python), (found, requires_python)

    controller = resolve(CONTROLLER_312, ["ansible-core"], python=command)

    core = next(item for item in controller if item["name"] == "ansible-core")
    assert core["version"].split(".")[:2] >= ["2", "21"], core  # the newest serves 3.12


def _requires_python(wheel: Path) -> str:
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        for line in archive.read(name).decode().splitlines():
            if line.startswith("Requires-Python:"):
                return line.split(":", 1)[1].strip()
    return ""


def test_a_pip_older_than_the_oldest_supported_is_refused_with_the_way_out(tmp_path):
    command = pip_venv(tmp_path / "venv", "pip==22.0.2")

    with pytest.raises(BundleError, match=r"older than 22\.2") as refused:
        resolve(JETPACK5, ["termcolor"], python=command)

    assert "pip install 'pip>=22.2'" in refused.value.hint


def test_the_bundles_controller_gets_an_ansible_core_that_manages_its_oldest_target():
    from jetson_env.bundle import controller

    def core(served: list[str]) -> str:
        found = controller.requirements("3.12", served)
        return next(item["version"] for item in found if item["name"] == "ansible-core")

    assert core(["3.8", "3.10"]).startswith("2.19."), "JetPack 5's 3.8 decides: ansible-core<2.20"
    assert core(["3.6"]).startswith("2.16.")
    assert int(core(["3.10", "3.12"]).split(".")[1]) >= 21
