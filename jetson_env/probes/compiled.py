"""The compiled (native-code) distributions of the target Python: those that install shared
objects.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). For every
distribution on sys.path (its dist-info RECORD or egg-info installed-files.txt) that
installs shared objects: the extensions' ABI tags (cpython-310-aarch64-linux-gnu, abi3)
and the libraries they load (ELF DT_NEEDED: libcudart.so.12, libnvinfer.so.10, libc10.so
...), read from the files' headers only. Distributions without compiled files are counted;
those whose file list is past the prelude's bounds (installed_files) are `unread`.
`jetson-env plan` judges them against the row after an upgrade. collect() returns a dict.
"""

import errno
import glob
import os
import struct
import sys
import sysconfig

FILES_READ_PER_DISTRIBUTION = 40  # torch has hundreds of .so files; their needs repeat
HEADER_LIMIT = 1 << 16
NEEDED_LIMIT = 64


def _read_at(handle, offset, size):
    handle.seek(offset)
    return handle.read(size)


def elf_needed(path):
    """The DT_NEEDED names of a 64- or 32-bit ELF shared object (None: not ELF)."""
    with open(path, "rb") as handle:
        head = handle.read(64)
        if head[:4] != b"\x7fELF":
            return None
        is64, order = head[4] == 2, "<" if head[5] == 1 else ">"
        if is64:
            phoff, phentsize, phnum = (struct.unpack(order + "Q", head[32:40])[0],
                                       *struct.unpack(order + "HH", head[54:58]))  # fmt: skip
        else:
            phoff, phentsize, phnum = (struct.unpack(order + "I", head[28:32])[0],
                                       *struct.unpack(order + "HH", head[42:46]))  # fmt: skip
        table = _read_at(handle, phoff, min(phentsize * phnum, HEADER_LIMIT))
        loads, dynamic = [], None
        for index in range(min(phnum, len(table) // max(phentsize, 1))):
            entry = table[index * phentsize : (index + 1) * phentsize]
            if is64:
                kind, _flags, offset, vaddr, _paddr, filesz = struct.unpack(
                    order + "IIQQQQ", entry[:40]
                )
            else:
                kind, offset, vaddr, _paddr, filesz = struct.unpack(order + "IIIII", entry[:20])
            if kind == 1:
                loads.append((vaddr, offset, filesz))
            elif kind == 2:
                dynamic = (offset, filesz)
        if dynamic is None:
            return []
        data = _read_at(handle, dynamic[0], min(dynamic[1], HEADER_LIMIT))
        size, form = (16, order + "qQ") if is64 else (8, order + "iI")
        needed, strtab, strsz = [], None, 0
        for index in range(len(data) // size):
            tag, value = struct.unpack(form, data[index * size : (index + 1) * size])
            if tag == 0:
                break
            if tag == 1:
                needed.append(value)
            elif tag == 5:
                strtab = value
            elif tag == 10:
                strsz = value
        if strtab is None:
            return []
        for vaddr, offset, filesz in loads:  # the string table's address -> its file offset
            if vaddr <= strtab < vaddr + filesz:
                strings = _read_at(handle, strtab - vaddr + offset, min(strsz, HEADER_LIMIT))
                break
        else:
            return []
        names = []
        for start in needed[:NEEDED_LIMIT]:
            end = strings.find(b"\0", start)
            if 0 <= start < len(strings) and end > start:
                names.append(strings[start:end].decode("utf-8", "replace"))
        return names


def _metadata(path):
    """(name, version) from the folder's METADATA or PKG-INFO."""
    name = version = None
    for file_name in ("METADATA", "PKG-INFO"):
        try:
            text = read_text(os.path.join(path, file_name))  # noqa: F821
        except (OSError, ValueError):
            continue
        for line in text.splitlines():
            if not line.strip():
                break
            if line.startswith("Name:") and name is None:
                name = line[5:].strip()
            elif line.startswith("Version:") and version is None:
                version = line[8:].strip()
        break
    if name is None:
        stem = os.path.basename(path).rsplit(".", 1)[0]
        name, _, version = stem.partition("-")
    return name, version or None


def _abi(file_name):
    """'cpython-310-aarch64-linux-gnu', 'abi3' or '' (a plain libfoo.so)."""
    parts = file_name.split(".")
    return parts[-2] if len(parts) >= 3 and parts[-1] == "so" else ""


def _distribution(path):
    """(what it installs, None), (None, why: no file list: a Debian package's) or (None, None):
    pure Python; OSError or ValueError where its file list is unreadable or past the
    prelude's bounds."""
    try:
        files = installed_files(path)  # noqa: F821 (the prelude's helper)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
        return None, "no file list (RECORD or installed-files.txt)"
    shared = sorted(f for f in files if f.endswith(".so") or ".so." in os.path.basename(f))
    if not shared:
        return None, None
    name, version = _metadata(path)
    needs, abis, unread = set(), set(), []
    for file_name in shared[:FILES_READ_PER_DISTRIBUTION]:
        abi = _abi(os.path.basename(file_name))
        if abi and abi != "so":
            abis.add(abi)
        try:
            found = elf_needed(file_name)
        except (OSError, struct.error, ValueError) as exc:
            unread.append("%s: %s" % (file_name, exc))
            continue
        needs.update(found or [])
    return {
        "name": name,
        "version": version,
        "location": os.path.dirname(path),
        "shared_objects": len(shared),
        "abis": sorted(abis),
        "needs": sorted(needs),
        "unread": unread[:5],
    }, None


def collect():
    distributions, problems, unread, seen, pure = [], [], [], set(), 0
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        for path in sorted(glob.glob(os.path.join(entry, "*.dist-info"))
                           + glob.glob(os.path.join(entry, "*.egg-info"))):  # fmt: skip
            if not os.path.isdir(path):
                continue
            key = os.path.basename(path).split("-")[0].lower().replace("_", "-")
            if key in seen:
                continue
            seen.add(key)
            try:
                found, problem = _distribution(path)
            except (OSError, ValueError) as exc:
                unread.append({"path": path, "error": str(exc)})
                continue
            if found is not None:
                distributions.append(found)
            elif problem is not None:
                problems.append("%s: %s" % (path, problem))
            else:
                pure += 1
    return {
        "python": {
            "version": ".".join(str(part) for part in sys.version_info[:3]),
            "soabi": sysconfig.get_config_var("SOABI") or "",
            "executable": sys.executable,
            "prefix": sys.prefix,
            "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
        },
        "distributions": distributions,
        "pure": pure,
        "problems": problems[:20],
        "unread": unread[:20],
    }
