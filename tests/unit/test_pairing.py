"""The one torch -> torchvision pairing rule (jetson_env.pairing) as tables, and the
torchvision role's variables rendered by the venv's ansible-core through its filters."""

import pytest
import yaml
from packaging.version import Version
from support.local_play import COLLECTION, run_on_localhost

from jetson_env import matrix
from jetson_env.bundle import BundleError
from jetson_env.bundle.needs import needs_for
from jetson_env.bundle.targets import BundleTarget
from jetson_env.pairing import requires_admit
from jetson_env.provisioning import torchvision_kept, torchvision_tag_for

M = matrix.load()
TABLE = "pytorch/vision's compatibility table (the matrix's torchvision_pairs)"
FLOOR = "torchvision 0.29.1's Requires-Dist: torch>=2.14.0"


@pytest.mark.parametrize(
    "torch, minor, first, source",
    [
        ("2.11.0", "0.26", "0.26.0", "torchvision 0.26.0's Requires-Dist: torch==2.11.0"),
        (
            "2.11.0+cu130",
            "0.26",
            "0.26.0",  # the GPU server's torch
            "torchvision 0.26.0's Requires-Dist: torch==2.11.0",
        ),
        ("2.13.0+cpu", "0.28", "0.28.0", "torchvision 0.28.0's Requires-Dist: torch==2.13.0"),
        (
            "2.5.0a0+872d972e41.nv24.08",
            "0.20",
            "0.20.0",  # NVIDIA's Jetson wheel
            "torchvision 0.20.0's Requires-Dist: torch==2.5.0",
        ),
        ("1.13.0a0", "0.14", "0.14.0", "torchvision 0.14.0's Requires-Dist: torch==1.13.0"),
        ("2.9.1", "0.24", "0.24.1", "torchvision 0.24.1's Requires-Dist: torch==2.9.1"),
        (
            "1.10.0",
            "0.11",
            "0.11.0",  # a pin on a local version pins its release
            "torchvision 0.11.0's Requires-Dist: torch==1.10.0+cu102",
        ),
        ("2.14.0", "0.29", "0.29.0", "torchvision 0.29.0's Requires-Dist: torch==2.14.0"),
        ("2.14.1", "0.29", "0.29.1", FLOOR),  # 0.29.0 pins torch==2.14.0
        ("2.15.0+cu132", "0.29", "0.29.1", FLOOR),
        ("2.16.0", None, None, None),  # newer than every pair the matrix holds
        ("0.4.1", None, None, None),
        ("not-a-version", None, None, None),
    ],
)
def test_the_pair_of_a_torch(torch, minor, first, source):
    found = M.torchvision_pair(torch)
    assert (found and (found.minor, found.first, found.source)) == (
        (minor, first, source) if minor else None
    )
    assert M.torchvision_for(torch) == minor


@pytest.mark.parametrize(
    "torch, torchvision, pairs",
    [
        ("2.11.0+cu130", "0.26.0+cu130", True),
        ("2.11.0", "0.26.0", True),
        ("2.11.0", "0.26.1+cpu", True),
        ("2.11.0", "0.26", True),
        ("2.11.0+cu130", "0.25.0+cu130", False),
        ("2.11.0", "0.2.6", False),
        ("2.11.0", "0.260.0", False),
        ("2.5.0a0+872d972e41.nv24.08", "0.20.0a0+afc54f7", True),  # a pre-release of 0.20.0
        # A pre-release torch may be any release of its line: Debian's torch 1.13.1 reports
        # 1.13.0a0 and Debian pairs it with 0.14.1 (requires torch==1.13.1).
        ("1.13.0a0", "0.14.1", True),
        ("1.13.0a0", "0.14.0", True),
        ("1.13.0", "0.14.1", False),  # a release is the one it says
        ("2.5.0a0+872d972e41.nv24.08", "0.20.1", True),
        ("2.15.0a0", "0.29.0", False),  # 0.29.0 requires torch==2.14.0: not the 2.15 line
        ("2.15.0a0", "0.29.1", True),
        ("2.15.0", "0.29.0", False),
        ("2.15.0", "0.29.1", True),
        ("2.15.0", "0.29.2+cu130", True),
        ("2.14.0", "0.29.0", True),
        ("2.9.0", "0.24.0", True),
        ("2.9.0", "0.24.1", False),  # 0.24.1 requires torch==2.9.1
        ("2.9.1", "0.24.0", False),
        ("2.12.0", "0.27.1", False),  # 0.27.1 requires torch==2.12.1
        ("2.5.1", "0.20.0", False),  # 0.20.0 requires torch==2.5.0
        ("2.5.1", "0.20.1", True),
        ("2.11.0", "", False),
        ("2.11.0", "junk", False),
    ],
)
def test_which_torchvision_releases_pair(torch, torchvision, pairs):
    assert M.torchvision_pair(torch).admits(torchvision) is pairs


