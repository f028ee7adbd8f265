"""jetson-env's own wheel again, from its installed files: what a bundle's controller/ carries
when jetson-env was installed from a wheel (the README's `pip install .` or an index), where
there is no source tree to build from and the index may not serve this version.

A wheel install is the wheel's files unpacked under site-packages, each listed with its sha256
in the .dist-info's RECORD (PEP 376, PEP 627). The wheel is those files again, zipped with the
.dist-info's METADATA, WHEEL and entry_points.txt; left out is what the installer wrote:
RECORD itself (written anew), INSTALLER, REQUESTED, direct_url.json, the bytecode it compiled
and the console script outside site-packages (pip writes it again from entry_points.txt).
A file that no longer has RECORD's sha256 (edited after the install) refuses the rebuild.
Times are fixed: the same install gives the same wheel, byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import Distribution

INSTALLER_WROTE = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the oldest time a zip file holds


class NotRebuildable(ValueError):
    """The installed files are not the wheel pip installed; the message names the file."""


def rebuild(dist: Distribution, folder: Path) -> Path:
    """The wheel of the installed distribution `dist`, written into `folder`."""
    info = _info_folder(dist)
    tags = HeaderParser().parsestr(dist.read_text("WHEEL") or "").get_all("Tag") or []
    if not tags:
        raise NotRebuildable(f"{info}/WHEEL names no wheel tag")
    members = {}
    for listed in dist.files or ():
        path = PurePosixPath(listed.as_posix())
        if ".." in path.parts or "__pycache__" in path.parts:
            continue  # the console script and bytecode: the installer's, made again
        if path.parts[0] == info and path.name in INSTALLER_WROTE:
            continue
        data = Path(dist.locate_file(listed)).read_bytes()
        if listed.hash is None or _digest(data, listed.hash.mode) != listed.hash.value:
            raise NotRebuildable(f"{path} is not the file pip installed (RECORD's sha256)")
        members[str(path)] = data
    record = f"{info}/RECORD"
    lines = [f"{name},sha256={_digest(data, 'sha256')},{len(data)}" for name, data in
             sorted(members.items())]  # fmt: skip
    members[record] = ("\n".join([*lines, f"{record},,"]) + "\n").encode()
    wheel = folder / f"{info.removesuffix('.dist-info')}-{_compressed(tags)}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in [*sorted(set(members) - {record}), record]:  # RECORD last, as wheels do
            entry = zipfile.ZipInfo(name, ZIP_TIME)
            entry.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, members[name])
    return wheel


def _info_folder(dist: Distribution) -> str:
    for listed in dist.files or ():
        if len(listed.parts) == 2 and listed.parts[0].endswith(".dist-info"):
            return listed.parts[0]
    raise NotRebuildable("the installed jetson-env has no RECORD (not installed from a wheel)")


def _digest(data: bytes, mode: str) -> str:
    return base64.urlsafe_b64encode(hashlib.new(mode, data).digest()).rstrip(b"=").decode()


def _compressed(tags: list[str]) -> str:
    """py3-none-any from WHEEL's Tag lines (PEP 425's compressed tag sets)."""
    parts = [tag.split("-") for tag in tags]
    return "-".join(".".join(dict.fromkeys(part[i] for part in parts)) for i in range(3))
