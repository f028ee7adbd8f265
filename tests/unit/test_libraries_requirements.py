"""A library that a distribution this one requires ships is loaded by that one's import
first, as torchvision's _C.so finds torch's libc10.so on every PyPI install: the libraries
check must not call it missing (it did, on the H200's torch venv, with a fix that wrote
/etc/ld.so.conf.d). The loader itself is the oracle: ctypes loads the requirement first, as
its import does, then the dependent library."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import device_code

from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK
from jetson_env.matrix import load
from jetson_env.probing import run_probes
from jetson_env.targets import LocalTarget

SOURCE = "int provided(void) { return 1; }\n"
USER = "int provided(void);\nint uses(void) { return provided(); }\n"


def build(site: Path, requires: bool) -> None:
    """provider ships libjetsonenv_provided.so; dependent's libneeds_provided.so needs it
    (no run path: found only once provider's library is loaded)."""
    (site / "provider").mkdir(parents=True)
    (site / "dependent").mkdir()
    (site / "p.c").write_text(SOURCE)
    (site / "u.c").write_text(USER)
    provided = site / "provider" / "libjetsonenv_provided.so"
    user = site / "dependent" / "libneeds_provided.so"
    gcc = ["gcc", "-shared", "-fPIC"]
    subprocess.run([*gcc, "-Wl,-soname,libjetsonenv_provided.so", "-o", provided, site / "p.c"],
                   check=True)  # fmt: skip
    subprocess.run([*gcc, "-o", user, site / "u.c", f"-L{provided.parent}",
                    "-ljetsonenv_provided"], check=True)  # fmt: skip
    device_code.add_distribution(site, "provider", "1.0", [provided])
    device_code.add_distribution(site, "dependent", "1.0", [user])
    if requires:
        metadata = site / "dependent-1.0.dist-info" / "METADATA"
        metadata.write_text(metadata.read_text() + "Requires-Dist: provider>=1.0\n"
                            "Requires-Dist: absent; extra == 'test'\n\nBody\n")  # fmt: skip


def loads_after_its_requirement(site: Path) -> str:
    code = (
        "import ctypes, sys\n"
        "ctypes.CDLL(sys.argv[1])\n"
        "try:\n ctypes.CDLL(sys.argv[2]); print('ok')\n"
        "except OSError as e:\n print(e)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(site / "provider" / "libjetsonenv_provided.so"),
         str(site / "dependent" / "libneeds_provided.so")],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def libraries_findings(site: Path) -> tuple[list, dict]:
    env = {**os.environ, "PYTHONPATH": str(site), "LD_LIBRARY_PATH": ""}
    target = LocalTarget(sys.executable, env=env)
    result = run_probes(target, ["kernels"], {"kernels": 120})["kernels"]
    assert result.ok, (result.error, result.stderr)
    facts = Facts({"kernels": result}, load(), None)
    return BY_NAME["libraries"].run(facts), result.data


@pytest.mark.parametrize("requires", [True, False], ids=["required", "not-required"])
def test_a_library_a_requirement_ships_is_found(tmp_path, requires):
    build(tmp_path, requires)
    assert loads_after_its_requirement(tmp_path) == "ok"
    findings, data = libraries_findings(tmp_path)
    # Listed only with a need the loader would not find (it has no device code).
    dependent = next((p for p in data["packages"] if p["name"] == "dependent"), None)
    about_it = [f.summary for f in findings if "dependent" in f.summary]
    if requires:
        # Loaded by provider's import first: found, nothing to fix.
        assert dependent is None
        assert about_it == []
        assert not [f for f in findings if f.status == FAIL]
        assert any(f.status == OK for f in findings)
    else:
        # Nothing loads provider first: the loader would not find it, and the fix points it there.
        need = dependent["files"][0]["needs"]["libjetsonenv_provided.so"]
        assert need["path"] is None and need["shipped_by"]["package"] == "provider"
        assert about_it == ["dependent 1.0: libjetsonenv_provided.so is not found by the loader"]


# A package that declares no requirement but imports one first: torchaudio 2.11.0's METADATA
# has no Requires-Dist, and its __init__.py's `import torch` loads libc10.so before its
# extensions. The check failed it on the H200's torch venv, where `import torchaudio` works:
# "torchaudio 2.11.0: libc10.so is not found by the loader".
LOADS = 'import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), "{}"))\n'
FIRST = {
    "imports-it-first": '"""First."""\nimport sys\nimport provider\nfrom . import _load\n',
    "imports-it-after": "from . import _load\nimport provider\n",
    "imports-it-in-a-function": "def later():\n    import provider\n\n\nfrom . import _load\n",
}


@pytest.mark.parametrize("init", sorted(FIRST))
def test_a_library_of_a_package_imported_first_is_found(tmp_path, init):
    """dependent declares nothing; its __init__.py imports provider (whose __init__.py loads
    its library) before its own module that loads libneeds_provided.so, or after it, or
    only in a function. Python's import is the oracle; the check agrees with it."""
    build(tmp_path, requires=False)
    provider, dependent = tmp_path / "provider", tmp_path / "dependent"
    (provider / "__init__.py").write_text(LOADS.format("libjetsonenv_provided.so"))
    (dependent / "_load.py").write_text(LOADS.format("libneeds_provided.so"))
    (dependent / "__init__.py").write_text(FIRST[init])
    shipped = [provider / "libjetsonenv_provided.so", provider / "__init__.py"]
    device_code.add_distribution(tmp_path, "provider", "1.0", shipped)
    own = [dependent / "libneeds_provided.so", dependent / "__init__.py", dependent / "_load.py"]
    device_code.add_distribution(tmp_path, "dependent", "1.0", own)
    imported = subprocess.run(
        [sys.executable, "-c", "import dependent"],
        env={**os.environ, "PYTHONPATH": str(tmp_path), "LD_LIBRARY_PATH": ""},
        capture_output=True, text=True,
    )  # fmt: skip
    findings, _data = libraries_findings(tmp_path)
    about_it = [f.summary for f in findings if "dependent" in f.summary]
    if init == "imports-it-first":
        assert imported.returncode == 0, imported.stderr
        assert about_it == []
    else:
        assert "libjetsonenv_provided.so: cannot open shared object file" in imported.stderr
        assert about_it == ["dependent 1.0: libjetsonenv_provided.so is not found by the loader"]
