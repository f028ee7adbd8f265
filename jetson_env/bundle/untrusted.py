"""A bundle is untrusted input: it reaches air-gapped sites on a USB stick or a share, from
people and scripts other than its maker, and provisioning reads it as root. Every rule
that keeps what it says inside its folder lives here, and every reader goes through it:

- a path (the manifest's, an apt Packages file's `Filename:`) is a plain relative name,
  `pip/NAME`, `files/NAME`, `controller/NAME` or `apt/REPO/NAME`, each part letters,
  digits and `._+~%=,-`, never starting with a dot: no `..`, no absolute path, no other
  folder;
- a file is opened component by component without following a link (`O_NOFOLLOW` at each
  level, relative to the folder above it), must be a regular file (a FIFO, a device or a
  link is refused before it is read), has the recorded size and sha256, and is read with
  a bound;
- the manifest has a bounded size (its depth bounded by the JSON reader) and the shape of
  docs/bundle-manifest.schema.json (checked with fastjsonschema); anything else is
  refused with what to do next;
- a file is written (NewFile) into a folder opened level by level without following a link
  (a folder that is a link is refused before anything is written), through a temporary name
  created with `O_EXCL | O_NOFOLLOW` and renamed over the file's name once complete.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from functools import cache
from pathlib import Path
from shlex import quote
from typing import Any

from jetson_env import installed
from jetson_env.bundle.errors import BundleError

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = Path(__file__).parents[1] / "data" / "bundle-manifest.schema.json"
SCHEMA = 1
CHUNK = 1 << 20
MANIFEST_MAX_BYTES = 32 << 20
PACKAGES_MAX_BYTES = 64 << 20
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~%=,-]{0,254}")
FOLDERS = {
    "pip": 2,
    "files": 2,
    "apt": 3,
    "controller": 2,
}  # top folder -> parts of a path under it
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def plain_path(path: object) -> str:
    """`path` if it is a plain relative name inside a bundle (module docstring), else
    BundleError."""
    if isinstance(path, str) and len(path) <= 600:
        parts = path.split("/")
        if FOLDERS.get(parts[0]) == len(parts) and all(NAME.fullmatch(p) for p in parts[1:]):
            return path
    raise BundleError(
        f"the bundle names {path!r}, which is not a plain path inside it (pip/NAME, files/NAME, "
        "controller/NAME or apt/REPO/NAME); it was not read. Nothing was changed.",
        hint="the bundle was made or changed by something else: make it again with "
        f"`{installed.command('jetson-env bundle')}`, and sign it (--sign) so that a change is "
        "seen",
    )


def plain_name(name: object) -> str:
    """A file name with no folder (a .deb of an apt repository), else BundleError."""
    if isinstance(name, str) and NAME.fullmatch(name):
        return name
    raise BundleError(
        f"the bundle names the file {name!r}, which is not a plain file name; it was not "
        "read. Nothing was changed.",
        hint=f"make the bundle again with `{installed.command('jetson-env bundle')}`",
    )


def open_inside(directory: Path, path: str) -> int:
    """A descriptor of the regular file `path` under `directory`, no link followed on the
    way; OSError (ELOOP or ENOTDIR for a link, EINVAL for what is not a regular file)
    otherwise."""
    return _open_parts(directory, plain_path(path).split("/"))


def _open_parts(directory: Path, parts: list[str]) -> int:
    fd = os.open(directory, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        handle = os.open(parts[-1], _OPEN_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise OSError(errno.EINVAL, "not a regular file")
    return handle


def folder_fd(directory: Path, folder: str = "") -> int:
    """A descriptor of the bundle's `folder` (`pip`, `apt/REPO`; "" for the bundle folder
    itself), each level made where missing and opened without following a link. A level
    that is a link (or a file) is BundleError, before anything is written; OSError for a
    folder that cannot be made (permissions, a full disk)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in [p for p in folder.split("/") if p]:
            if not NAME.fullmatch(part):
                plain_path(f"{folder}/")  # BundleError naming it
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise BundleError(
                    f"{directory / folder} is a symbolic link or not a folder: a bundle writes "
                    "only into folders of its own; nothing was written",
                    hint=f"move {directory / folder} away (a bundle's folders are its own) "
                    "and run the command again",
                ) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


