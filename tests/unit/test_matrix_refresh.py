"""scripts/matrix-refresh, the maintainers' comparison of the matrix with jetson-stats and PyPI,
run for real against the jetson-stats release the test extra pins: a new jetson-stats that
maps a release the matrix lacks shows up here, in review, not silently."""

import datetime
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml
from packaging.version import Version

from jetson_env import matrix as matrix_mod

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "matrix-refresh"
PINNED = re.search(r'"jetson-stats==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)


def refresh(*args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def doctored_matrix(tmp_path, change) -> Path:
    raw = yaml.safe_load(matrix_mod.default_path().read_text())
    change(raw)
    path = tmp_path / "matrix.yml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_the_shipped_matrix_agrees_with_the_pinned_jetson_stats():
    proc = refresh("--offline")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"jetson-stats {PINNED}: ")
    assert "no difference(s)" in proc.stdout.splitlines()[0]


def test_what_jetson_stats_knows_and_the_matrix_does_not_is_printed(tmp_path):
    def change(raw):
        del raw["releases"]["36.4.7"]
        raw["releases"]["36.4.3"]["jetpack"] = "6.2.9"
        raw["unsupported"]["38.1.0"]["source"] = ["jetson-stats"]

    proc = refresh("--offline", "--matrix", str(doctored_matrix(tmp_path, change)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[1:] == [
        "- R36.4.3: JetPack 6.2.9 in the matrix, 6.2 in jetson-stats",
        "- new in jetson-stats: R36.4.7 (JetPack 6.2.1) is neither a row nor unsupported",
        "- R38.1.0 cites jetson-stats, which does not map it",
    ]


def test_pypi_releases_without_a_pair_and_a_newer_x86_torch_are_printed(tmp_path):
    m = matrix_mod.load()
    newest_paired = m.x86.torch.version
    major, minor, micro = (int(part) for part in newest_paired.split("."))
    newer_patch = f"{major}.{minor}.{micro + 1}"
    newest_pair = max(m.pairs, key=Version)  # the table may pair newer than x86's
    unpaired_torch = f"{newest_pair.split('.')[0]}.{int(newest_pair.split('.')[1]) + 1}.0"
    unpaired_vision = "0." + str(int(m.pairs[f"{major}.{minor}"].split(".")[1]) + 1)
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({
        "torch": [newest_paired, newer_patch, unpaired_torch, f"{unpaired_torch}rc1"],
        "torchvision": [m.x86.torchvision, f"{unpaired_vision}.0"],
    }))  # fmt: skip

    proc = refresh("--versions", str(versions))

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[1:] == [
        f"torch and torchvision from {versions}: 3 finding(s)",
        f"Requires-Dist and file lists from {versions}: no finding(s)",
        f"- torch {unpaired_torch[:-2]} (newest {unpaired_torch}) has no torchvision pair in the"
        " matrix",
        f"- torchvision {unpaired_vision} (newest {unpaired_vision}.0) pairs with no torch",
        f"- x86 profile: torch {newest_paired}; PyPI's newest torch with a pair is {newer_patch}"
        " (check its CUDA against images.x86's base before moving)",
    ]


def test_pypi_as_the_matrix_has_it_is_quiet(tmp_path):
    m = matrix_mod.load()
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"torch": ["1.6.0", m.x86.torch.version],
                                    "torchvision": ["0.7.0", m.x86.torchvision]}))  # fmt: skip
    proc = refresh("--versions", str(versions))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[1] == f"torch and torchvision from {versions}: no finding(s)"


def outside_facts_as_the_matrix_has_them(m: matrix_mod.Matrix) -> dict:
    """Every outside fact matrix-refresh reads, as the shipped matrix caches it."""
    torch_tensorrt = m.raw["converters"]["torch_tensorrt"]
    return {
        "torch": [m.x86.torch.version],
        "torchvision": [m.x86.torchvision],
        "requires_dist": {
            "torchvision": dict(m.requires_dist),
            "torch-tensorrt": {release: dict(entry) for release, entry in torch_tensorrt.items()},
        },
        "bindings_wheels": {pin.version: list(pin.bindings_pythons) for pin in m.x86_tensorrt_pins},
        "bindings_versions": [pin.version for pin in m.x86_tensorrt_pins],
        "pycuda": [m.raw["packages"]["pycuda"]["version"]],
        "tensorrt": [pin.version for pin in m.x86_tensorrt_pins]
        + [m.raw["x86"]["tensorrt"]["newest_seen"]],
    }


def test_outside_facts_as_the_matrix_caches_them_are_quiet(tmp_path):
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps(outside_facts_as_the_matrix_has_them(matrix_mod.load())))
    proc = refresh("--versions", str(versions))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        proc.stdout.splitlines()[2]
        == f"Requires-Dist and file lists from {versions}: no finding(s)"
    )


