"""jetson-stats (the installed package, pinned in the `test` extra) as an independent oracle.

Its L4T -> JetPack table (jtop/core/jetson_variables.py NVIDIA_JETPACK) against the
matrix, and its own nv_tegra_release parser against the platform probe on every
release file the test hosts and probe fixtures carry.
"""

import importlib.util
import os
from importlib.machinery import SourceFileLoader
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


def load_refresher():
    """scripts/matrix-refresh, the maintainers' comparison of the same tables: where the matrix
    writes a JetPack label differently from jetson-stats (and why) is kept there, once."""
    path = Path(__file__).parents[2] / "scripts" / "matrix-refresh"
    loader = SourceFileLoader("matrix_refresh", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


REFRESH = load_refresher()
LABELS_WRITTEN_DIFFERENTLY = REFRESH.LABELS_WRITTEN_DIFFERENTLY
three_part = REFRESH.three_part

JETSON_STATS = {
    three_part(l4t): jetpack for l4t, jetpack in jetson_variables.NVIDIA_JETPACK.items()
}


@pytest.mark.parametrize("l4t", sorted(JETSON_STATS, key=Version))
def test_every_release_jetson_stats_knows_is_a_row_or_unsupported_with_a_reason(l4t):
    theirs = JETSON_STATS[l4t]
    if l4t in M.unsupported:
        # the reason and its sources are checked when the matrix loads; the label is theirs
        assert M.raw["unsupported"][l4t]["jetpack"] == theirs
        return
    assert l4t in M.releases, f"R{l4t} ({theirs}) is neither a row nor unsupported"
    ours = M.releases[l4t].jetpack
    assert (theirs, ours) == LABELS_WRITTEN_DIFFERENTLY.get(l4t, (ours, ours)), (l4t, ours, theirs)


def test_every_entry_citing_jetson_stats_is_one_it_knows():
    """An L4T jetson-stats does not map is a typo, or a release cited from elsewhere."""
    citing = [
        l4t
        for section in ("releases", "unsupported")
        for l4t, entry in M.raw[section].items()
        if "jetson-stats" in entry["source"]
    ]
    assert "38.1.0" not in citing and len(citing) > 30
    assert [l4t for l4t in citing if l4t not in JETSON_STATS] == []


@pytest.mark.parametrize("l4t", sorted(JETSON_STATS, key=Version))
def test_the_images_and_the_doctor_agree_on_every_release(l4t):
    """A release the row rule serves has exactly one image; one it refuses has none."""
    covering = [image.name for image in M.images if image.runs_on(l4t)]
    if l4t in M.releases:
        assert len(covering) == 1, (l4t, covering)
    else:
        assert covering == [], f"R{l4t} is refused ({M.unsupported[l4t]}) but {covering} claim it"


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