class NewFile:
    """A file of the bundle being written (`with NewFile(directory, path, temp) as new:
    new.write(...); new.commit()`): the temporary name `temp` in the file's folder is created
    with O_EXCL and O_NOFOLLOW (a leftover or a planted link there is removed, never
    followed) and renamed over the file's name by commit(); left without commit, the
    temporary file is removed. OSError for a write that fails (a full disk)."""

    def __init__(self, directory: Path, path: str, temp: str):
        folder, _, self.name = path.rpartition("/")
        self.temp = temp
        self.dir_fd = folder_fd(directory, folder)
        self.fd = -1
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=self.dir_fd)
            self.fd = os.open(temp, _NEW_FLAGS, 0o644, dir_fd=self.dir_fd)
        except BaseException:
            os.close(self.dir_fd)
            raise

    def __enter__(self) -> NewFile:
        return self

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def commit(self) -> None:
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1
        os.replace(self.temp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        self.temp = ""

    def __exit__(self, *_exc: object) -> None:
        try:
            if self.fd >= 0:
                os.close(self.fd)
            if self.temp:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.temp, dir_fd=self.dir_fd)
        finally:
            os.close(self.dir_fd)


def remove_inside(directory: Path, path: str) -> None:
    """Remove the bundle's file `path` (a partial download) without entering a folder that
    is a link (its files are not the bundle's); nothing when it is missing."""
    folder, _, name = path.rpartition("/")
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for part in [p for p in folder.split("/") if p]:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.unlink(name, dir_fd=fd)
    except OSError:
        return
    finally:
        os.close(fd)


def _read(handle: int, limit: int, each: Callable[[bytes], None]) -> int:
    """Feed at most `limit` + 1 bytes of `handle` to `each`; the count read."""
    count = 0
    while count <= limit:
        block = os.read(handle, min(CHUNK, limit + 1 - count))
        if not block:
            break
        each(block)
        count += len(block)
    return count


def file_problem(directory: Path, path: str, size: int, sha256: str) -> str | None:
    """What is wrong with the bundle's file `path` (missing, a link, not a regular file,
    another size or sha256), or None; at most `size` + 1 bytes are read."""
    try:
        handle = open_inside(directory, path)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return "a symbolic link (or under one): a bundle's files are its own"
        return f"cannot be read: {exc.strerror or exc}"
    try:
        actual_size = os.fstat(handle).st_size
        if actual_size != size:
            return f"size {actual_size}, the manifest says {size}"
        digest = hashlib.sha256()
        if _read(handle, size, digest.update) != size:
            return f"changed while read (not {size} bytes)"
    finally:
        os.close(handle)
    actual = digest.hexdigest()
    return None if actual == sha256 else f"sha256 {actual}, the manifest says {sha256}"


def sha256_inside(directory: Path, path: str) -> str:
    """The sha256 of the bundle's regular file `path` (BundleError for a link, a FIFO ...)."""
    digest = hashlib.sha256()
    try:
        handle = open_inside(directory, path)
        try:
            _read(handle, os.fstat(handle).st_size, digest.update)
        finally:
            os.close(handle)
    except OSError as exc:
        raise BundleError(
            f"{directory / path} is in the way and is not a regular file of the bundle "
            f"({exc.strerror or exc}); nothing was added",
            hint=f"move {directory / path} away and run the command again",
        ) from None
    return digest.hexdigest()


def read_checked(directory: Path, path: str, sha256: str, limit: int) -> bytes:
    """The bytes of the bundle's file `path` (at most `limit`), which must have `sha256`;
    BundleError otherwise."""
    chunks: list[bytes] = []
    try:
        handle = open_inside(directory, path)
        try:
            count = _read(handle, limit, chunks.append)
        finally:
            os.close(handle)
    except OSError as exc:
        raise BundleError(f"{directory / path} cannot be read: {exc.strerror or exc}") from None
    data = b"".join(chunks)
    if count > limit or hashlib.sha256(data).hexdigest() != sha256:
        raise BundleError(
            f"{directory / path} is not the one the manifest records. Nothing was changed.",
            hint=f"`{installed.command(f'jetson-env bundle --verify {quote(str(directory))}')}` "
            "names what differs",
        )
    return data


