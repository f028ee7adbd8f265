"""Which ansible-core manages which target Python: the matrix's ansible_core table, as one rule."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.local_play import run_on_localhost

from jetson_env import matrix as matrix_mod
from jetson_env.matrix import MatrixError

SUPPORT = matrix_mod.load().ansible_core


@pytest.mark.parametrize(
    ("core", "python", "manages"),
    [
        ("2.16.19", "3.6", True),
        ("2.17.0", "3.6", False),
        ("2.17.0", "3.7.16", True),
        ("2.19.14", "3.8.18", True),
        ("2.20.10", "3.8", False),  # "Ansible requires Python 3.9 or newer on the target"
        ("2.21.5", "3.8", False),
        ("2.21.5", "3.9", True),
        ("2.24.0", "3.12", True),  # a line newer than the table: the newest line's floor
        ("2.24.0", "3.8", False),
    ],
)
def test_which_core_manages_which_target_python(core, python, manages):
    assert SUPPORT.manages(core, python) is manages


@pytest.mark.parametrize(
    ("pythons", "requirement"),
    [
        (["3.6.9"], "ansible-core<2.17"),  # JetPack 4: the 2.16 line
        (["3.7"], "ansible-core<2.18"),
        (["3.8.10"], "ansible-core<2.20"),  # JetPack 5: up to 2.19
        (["3.10.12"], None),  # JetPack 6: the newest
        (["3.12", "3.8", "3.10"], "ansible-core<2.20"),  # the oldest target decides
        (["3.12", "3.6"], "ansible-core<2.17"),
        ([], None),
    ],
)
def test_requirement_for_a_set_of_targets(pythons, requirement):
    assert SUPPORT.requirement(pythons) == requirement


def test_refusal_names_the_way_out_and_the_source():
    said = SUPPORT.refusal("2.21.5", "3.8", "xavier")
    assert said.startswith("xavier runs Ansible's modules with Python 3.8 and ansible-core 2.21.5")
    assert "'ansible-core<2.20'" in said and "of a Python 3.11 to 3.13" in said
    assert "release_and_maintenance.html#ansible-core-support-matrix" in said
    assert SUPPORT.refusal("2.19.14", "3.8", "xavier") == ""
    assert SUPPORT.refusal("2.21.5", "", "xavier") == ""  # version unknown: modules say why
    assert "No ansible-core that jetson-env supports" in SUPPORT.refusal("2.21.5", "3.5", "old")


def test_a_broken_ansible_core_block_names_itself():
    raw = yaml.safe_load(matrix_mod.default_path().read_text())
    broken = copy.deepcopy(raw)
    broken["ansible_core"]["lines"]["2.22"] = {"oldest_target_python": "3.8",
                                               "newest_target_python": "3.14",
                                               "controller_python": "3.12-3.14"}  # fmt: skip
    with pytest.raises(MatrixError, match="a newer line cannot manage an older Python"):
        matrix_mod.validate(broken)
    broken = copy.deepcopy(raw)
    broken["ansible_core"]["lines"]["2.22"] = {"oldest_target_python": "3.10"}
    with pytest.raises(MatrixError, match=r"ansible_core\.lines\.2\.22: missing "
                       r"'newest_target_python', 'controller_python'"):  # fmt: skip
        matrix_mod.validate(broken)


@pytest.mark.parametrize(
    ("core", "python", "manages"),
    [("2.16.19", "3.12", True), ("2.16.19", "3.14.0", False), ("2.19.14", "3.13", True),
     ("2.19.14", "3.14", False), ("2.21.5", "3.14", True)],
)  # fmt: skip
def test_each_line_manages_targets_up_to_a_newest_python(core, python, manages):
    """2.16/2.17 manage targets up to 3.12, 2.18/2.19 up to 3.13 (ansible-core's support
    matrix): Ubuntu 26.04's 3.14 needs 2.20 or newer."""
    assert SUPPORT.manages(core, python) is manages


def test_a_target_too_new_for_the_controllers_line_is_refused_with_the_venv_that_manages_it():
    said = SUPPORT.refusal("2.16.19", "3.14.0", "u2604")
    assert said.startswith(
        "u2604 runs Ansible's modules with Python 3.14.0 and ansible-core 2.16.19 (this"
        " controller's) supports Python 3.6 to 3.12 on targets"
    )
    assert "Python 3.14 targets need ansible-core 2.21" in said
    assert "a second controller venv, of a Python 3.12 to 3.14" in said


