"""Which ansible-core manages which target Python: the matrix's ansible_core table, as one rule."""

import copy

import pytest
import yaml

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
                                               "controller_python": "3.12-3.14"}  # fmt: skip
    with pytest.raises(MatrixError, match="a newer line cannot manage an older Python"):
        matrix_mod.validate(broken)
    broken = copy.deepcopy(raw)
    broken["ansible_core"]["lines"]["2.22"] = {"oldest_target_python": "3.10"}
    with pytest.raises(MatrixError, match=r"controller_python like '3\.11-3\.13'"):
        matrix_mod.validate(broken)


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
