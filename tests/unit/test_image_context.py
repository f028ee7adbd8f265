"""`jetson-env images build` sends the same context from every checkout of one tree.

Docker caches a Dockerfile COPY by its files' bytes, mode and owner. A clone made under umask
002 (files 664, folders 775) or by another user sent other modes and owners than one made under
022, so CI's fresh clone rebuilt the x86 image from its first step (132 s) where an earlier
clone of the same commit had built it, and the image's files took the checkout's modes.
"""

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest
from docker.utils.build import tar as sdk_tar

from jetson_env.images import write_context

DOCKERIGNORE = "*\n!pyproject.toml\n!images/\n**/__pycache__\n"


def checkout(root: Path, umask: int, owner: int) -> Path:
    """A tree of one content, written under `umask` and owned by `owner`."""
    old = os.umask(umask)
    try:
        (root / "images" / "inputs").mkdir(parents=True)
        (root / "images" / "__pycache__").mkdir()
        (root / ".dockerignore").write_text(DOCKERIGNORE)
        (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        (root / "README.md").write_text("not in the context\n")
        (root / "images" / "Dockerfile").write_text("FROM scratch\n")
        (root / "images" / "__pycache__" / "x.pyc").write_bytes(b"\0")
        (root / "images" / "inputs" / "wheel.whl").write_bytes(b"PK")
        script = root / "images" / "provision.sh"
        script.write_text("#!/bin/sh\n")
        script.chmod(0o777 & ~umask)
    finally:
        os.umask(old)
    for path in [root, *root.rglob("*")]:
        os.chown(path, owner, owner)
    return root


def members(context: io.BufferedIOBase) -> list[tuple]:
    with tarfile.open(fileobj=context) as tar:
        return [
            (m.name, m.type, oct(m.mode), m.uid, m.gid, m.uname, m.gname,
             hashlib.sha256(tar.extractfile(m).read()).hexdigest() if m.isfile() else "")
            for m in tar.getmembers()
        ]  # fmt: skip


def context_of(root: Path) -> list[tuple]:
    with open(root.parent / f"{root.name}.tar", "w+b") as into:
        write_context(root, "images/Dockerfile", into)
        return members(into)


@pytest.fixture
def two_checkouts(tmp_path: Path) -> tuple[Path, Path]:
    if os.geteuid() != 0:
        pytest.skip("giving a checkout another owner needs root (CI's machines run as root)")
    return (checkout(tmp_path / "a" / "src", 0o022, 0),
            checkout(tmp_path / "b" / "src", 0o002, 1000))  # fmt: skip


def test_two_checkouts_of_one_tree_send_one_context(two_checkouts: tuple[Path, Path]):
    first, second = two_checkouts
    # What the docker SDK alone sends differs (what made Docker rebuild).
    assert members(sdk_tar(str(first), exclude=DOCKERIGNORE.split())) != members(
        sdk_tar(str(second), exclude=DOCKERIGNORE.split())
    )
    assert context_of(first) == context_of(second)


def test_the_context_holds_what_the_sdk_would_send_root_owned(two_checkouts):
    first, _ = two_checkouts
    ours = context_of(first)
    sdk = members(sdk_tar(str(first), exclude=DOCKERIGNORE.split(), dockerfile=None))
    assert [m[0] for m in ours] == sorted(m[0] for m in sdk)
    assert "README.md" not in [m[0] for m in ours]
    assert not [m for m in ours if "__pycache__" in m[0]]
    modes = {name: mode for name, _type, mode, *_ in ours}
    assert modes["images/provision.sh"] == oct(0o755)
    assert modes["images/inputs/wheel.whl"] == oct(0o644)
    assert modes["images"] == oct(0o755)
    assert {(m[3], m[4], m[5], m[6]) for m in ours} == {(0, 0, "", "")}