def test_drift_in_any_outside_fact_is_printed_and_exits_1(tmp_path):
    """A torchvision or Torch-TensorRT release whose Requires-Dist is new or differs, a pin whose
    bindings gained or lost a Python, a newer 10.x bindings release, a newer pycuda."""
    m = matrix_mod.load()
    data = outside_facts_as_the_matrix_has_them(m)
    data["requires_dist"]["torchvision"] |= {"0.24.1": "torch==2.9.2", "0.30.0": "torch==2.15.0"}
    data["requires_dist"]["torch-tensorrt"]["2.14.0"]["tensorrt"] = ">=11.1.0,<11.3.0"
    data["requires_dist"]["torch-tensorrt"]["2.15.0"] = {
        "torch": ">=2.15.0,<2.16.0",
        "tensorrt": ">=11.4.0,<11.5.0",
    }
    data["requires_dist"]["torch-tensorrt"]["2.5.0"]["package"] = "tensorrt"
    data["bindings_wheels"]["10.16.1.11"] = [*data["bindings_wheels"]["10.16.1.11"], "3.14"]
    data["bindings_versions"].append("10.17.0.1")
    data["pycuda"].append("2026.2")
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps(data))

    proc = refresh("--versions", str(versions))

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[2:] == [
        f"Requires-Dist and file lists from {versions}: 8 finding(s)",
        "- torchvision 0.24.1 requires torch==2.9.2; the matrix says torch==2.9.1",
        "- torchvision 0.30.0 requires torch==2.15.0: not in torchvision_pairs.requires_dist",
        "- Torch-TensorRT 2.5.0 requires the tensorrt distribution; the matrix says tensorrt-cu12",
        "- Torch-TensorRT 2.14.0 requires tensorrt >=11.1.0,<11.3.0; the matrix says"
        " >=11.1.0,<11.2.0",
        "- Torch-TensorRT 2.15.0 requires torch >=2.15.0,<2.16.0, TensorRT >=11.4.0,<11.5.0: not"
        " in converters.torch_tensorrt",
        "- tensorrt-cu13-bindings 10.16.1.11 has wheels for Python 3.8, 3.9, 3.10, 3.11, 3.12,"
        " 3.13, 3.14; the matrix says 3.8, 3.9, 3.10, 3.11, 3.12, 3.13",
        "- tensorrt-cu13-bindings 10.17.0.1 is newer than the x86 pin 10.16.1.11 (below 11)",
        "- pycuda 2026.2 is the newest; the matrix builds 2026.1",
    ]


def held_back_versions(tmp_path, m: matrix_mod.Matrix) -> Path:
    held = str(m.raw["x86"]["torch_held_back"]["version"])
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps({"torch": [m.x86.torch.version, held],
                                    "torchvision": [m.x86.torchvision]}))  # fmt: skip
    return versions


