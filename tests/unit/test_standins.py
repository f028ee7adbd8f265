"""The stand-in TensorRT tarball holds the same files on every build.

test_images stages it under images/inputs/ (rewritten with fixed tar times) for
`COPY images/`: a file inside that differs per build misses Docker's layer cache there
and the whole x86 image is built again on every warm run.
"""

import tarfile
import time
from pathlib import Path

from support.standins import build_tensorrt_tarball


def regular_files(tarball: Path) -> dict[str, bytes]:
    with tarfile.open(tarball) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}


def test_tensorrt_tarball_files_are_the_same_bytes_on_a_later_build(tmp_path: Path):
    first = regular_files(build_tensorrt_tarball("10.3.0", "cp311", tmp_path / "a"))
    # Past a zip entry's 2-second resolution: a build time stored in a member would differ.
    time.sleep(2.1)
    second = regular_files(build_tensorrt_tarball("10.3.0", "cp311", tmp_path / "b"))

    assert any(name.endswith(".whl") for name in first), sorted(first)
    assert sorted(first) == sorted(second)
    assert [n for n in first if first[n] != second[n]] == []
