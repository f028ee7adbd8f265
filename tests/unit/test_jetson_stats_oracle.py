"""jetson-stats (the installed package, pinned in the `test` extra) as an independent oracle.

Its L4T -> JetPack table (jtop/core/jetson_variables.py NVIDIA_JETPACK) against the
matrix, and its own nv_tegra_release parser against the platform probe on every
release file the test hosts and probe fixtures carry.
"""

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from jtop.core import common as jtop_common
from jtop.core import jetson_variables
from packaging.version import Version

from jetson_env import matrix
from jetson_env.probes import platform

M = matrix.load()
FIXTURES = Path(__file__).parents[1] / "fixtures"
RELEASE_FILES = sorted(
    [
        *FIXTURES.glob("hosts/*/etc/nv_tegra_release"),
        *FIXTURES.glob("probes/nv_tegra_release/r*.txt"),
    ]
)
OLDEST = Version("32.4.3")  # JetPack 4.4, the oldest release jetson-env supports

# Where the matrix writes a JetPack label differently from jetson-stats, and why.
LABELS_WRITTEN_DIFFERENTLY = {
    # NVIDIA's JetPack 5.0.2 page (matrix source jetpack-502) names it 5.0.2; jetson-stats'
    # "GA" only tells it apart from the 5.0/5.0.1 developer previews (R34).
    "35.1.0": ("5.0.2 GA", "5.0.2"),
}


def three_part(l4t: str) -> str:
    """jetson-stats also keys "32.5" (a file saying "REVISION: 5"); the probe reads it as 32.5.0."""
    return l4t if l4t.count(".") == 2 else l4t + ".0"


JETSON_STATS = {
    three_part(l4t): jetpack
    for l4t, jetpack in jetson_variables.NVIDIA_JETPACK.items()
    if Version(l4t) >= OLDEST
}


@pytest.mark.parametrize("l4t", sorted(JETSON_STATS, key=Version))
def test_every_release_jetson_stats_knows_is_a_row_or_unsupported_with_a_reason(l4t):
    if l4t in M.unsupported:
        return  # the reason and its sources are checked when the matrix loads
    assert l4t in M.releases, f"R{l4t} ({JETSON_STATS[l4t]}) is neither a row nor unsupported"
    ours = M.releases[l4t].jetpack
    theirs = JETSON_STATS[l4t]
    assert (theirs, ours) == LABELS_WRITTEN_DIFFERENTLY.get(l4t, (ours, ours)), (l4t, ours, theirs)


def test_every_row_and_unsupported_release_is_one_jetson_stats_knows():
    """An L4T jetson-stats does not map is a typo, or a release to cite and explain here."""
    assert set(M.releases) | set(M.unsupported) <= set(JETSON_STATS)


def test_label_differences_are_still_differences():
    for l4t, (theirs, ours) in LABELS_WRITTEN_DIFFERENTLY.items():
        assert (JETSON_STATS[l4t], M.releases[l4t].jetpack) == (theirs, ours)


def jetson_stats_reads(monkeypatch, release_file: Path) -> str:
    """jetson-stats' own parser (get_nvidia_l4t) on release_file instead of the host's file."""
    host_file = "/etc/nv_tegra_release"

    def redirected(path):
        return str(release_file) if path == host_file else path

    fake_path = SimpleNamespace(isfile=lambda path: os.path.isfile(redirected(path)))
    monkeypatch.setattr(jetson_variables, "os", SimpleNamespace(path=fake_path))
    monkeypatch.setattr(jetson_variables, "cat", lambda path: jtop_common.cat(redirected(path)))
    return jetson_variables.get_nvidia_l4t()


@pytest.mark.parametrize(
    "release_file", RELEASE_FILES, ids=lambda path: str(path.relative_to(FIXTURES))
)
def test_probe_reads_each_release_file_as_jetson_stats_does(monkeypatch, release_file):
    theirs = jetson_stats_reads(monkeypatch, release_file)
    monkeypatch.setattr(platform, "NV_TEGRA_RELEASE", str(release_file))
    l4t, source, _board = platform.detect_l4t({})
    assert source == "nv_tegra_release"
    assert l4t == three_part(theirs)
    assert M.release(l4t).jetpack == JETSON_STATS[l4t]


def test_there_are_release_files_to_compare():
    assert len([f for f in RELEASE_FILES if "hosts" in f.parts]) == 3