def test_a_held_back_torch_is_printed_with_the_converter_it_would_take(tmp_path):
    m = matrix_mod.load()
    proc = refresh("--versions", str(held_back_versions(tmp_path, m)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    held = m.raw["x86"]["torch_held_back"]["version"]
    lost = f"  (re-derived: torch {held} would take Torch-TensorRT from Python >=3.14"
    assert lost in proc.stdout


def test_a_hold_whose_reason_is_gone_is_drift(tmp_path):
    """Once a Torch-TensorRT release admits the newer torch, nothing is lost by moving."""
    m = matrix_mod.load()

    def change(raw):
        for entry in raw["converters"]["torch_tensorrt"].values():
            entry["torch"] = entry["torch"].replace("<2.15.0", "<2.16.0")

    path = doctored_matrix(tmp_path, change)
    proc = refresh("--versions", str(held_back_versions(tmp_path, m)), "--matrix", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "yet no x86 Python would lose a converter with it now: move the profile" in proc.stdout


def test_a_tensorrt_cu13_past_the_newest_the_matrix_weighed_is_drift(tmp_path):
    """TensorRT 11.5 (x86, SBSA, Windows) once pip's index has it: reported, not pinned."""
    data = outside_facts_as_the_matrix_has_them(matrix_mod.load())
    data["tensorrt"] += ["11.5.0.1", "11.6.0.1rc1"]
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps(data))
    proc = refresh("--versions", str(versions))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[3:] == [
        "- tensorrt-cu13 11.5.0.1 is on pip's index, past the pins (10.16.1.11, 11.1.0.106) and"
        " the newest the matrix has weighed (11.4.0.106): x86.tensorrt"
    ]


def test_a_torch_without_a_release_for_an_x86_python_keeps_the_hold(tmp_path):
    """torch 2.15.0 requires Python >=3.11 while x86 Ubuntu 22.04 (3.10) is a target: even once a
    Torch-TensorRT release admits it, moving would take torch from 3.10 hosts, so no "move"."""
    m = matrix_mod.load()
    held = str(m.raw["x86"]["torch_held_back"]["version"])

    def change(raw):
        for entry in raw["converters"]["torch_tensorrt"].values():
            entry["torch"] = entry["torch"].replace("<2.15.0", "<2.16.0")

    versions = tmp_path / "versions.json"
    everywhere = [m.x86.torch.version, held]
    versions.write_text(json.dumps({
        "torch": everywhere, "torchvision": [m.x86.torchvision],
        "torch_by_python": {"3.10": [m.x86.torch.version], "3.12": everywhere,
                            "3.14": everywhere},
    }))  # fmt: skip
    path = doctored_matrix(tmp_path, change)
    proc = refresh("--versions", str(versions), "--matrix", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "move the profile" not in proc.stdout
    assert (
        f"  (re-derived: torch {held} would take torch itself from Python 3.10 (no torch {held}"
        " for it))"
    ) in proc.stdout


def test_a_matrix_of_the_wrong_shape_is_named_by_its_path(tmp_path):
    """matrix-refresh checks the schema (the doctor's load leaves what its rules never read,
    such as a sha256, to the tests): exit 2, the key's path and what it must be."""
    path = doctored_matrix(tmp_path, lambda raw: raw["x86"]["torch"].update(sha256="abc"))
    proc = refresh("--offline", "--matrix", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == (
        f"matrix-refresh: {path}: x86.torch.sha256: must be a sha256 (64 lowercase hex digits)"
        " or null (recorded on first download), not 'abc'\n"
    )


def test_write_checked_dates_a_matrix_every_source_agrees_with(tmp_path):
    """--write-checked after a run with nothing found: the matrix's `checked` is today (UTC),
    the only line that changed; with a finding it is left as it was; --offline (PyPI not
    compared) is refused."""
    shipped = matrix_mod.default_path().read_text(encoding="utf-8")
    old = re.sub(r'^checked: ".*"$', 'checked: "2000-01-01"', shipped, flags=re.MULTILINE)
    path = tmp_path / "matrix.yml"
    path.write_text(old, encoding="utf-8")
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps(outside_facts_as_the_matrix_has_them(matrix_mod.load())))
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    proc = refresh("--versions", str(versions), "--matrix", str(path), "--write-checked")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == f"checked: {today} written to {path}"
    assert yaml.safe_load(path.read_text())["checked"] == today
    new = path.read_text(encoding="utf-8").splitlines()
    assert [(a, b) for a, b in zip(old.splitlines(), new, strict=True) if a != b] == [
        ('checked: "2000-01-01"', f'checked: "{today}"')
    ]
    path.write_text(old, encoding="utf-8")
    drift = outside_facts_as_the_matrix_has_them(matrix_mod.load())
    drift["pycuda"].append("2099.1")
    versions.write_text(json.dumps(drift))
    proc = refresh("--versions", str(versions), "--matrix", str(path), "--write-checked")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"checked not written to {path}: the findings above come first" in proc.stdout
    assert path.read_text(encoding="utf-8") == old
    proc = refresh("--offline", "--matrix", str(path), "--write-checked")
    assert proc.returncode == 2 and "--write-checked needs PyPI compared" in proc.stderr
    assert path.read_text(encoding="utf-8") == old


# cuda-python per Python as pip's index listed it on 2026-11-29 (`pip index versions cuda-python
# --python-version X --only-binary :all:`): 13.0.3 the newest for 3.9, 13.4.4 for 3.10 on.
CUDA_PYTHON_TODAY = {
    "3.9": ["13.0.3", "13.0.2", "12.9.10"],
    **{python: ["13.4.4", "13.4.1", "13.0.3", "12.9.10"]
       for python in ("3.10", "3.11", "3.12", "3.13", "3.14")},
}  # fmt: skip


def cuda_python_drift(tmp_path, by_python) -> list[str]:
    data = outside_facts_as_the_matrix_has_them(matrix_mod.load())
    data["cuda_python_by_python"] = by_python
    versions = tmp_path / "versions.json"
    versions.write_text(json.dumps(data))
    proc = refresh("--versions", str(versions))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.stdout.splitlines()[3:]


def test_cuda_python_per_python_as_the_index_has_it_is_quiet(tmp_path):
    """Issue 57 fact 3: a cuda-python 13.5 for Python >=3.11 only is what the matrix says."""
    assert cuda_python_drift(tmp_path, CUDA_PYTHON_TODAY) == []
    newer = {p: (["13.5.0"] if Version(p) >= Version("3.11") else []) + v
             for p, v in CUDA_PYTHON_TODAY.items()}  # fmt: skip
    assert cuda_python_drift(tmp_path, newer) == []


def test_a_python_a_new_cuda_python_line_leaves_behind_is_drift(tmp_path):
    """cuda-python 13.6 requiring Python >=3.12 would leave 3.11 on 13.5 while the matrix gives
    it 13.*; a 13.5 for 3.10 would make its 13.4 line stale."""
    by_python = {p: ["13.5.0", *v] for p, v in CUDA_PYTHON_TODAY.items() if p != "3.9"}
    by_python.update({p: ["13.6.0", *v] for p, v in by_python.items()
                      if Version(p) >= Version("3.12")})  # fmt: skip
    assert cuda_python_drift(tmp_path, by_python) == [
        "- Python 3.10's newest cuda-python 13 is 13.5.0; the matrix gives it cuda-python==13.4.*:"
        " packages.cuda_python.last_for_python",
        "- cuda-python 13.6.0 has no release for Python 3.11 (newest there 13.5.0), yet the matrix"
        " gives it cuda-python==13.*: packages.cuda_python.last_for_python",
    ]