@pytest.mark.parametrize(
    "torch, wanted, requirement",
    [
        ("1.13.0", "0.14.x, not 0.14.1", "torchvision==0.14.*,!=0.14.1"),
        ("1.13.0a0", "0.14.x", "torchvision==0.14.*"),
        ("1.13.1", "0.14.x from 0.14.1", "torchvision==0.14.*,>=0.14.1"),
        ("2.15.0a0", "0.29.x from 0.29.1", "torchvision==0.29.*,>=0.29.1"),
    ],
)
def test_what_a_message_and_pip_are_told_pairs(torch, wanted, requirement):
    found = M.torchvision_pair(torch)
    assert (found.wanted, found.requirement) == (wanted, requirement)


@pytest.mark.parametrize(
    "torch, row_torchvision, tag",
    [
        ("2.14.1", "0.29.1", "0.29.1"),  # the row's own
        ("2.14.0", "0.29.1", "0.29.1"),  # 0.29.1 requires torch>=2.14.0: the row's still pairs
        ("2.15.0+cu132", "0.29.1", "0.29.1"),
        ("2.15.0", "", "0.29.1"),
        ("2.11.0+cu130", "0.29.1", "0.26.0"),  # a kept torch: its own pair
        ("2.5.0a0+872d972e41.nv24.08", "0.20.0", "0.20.0"),
        ("1.13.1", "", "0.14.1"),  # 0.14.0 requires torch==1.13.0, 0.14.1 torch==1.13.1
        ("2.9.0", "", "0.24.0"),
    ],
)
def test_the_tag_built_for_a_torch(torch, row_torchvision, tag):
    assert torchvision_tag_for(M, torch, row_torchvision) == tag


def test_a_torch_without_a_pair_has_no_tag():
    with pytest.raises(matrix.UnknownRelease, match=r"torch 2\.16\.0 has no torchvision pair"):
        torchvision_tag_for(M, "2.16.0", "0.29.1")


@pytest.mark.parametrize(
    "installed, torch, wanted, kept",
    [
        ("0.26.0+cu130", "2.11.0+cu130", "", True),
        ("0.26.0+cu130", "2.11.0", "0.26.0", True),  # asked for 0.26.0: the label aside
        ("0.28.0+cpu", "2.13.0", "", True),
        ("0.29.2", "2.15.0", "", True),
        ("0.29.2", "2.14.1", "0.29.1", False),  # asked for another release
        # Asked for a release the pairing refuses (scripts/gpu-verify's 0.21.0 beside torch
        # 2.11): the pin is the user's, kept once built; the doctor says it does not pair.
        ("0.21.0", "2.11.0+cu130", "0.21.0", True),
        ("0.21.0+cu130", "2.11.0+cu130", "0.21.0", True),
        ("0.26.0", "2.11.0+cu130", "0.21.0", False),
        ("0.29.0", "2.15.0", "", False),
        ("0.25.0", "2.11.0", "", False),
        ("", "2.11.0", "", False),
        ("0.26.0", "", "", False),  # no torch to pair with
        ("0.26.0", "2.16.0", "", False),  # a torch without a pair
    ],
)
def test_an_installed_torchvision_is_kept_when_it_pairs(installed, torch, wanted, kept):
    assert torchvision_kept(M, installed, torch, wanted) is kept


ROLE = COLLECTION / "roles" / "torchvision"


def needed_template() -> str:
    """The role's own `_torchvision_needed` expression, read from its tasks."""
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    decide = next(t for t in tasks if t.get("name") == "Decide whether this host needs torchvision")
    return decide["ansible.builtin.set_fact"]["_torchvision_needed"]


def with_the_roles_variables(tmp_path, task: dict, torch: str, torchvision: str | None,
                             extra: dict):  # fmt: skip
    """`task`'s message, rendered by the ansible-core in this venv with the role's defaults and
    variables, these installed packages and the installed torch kept (torch_kept.keep)."""
    play = {"vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
            "tasks": [task]}  # fmt: skip
    variables = {
        "ansible_facts": {"jetson_env_python": {"packages": {"torch": torch,
                                                             "torchvision": torchvision}}},
        "jetson_facts_row": {"torch": {"version": M.x86.torch.version},
                             "torchvision": M.x86.torchvision},
        "jetson_facts_matrix_file": "", "torch_kept": {"keep": True}, **extra,
    }  # fmt: skip
    return run_on_localhost(tmp_path, play, variables)[0]["msg"]