def read_manifest(directory: Path, sha256: str | None = None) -> dict[str, Any] | None:
    """The manifest of the bundle in `directory`, its size, shape and paths checked; None
    when the folder has none. BundleError for everything else, and for a manifest whose
    sha256 is not `sha256` (given: the one a run checked before it started)."""
    return read_manifest_sha256(directory, sha256)[0]


def read_manifest_sha256(
    directory: Path, sha256: str | None = None
) -> tuple[dict[str, Any] | None, str]:
    """read_manifest's manifest and the sha256 of the bytes it was read from ("" when the
    folder has none): what a run checks once and then pins."""
    manifest, actual = _read_manifest(directory)
    if sha256 and actual != sha256:
        raise BundleError(
            f"{directory / MANIFEST} changed after --trust checked it (sha256 {sha256}, now "
            f"{actual or 'none'}): it is not the manifest that was verified. Nothing was changed.",
            hint="find out who changed the bundle, get it again from its maker and run the "
            "command again",
        )
    return manifest, actual


def _read_manifest(directory: Path) -> tuple[dict[str, Any] | None, str]:
    hint = "restore it, or start a new bundle in an empty folder"
    try:
        handle = _open_parts(directory, [MANIFEST])
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        raise BundleError(
            f"{directory / MANIFEST} cannot be read: {exc.strerror or exc} (a bundle's "
            "manifest is a regular file of its own)",
            hint=hint,
        ) from None
    chunks: list[bytes] = []
    try:
        count = _read(handle, MANIFEST_MAX_BYTES, chunks.append)
    except OSError as exc:
        raise BundleError(f"{directory / MANIFEST} cannot be read: {exc}", hint=hint) from None
    finally:
        os.close(handle)
    if count > MANIFEST_MAX_BYTES:
        raise BundleError(
            f"{directory / MANIFEST} is larger than {MANIFEST_MAX_BYTES >> 20} MiB: not a "
            "jetson-env bundle manifest",
            hint=hint,
        )
    raw = b"".join(chunks)
    try:
        data = json.loads(raw, parse_constant=_no_constant, parse_float=_no_fraction)
    except _Fraction as exc:
        raise BundleError(
            f"{directory / MANIFEST} is not a jetson-env bundle manifest of schema {SCHEMA}: it "
            f"has the number {exc}, where a manifest's numbers are whole. Nothing was read "
            "through it.",
            hint=hint,
        ) from None
    except (ValueError, RecursionError) as exc:
        raise BundleError(
            f"{directory / MANIFEST} is not JSON: {str(exc)[:200]}", hint=hint
        ) from None
    problem = manifest_problem(data)
    if problem:
        raise BundleError(
            f"{directory / MANIFEST} is not a jetson-env bundle manifest of schema {SCHEMA}: "
            f"{problem}. Nothing was read through it.",
            hint=hint,
        )
    return data, hashlib.sha256(raw).hexdigest()


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


class _Fraction(ValueError):
    """A number with a fraction or an exponent: a manifest's numbers are whole (sizes)."""


def _no_fraction(text: str) -> None:
    raise _Fraction(text[:40])


@cache
def _manifest_validator() -> Callable[[object], object]:
    """docs/bundle-manifest.schema.json, compiled once (fastjsonschema: pure Python)."""
    import fastjsonschema

    return fastjsonschema.compile(json.loads(MANIFEST_SCHEMA.read_text(encoding="utf-8")))


def manifest_problem(data: object) -> str | None:
    """What makes `data` no manifest of the documented shape
    (docs/bundle-manifest.schema.json), or None."""
    import fastjsonschema

    artifacts = data.get("artifacts") if isinstance(data, dict) else None
    for path in artifacts if isinstance(artifacts, dict) else ():
        try:
            plain_path(path)
        except BundleError:
            return f"the artifact path {path!r} is not a plain path inside the bundle"
    try:
        _manifest_validator()(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        where = exc.name.replace("data", "manifest", 1)  # a key from the bundle: repr'd
        return f"{where[:300]!r} is not of the documented form ({exc.rule})"
    return None
