"""Which image runs on which host: the L4T compatibility rules, for every release."""

import pytest

from jetson_env import images, matrix
from jetson_env.images import HostPlatform, NoImage
from jetson_env.matrix import UnknownRelease

M = matrix.load()

EXPECTED = {
    "32.4.3": "r32.4.3",
    "32.4.4": "r32.4.4",
    "32.5.0": "r32.5.0",
    "32.5.1": "r32.5.0",
    "32.5.2": "r32.5.0",
    "32.6.1": "r32.6.1",
    **{f"32.7.{n}": "r32.7.1" for n in range(1, 7)},
    **{r: "r35.4.1" for r in ("35.1.0", "35.2.1", "35.3.1", "35.4.1", "35.5.0")},
    **{f"35.6.{n}": "r35.4.1" for n in range(6)},
    "36.2.0": "r36.3.0",
    "36.3.0": "r36.3.0",
    **{r: "r36.4.0" for r in ("36.4.0", "36.4.2", "36.4.3", "36.4.4", "36.4.7")},
    "36.5.0": "r36.4.0",
    "36.5.2": "r36.4.0",
    **{f"38.2.{n}": "r38.2.0" for n in range(3)},
    "38.4.0": "r38.2.0",
    **{f"39.2.{n}": "r39.2.0" for n in range(3)},
}


def test_every_release_of_the_matrix_is_covered():
    assert set(EXPECTED) == set(M.releases)


@pytest.mark.parametrize("l4t", sorted(EXPECTED))
def test_tag_for_each_release(l4t):
    image = images.image_for(HostPlatform(True, "aarch64", l4t), M)
    assert images.tag(image) == f"jetson-env:{EXPECTED[l4t]}"
    assert image.release.l4t == EXPECTED[l4t][1:]


def test_r36_before_and_from_36_4_are_not_interchangeable():
    old = images.image_for(HostPlatform(True, "aarch64", "36.3.0"), M)
    new = images.image_for(HostPlatform(True, "aarch64", "36.4.3"), M)
    assert old.name != new.name
    assert not old.runs_on("36.4.3") and not new.runs_on("36.3.0")


def test_x86_host_gets_the_x86_image():
    image = images.image_for(HostPlatform(False, "x86_64", None), M)
    assert images.tag(image, "ghcr.io/example/jetson-env") == "ghcr.io/example/jetson-env:x86_64"


def test_unsupported_l4t_names_the_supported_ones():
    with pytest.raises(UnknownRelease, match=r"R33\.1\.0 is not supported; .*R32\.4\.3"):
        images.image_for(HostPlatform(True, "aarch64", "33.1.0"), M)


def test_an_unlisted_point_release_gets_the_image_its_row_rule_gives():
    """One row rule: R36.4.9 is served by R36.4.x's newest row, and so by r36.4.0's image,
    whose host range covers it; a release left out on purpose of a covered line is refused."""
    image = images.image_for(HostPlatform(True, "aarch64", "36.4.9"), M)
    assert image.name == "r36.4.0" and M.resolve("36.4.9").assumed
    with pytest.raises(UnknownRelease, match=r"R35\.3\.0 is not supported \(JetPack 5\.1\.1 PRE"):
        images.image_for(HostPlatform(True, "aarch64", "35.3.0"), M)


def test_every_image_carries_its_torchs_cuda_major():
    """Base CUDA major == torch's CUDA major, for every image of the matrix: torchvision's and
    torch2trt's CUDA builds compile with the image's nvcc against that torch."""
    assert len(M.images) == len(M.raw["images"]["jetson"]) + 1
    for image in M.images:
        torch_cuda = image.release.torch.cuda
        assert image.cuda.split(".")[0] == torch_cuda.split(".")[0], (image.name, image.cuda)
    x86 = images.find("x86_64", M)
    assert (x86.base, x86.cuda) == ("nvcr.io/nvidia/tensorrt:25.08-py3", "13.0")


def test_unknown_l4t_and_other_architectures_say_what_to_do():
    with pytest.raises(NoImage, match="pass --l4t"):
        images.image_for(HostPlatform(True, "aarch64", None), M)
    with pytest.raises(NoImage, match="ppc64le"):
        images.image_for(HostPlatform(False, "ppc64le", None), M)


def test_build_args_come_from_the_matrix():
    args = images.build_args(images.find("r35.4.1", M), M)
    assert args == {
        "BASE_IMAGE": "nvcr.io/nvidia/l4t-jetpack:r35.4.1",
        "JETSON_ENV_IMAGE": "r35.4.1",
        "TORCH_VERSION": "2.0.0",
        "TORCHVISION_VERSION": "0.15.1",
        "CUDA_FROM": "base",
        "L4T": "35.4.1",
        "TORCH_CUDA_ARCH_LIST": "7.2;8.7",
    }
