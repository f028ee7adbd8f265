"""The README's table of supported releases and docs/images.md's table of images are copies of
matrix facts: they must not drift from it."""

import re
from pathlib import Path

import pytest
from packaging.version import Version

from jetson_env import images, matrix

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
IMAGES = (ROOT / "docs" / "images.md").read_text()
M = matrix.load()


def table(header: str, text: str = README) -> list[list[str]]:
    lines = text[text.index(header) :].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def pair(release: matrix.Release) -> str:
    return f"{release.torch.version} -> {release.torchvision}"


@pytest.mark.parametrize("row", table("| JetPack | L4T |"), ids=lambda row: row[1])
def test_release_table_matches_the_matrix(row):
    _, l4t, cuda, tensorrt, python, torch = row
    if l4t == "-":  # the x86 profile
        assert torch == pair(M.x86)
        return
    for release in covered(l4t):
        assert release.cuda == cuda, (release.l4t, cuda)
        assert release.tensorrt in tensorrt.split(" / "), (release.l4t, tensorrt)
        assert release.python == python, (release.l4t, python)
        assert pair(release) == torch, (release.l4t, torch)


def covered(cell: str) -> list[matrix.Release]:
    """'R32.6.1, R32.7.1 - R32.7.6' -> the matrix rows it names, ranges included."""
    releases = []
    for part in cell.split(","):
        ends = re.findall(r"R(\d+\.\d+\.\d+)", part)
        low, high = Version(ends[0]), Version(ends[-1])
        releases += [r for r in M.releases.values() if low <= Version(r.l4t) <= high]
    return releases


def test_release_table_covers_every_release():
    listed = {r.l4t for row in table("| JetPack | L4T |") if row[1] != "-" for r in covered(row[1])}
    assert listed == set(M.releases)


@pytest.mark.parametrize("row", table("| Image | Host L4T", IMAGES), ids=lambda row: row[0])
def test_image_table_matches_the_matrix(row):
    tag, _, base, cuda_from, torch = row
    image = images.find(tag.strip("`").split(":")[1], M)
    assert base.split("`")[1] == image.base
    assert cuda_from == image.cuda_from
    assert torch == pair(image.release)
