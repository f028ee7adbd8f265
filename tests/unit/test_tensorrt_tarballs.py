"""The folder NVIDIA's TensorRT tarballs unpack to, from their file names (10.x and 11.x)."""

import pytest

from jetson_env import tensorrt_tarballs


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("TensorRT-10.16.1.11.Linux.x86_64-gnu.cuda-13.0.tar.gz", "TensorRT-10.16.1.11"),
        ("/srv/TensorRT-8.6.1.6.Linux.x86_64-gnu.cuda-12.0.tar.gz", "TensorRT-8.6.1.6"),
        (
            "TensorRT-Enterprise-11.4.0.106-Linux-x86_64-cuda-13.0-Release-external.tar.zst",
            "TensorRT-11.4.0.106",
        ),
    ],
)
def test_every_layout_unpacks_to_tensorrt_version(name: str, folder: str):
    assert tensorrt_tarballs.folder(name) == folder


def test_a_file_not_named_like_nvidias_is_refused_with_what_to_give():
    with pytest.raises(ValueError, match=r"trt\.tar\.gz is not named like NVIDIA's TensorRT"):
        tensorrt_tarballs.folder("/tmp/trt.tar.gz")