@pytest.mark.parametrize(
    "torch, torchvision, extra, version, needed",
    [
        # The GPU server: a working CUDA wheel with a local label is kept, not rebuilt.
        ("2.11.0+cu130", "0.26.0+cu130", {}, "0.26.0", False),
        ("2.13.0+cpu", "0.28.0+cpu", {}, "0.28.0", False),
        ("2.15.0+cu132", "0.29.2", {}, "0.29.1", False),
        ("2.15.0+cu132", "0.29.0", {}, "0.29.1", True),
        ("2.11.0+cu130", "0.25.0", {}, "0.26.0", True),
        ("2.11.0+cu130", None, {}, "0.26.0", True),
        ("2.14.1", "0.29.2", {"torchvision_version": "0.29.1"}, "0.29.1", True),
        ("2.11.0+cu130", "0.26.0+cu130", {"torchvision_enabled": False}, "", False),
        ("2.11.0+cu130", "0.21.0", {"torchvision_version": "0.21.0"}, "0.21.0", False),
    ],
    ids=["cu130-label", "cpu-label", "2.15-floor", "2.15-pinned-0.29.0", "unpaired",
         "missing", "asked-for-another", "off", "asked-for-one-that-does-not-pair"],
)  # fmt: skip
def test_the_torchvision_role_keeps_what_pairs(tmp_path, torch, torchvision, extra, version,
                                               needed):  # fmt: skip
    """The role's variables and its install decision, rendered by the ansible-core in this
    venv with the installed torch kept (torch_kept.keep)."""
    needed_expression = needed_template().strip().removeprefix("{{").removesuffix("}}")
    msg = (
        "{{ {'version': (_torchvision_version if torchvision_enabled else ''),"
        f" 'needed': ({needed_expression}) | bool}} }}}}"
    )
    task = {"ansible.builtin.debug": {"msg": msg}}
    rendered = with_the_roles_variables(tmp_path, task, torch, torchvision, extra)
    assert rendered == {"version": version, "needed": needed}


@pytest.mark.parametrize(
    "torchvision, extra, said",
    [
        ("0.26.0+cu130", {}, "torchvision 0.26.0+cu130 (kept: it pairs)"),
        (None, {}, "torchvision 0.26.0 (built for it)"),
        ("0.26.0+cu130", {"torchvision_version": "0.26.0"},
         "torchvision 0.26.0+cu130 (kept: it pairs)"),
        ("0.21.0", {"torchvision_version": "0.21.0"},
         "torchvision 0.21.0 (kept: torchvision_version, which does not pair with torch 2.11.0)"),
        ("0.26.0", {"torchvision_version": "0.21.0"},
         "torchvision 0.21.0 (torchvision_version, which does not pair with torch 2.11.0,"
         " replacing 0.26.0)"),
    ],
    ids=["pairs", "missing", "asked-for-the-pair", "asked-for-one-that-does-not-pair",
         "replaced-by-one-that-does-not-pair"],
)  # fmt: skip
def test_the_preflight_says_what_torchvision_the_host_ends_with(tmp_path, torchvision, extra,
                                                                said):  # fmt: skip
    """The role's own announcement, rendered by the ansible-core in this venv: a
    torchvision_version the pairing refuses is named as the user's pin, not as a pair."""
    (task,) = yaml.safe_load((ROLE / "tasks" / "announce.yml").read_text())
    rendered = with_the_roles_variables(tmp_path, task, "2.11.0+cu130", torchvision, extra)
    assert rendered == f"localhost: torch 2.11.0 (as installed) -> {said}"


@pytest.mark.parametrize(
    "requirement, torch, admits",
    [
        ("torch==2.14.0", "2.14.0", True),
        ("torch==2.14.0", "2.14.1", False),
        ("torch>=2.14.0", "2.15.0", True),
        ("torch (>=2.14.0)", "2.13.0", False),
        ("==2.0.0+cu117", "2.0.0", True),  # PyPI's torchvision 0.15.0 wheel pins a local version
        ("==1.10.0+cu102", "1.10.1", False),
    ],
)
def test_a_requires_dist_admits_a_torch_release(requirement, torch, admits):
    assert requires_admit(requirement, Version(torch)) is admits


@pytest.mark.parametrize(
    "torch_file, archive",
    [
        (None, f"vision-{M.x86.torchvision}.tar.gz"),  # the row's torch: the row's torchvision
        ("torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", "vision-0.26.0.tar.gz"),
        ("torch-2.15.0+cu132-cp312-cp312-manylinux_2_28_x86_64.whl", "vision-0.29.1.tar.gz"),
    ],
)
def test_the_bundle_brings_the_torchvision_of_the_torch_it_brings(tmp_path, torch_file, archive):
    files = {"torch": tmp_path / torch_file} if torch_file else {}
    target = BundleTarget("x86_64", "3.12", "2.39")
    needs = needs_for(M, target, ["torch", "torchvision"], files)
    assert [u.filename for u in needs.urls if u.role == "torchvision"] == [archive]


def test_a_bundle_torch_without_a_pair_is_refused(tmp_path):
    files = {"torch": tmp_path / "torch-2.16.0-cp312-cp312-manylinux_2_28_x86_64.whl"}
    with pytest.raises(BundleError, match=r"torch 2\.16\.0 has no torchvision pair"):
        needs_for(M, BundleTarget("x86_64", "3.12", "2.39"), ["torchvision"], files)
