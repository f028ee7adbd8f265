"""NVIDIA's x86 TensorRT tarballs: the folder one unpacks to, known from its file name.

Every TensorRT tarball unpacks to `TensorRT-<version>/` whatever the file is called (the
README inside the tarball; checked with 10.x and 11.x): 10.x
`TensorRT-10.16.1.11.Linux.x86_64-gnu.cuda-13.0.tar.gz`, 11.x
`TensorRT-Enterprise-11.4.0.106-Linux-x86_64-cuda-13.0-Release-external.tar.zst`. The tensorrt
and torch2trt roles (the `tensorrt_tarball_folder` filter) and the doctor's libnvinfer check
(LIB_DIR) share this rule.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

NAME = re.compile(r"TensorRT(?:-Enterprise)?-(\d+(?:\.\d+)*)")
# The lib dir of any tarball unpacked under a folder (format it with that folder, escaped).
LIB_DIR = r"{}/TensorRT-[0-9][^/]*/lib"


def folder(tarball: str) -> str:
    """The folder a tarball unpacks to: "TensorRT-<version>"."""
    name = PurePosixPath(tarball).name
    match = NAME.match(name)
    if match is None:
        raise ValueError(
            f"{name} is not named like NVIDIA's TensorRT tarballs (TensorRT-<version>... or "
            "TensorRT-Enterprise-<version>...): give tensorrt_tarball the file as downloaded"
        )
    return f"TensorRT-{match.group(1)}"