def test_jetpack_4_and_5_with_ubuntu_26_04_have_no_single_line_and_two_venvs_do():
    said = SUPPORT.split(["3.6.9", "3.8.10", "3.14.0"])
    assert said.startswith("No ansible-core line manages target Python 3.6, 3.8, 3.14 at once")
    assert "run jetson-env from 2 controller venvs" in said
    assert "for Python 3.6, 3.8 targets, a venv of a Python 3.10 to 3.12" in said
    assert "'ansible-core<2.17'`" in said
    assert "for Python 3.14 targets, a venv of a Python 3.12 to 3.14" in said
    assert SUPPORT.requirement(["3.6.9", "3.14.0"]) is None
    assert SUPPORT.split(["3.6.9", "3.8.10", "3.12.3"]) == ""  # 2.16 manages them all


def test_a_line_whose_controller_range_leaves_out_the_controller_python_is_named():
    said = SUPPORT.split(["3.6.9"], "3.14")
    assert said.startswith(
        "ansible-core 2.16, the line that manages target Python 3.6, runs on a controller"
        " Python 3.10 to 3.12, not 3.14"
    )
    assert SUPPORT.split(["3.6.9"], "3.12") == ""
    assert SUPPORT.split(["3.14.0"], "3.14") == ""
    assert SUPPORT.split(["3.11.9", "3.8.10"], "3.11") == ""  # 2.18, 2.19 run on 3.11
    assert SUPPORT.split(["3.14.0"], "3.11").startswith("ansible-core 2.21, the line")


def test_a_bundle_for_jetpack_4_made_on_a_python_3_14_controller_is_refused_first(tmp_path):
    """pip would put ansible-core 2.16.19 in DIR/controller for a Python 3.14 controller,
    outside 2.16's controller range: the installed command says so before fetching anything."""
    folder = tmp_path / "bundle"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "jetson-env"), "bundle", str(folder), "--l4t",
         "R32.7.1", "--controller-python", "3.14"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ansible-core 2.16, the line that manages target Python 3.6, runs on a controller" in (
        proc.stderr
    )
    assert "nothing was fetched or written" in proc.stderr
    assert not folder.exists()


def test_the_playbook_preflight_refuses_a_3_14_host_under_2_16(tmp_path):
    """The preflight's filter, rendered by this venv's ansible-playbook: the same refusal."""
    msg = "{{ '2.16.19' | jetson_env.jetson.ansible_core_refusal('3.14.0', 'u2604') }}"
    (result,) = run_on_localhost(tmp_path, {"tasks": [{"ansible.builtin.debug": {"msg": msg}}]}, {})
    said = result["msg"]
    assert said.startswith(
        "u2604 runs Ansible's modules with Python 3.14.0 and ansible-core 2.16.19"
    )
    assert "Python 3.14 targets need ansible-core 2.21" in said


@pytest.mark.parametrize(
    "said",
    ["garbage", "3.10\n3.6", "1" * 100_000, "3.6\x1b]0;PWN\x07", "\uff13.\uff16",
     "3.\u0661\u0661.0", "", "3", "v3.8", " 3.8"],
)  # fmt: skip
def test_a_python_version_that_is_no_version_is_the_hosts_to_explain(said):
    """What a host says its Python is: read only when it is a version (ASCII digits, short);
    else the refusal quotes it escaped and cut, and no requirement counts it."""
    refusal = SUPPORT.refusal("2.19.14", said, "odd")
    if not said:
        assert refusal == ""
        return
    assert refusal.startswith("odd runs Ansible's modules with a Python that says its version is")
    assert "\x1b" not in refusal and "\n" not in refusal and len(refusal) < 600
    assert SUPPORT.requirement([said, "3.8"]) == "ansible-core<2.20"


def test_a_version_that_is_no_version_leaves_the_split_to_the_others():
    """A fleet host that says its Python is `garbage` (issue 58) is its own finding; the split
    is the other hosts' (split raised InvalidVersion: doctor -i, which asks it, would crash)."""
    said = SUPPORT.split(["3.6.9", "garbage", "3\uff0e14", "3.14.0"])
    assert said.startswith("No ansible-core line manages target Python 3.6, 3.14 at once")
    assert SUPPORT.split(["garbage", "3.8.10"]) == ""
