"""The CUDA device code of the target Python's packages, and whether the loader finds what
each shared object needs: read from the files' headers, without a GPU, CUDA or the toolkit.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). For every
distribution on sys.path (its dist-info RECORD or egg-info installed-files.txt), every
64-bit little-endian ELF shared object it installs is read by seeking (os.pread of headers,
never whole files: a torch CUDA venv's GBs in about a second):

- its `.nv_fatbin` section, the fatbin containers the CUDA runtime registers at load: each
  entry's kind (1 PTX, 2 ELF = SASS), its architecture, and for PTX the ISA version
  (major.minor: 9.0 is CUDA 13.0's). Compressed entries carry the same header. Layout:
  n-eiling/cuda-fatbin-decompression's fatbin-decompress.h and jiegec/fatbinary's lib.rs
  (container: magic 0xBA55ED50, version u16, header size u16, payload size u64; entry:
  kind u16, version u16, header size u32, payload size u64, compressed size u32, options
  offset u32, minor u16, major u16, arch u32, name offset u32, name size u32, flags u64,
  ...); checked against nvcc 13.0's output in tests/unit/test_device_code.py. Flags
  0x100000 and 0x200000 mark arch-specific (sm_90a) and family (sm_100f) code: read from
  nvcc's output for those targets. `__nv_relfatbin` (relocatable device code, -rdc) is not
  what the runtime loads: only counted. Each uncompressed SASS entry of .nv_fatbin is an ELF
  cubin whose section names are read (bounded): one without a `.text.*` section holds no
  kernel (libcufftw.so.12's only cubin, sm_75, as cuobjdump -elf shows; nothing is launched
  from it); `kernelless` lists the architectures all of whose cubins are read and hold none.
  A compressed entry (flags 0x2000 LZ4, 0x8000 zstd: libcufft.so.12's) is not read.
- `loaded`: fatbin containers a library keeps in a data section (.ldata, .lrodata, .rodata,
  .data) and loads itself through the driver (cuModuleLoadData), which neither the runtime
  nor cuobjdump (even -all) sees: cuFFT's kernels (libcufft.so.12: ~24,000 containers in
  .ldata, sm_75..sm_120 SASS; its .nv_fatbin one sm_75 cubin without a kernel). The same
  header walk, across the data between them (bounded: EMBEDDED_SCAN per section).
- its dynamic section: DT_NEEDED, DT_RPATH, DT_RUNPATH (names in .dynstr), and for each
  needed library where ld.so would find it, in ld.so(8)'s order: DT_RPATH (unless there is
  a DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH ($ORIGIN expanded), /etc/ld.so.cache (glibc's
  "glibc-ld.so.cache1.1" format, elf/cache.c), the default folders. A need another object of
  the same distribution finds is counted as found (it is loaded first, by that one), and so
  is a need a distribution it requires ships (Requires-Dist without an extra): its import
  comes first and loads it, as torchvision's _C.so finds torch's libc10.so (the loader
  matches an object already loaded by its name). A distribution whose own top-level package
  imports another's before any of its own modules counts as requiring it: torchaudio 2.11.0
  declares no Requires-Dist at all, and its __init__.py's `import torch` loads libc10.so
  before its extensions (torchaudio/lib/*.abi3.so) are loaded.

Files with device code are listed with all their needs; other shared objects only with the
needs the loader would not find, and for those which distribution ships a file of that name
(`shipped_by`: installed, but not where the loader looks). `driver`: the CUDA version the
driver supports (cuDriverGetVersion; no context is made), null without a driver.
`unread`: the file lists past the prelude's bounds (installed_files) and the listed shared
objects that could not be read; an egg-info without a list (a Debian package's: dpkg's
files) is not among them. collect() returns a dict.
"""

import ast
import errno
import glob
import os
import re
import struct
import sys
import time

FATBIN_MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
RESYNC_LIMIT = 4096
EMBEDDED_SECTIONS = (".ldata", ".lrodata", ".rodata", ".data")
EMBEDDED_WINDOW = 16 << 10  # where a section's first one must start (cuFFT's: 6 KB in)
EMBEDDED_SCAN = 32 << 20  # bytes between containers searched, per section
SCAN_CHUNK = 1 << 20
KIND_PTX, KIND_SASS, KIND_LTO_IR = 1, 2, 8
ARCH_SPECIFIC, FAMILY_SPECIFIC = 0x100000, 0x200000
COMPRESSED = 0x2000 | 0x8000  # LZ4, zstd (nvcc 13.0's and libcufft.so.12's flags)
SECTION_LIMIT = 1 << 16  # section header tables, string tables, dynamic sections
STRING_LIMIT = 4096  # one name of .dynstr (a library's, a run path)
FILES_WITHOUT_CODE_LISTED = 200
DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 5, 14, 15, 29
# ld.so.cache entry flags: libc6 (3) on this machine's architecture (glibc elf/ldconfig.h)
CACHE_FLAGS = {"x86_64": 0x0303, "aarch64": 0x0A03}
CACHE_NEW = b"glibc-ld.so.cache1.1"
REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
CACHE_OLD = b"ld.so-1.7.0"


def _pread(fd, size, offset):
    return os.pread(fd, size, offset)


def read_elf(path):
    """{"sass", "kernelless", "ptx", "relocatable", "loaded", "needed", "rpath", "runpath",
    "soname"} of a 64-bit
    little-endian ELF file, None for anything else (not ELF, 32-bit, big-endian)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        head = _pread(fd, 64, 0)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return None
        shoff = struct.unpack_from("<Q", head, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        if shentsize < 64 or not shnum or shstrndx >= shnum:
            raise ValueError("no section headers (stripped to the program headers)")
        table = _pread(fd, min(shnum * shentsize, SECTION_LIMIT * 4), shoff)
        sections = []
        for index in range(len(table) // shentsize):
            name, kind, _flags, _addr, offset, size, link = struct.unpack_from(
                "<IIQQQQI", table, index * shentsize
            )
            sections.append((name, kind, offset, size, link))
        names_at = sections[shstrndx]
        names = _pread(fd, min(names_at[3], SECTION_LIMIT), names_at[2])
        found = {"sass": [], "ptx": [], "relocatable": 0, "fatbin_unread": 0, "loaded": None}
        found["kernelless"] = []
        found.update(needed=[], rpath=None, runpath=None, soname=None)
        for name, kind, offset, size, link in sections:
            label = _string(names, name)
            if label == ".nv_fatbin":
                _fatbin(fd, offset, size, found)
            elif label == "__nv_relfatbin":
                found["relocatable"] += 1
            elif label in EMBEDDED_SECTIONS and kind == 1:  # SHT_PROGBITS
                _embedded(fd, label, offset, size, found)
            elif kind == 6 and link < len(sections):  # SHT_DYNAMIC, its strings in sh_link
                data = _pread(fd, min(size, SECTION_LIMIT), offset)
                strings = sections[link]
                _dynamic(data, lambda at, where=strings: _dynstr(fd, where, at), found)
        return found
    finally:
        os.close(fd)


def _string(table, start):
    end = table.find(b"\0", start)
    return table[start:end].decode("utf-8", "replace") if 0 <= start < end else ""


def _dynstr(fd, section, at):
    """The string at `at` in .dynstr, read where it is: libtorch_cpu.so's .dynstr holds MBs
    of symbol names before the libraries' names."""
    _name, _kind, offset, size, _link = section
    if at >= size:
        raise ValueError("a dynamic entry names a string past .dynstr")
    chunk = _pread(fd, min(STRING_LIMIT, size - at), offset + at)
    end = chunk.find(b"\0")
    if end < 0:
        raise ValueError("a .dynstr string longer than %d bytes" % STRING_LIMIT)
    return chunk[:end].decode("utf-8", "replace")


def _dynamic(data, string, found):
    for index in range(len(data) // 16):
        tag, value = struct.unpack_from("<qQ", data, index * 16)
        if tag == 0:
            break
        if tag == DT_NEEDED:
            found["needed"].append(string(value))
        elif tag == DT_RPATH:
            found["rpath"] = string(value)
        elif tag == DT_RUNPATH:
            found["runpath"] = string(value)
        elif tag == DT_SONAME:
            found["soname"] = string(value)


def _fatbin(fd, offset, size, found):
    """The containers of a .nv_fatbin section, walked header by header: the linker lays
    them 8-byte aligned; padding beyond that is skipped (RESYNC_LIMIT bytes searched for the
    next magic); what cannot be walked is counted in `fatbin_unread`."""
    kernels = {}
    sass, ptx, _containers, unread = _walk(fd, offset, offset + size, RESYNC_LIMIT, kernels)
    found["fatbin_unread"] += unread
    before, empty = set(found["sass"]), set(found["kernelless"])
    here = set(arch for arch, count in kernels.items() if count == 0)
    found["kernelless"] = _merge_sass(empty - sass, here - (before - empty))
    found["sass"] = _merge_sass(found["sass"], sass)
    found["ptx"] = _merge_ptx(found["ptx"], ptx)


def _embedded(fd, label, offset, size, found):
    """Fatbin containers a library keeps in a data section and loads itself through the
    driver (cuModuleLoadData): cuFFT's kernels (libcufft.so.12: ~24,000 containers in
    .ldata, its .nv_fatbin one kernel-less sm_75 stub). Looked for when a valid container
    starts in the section's first EMBEDDED_WINDOW bytes; walked header by header, the data
    between runs of containers (cuFFT's twiddle tables) searched up to EMBEDDED_SCAN bytes."""
    end = offset + size
    window = _pread(fd, min(EMBEDDED_WINDOW, size), offset)
    start = _next_container(window, 0, offset, end)
    if start is None or start + 80 > offset + len(window):
        return
    kind, _version, entry_size = struct.unpack_from("<HHI", window, start - offset + 16)
    if kind not in (KIND_PTX, KIND_SASS, KIND_LTO_IR) or entry_size < 64:
        return
    sass, ptx, containers, unread = _walk(fd, start, end, EMBEDDED_SCAN)
    if not (sass or ptx):
        return
    loaded = found["loaded"] or {"sections": [], "sass": [], "ptx": [], "containers": 0}
    loaded["sections"].append(label)
    loaded["containers"] += containers
    loaded["unread"] = loaded.get("unread", 0) + unread
    loaded["sass"] = _merge_sass(loaded["sass"], sass)
    loaded["ptx"] = _merge_ptx(loaded["ptx"], ptx)
    found["loaded"] = loaded


def _next_container(chunk, at, base, end):
    """The offset of the first valid container header (8-aligned from `base`, its payload
    inside the section) in `chunk` (read at `base`) from `at`, None if there is none."""
    while True:
        at = chunk.find(MAGIC_BYTES, at)
        if at < 0:
            return None
        if (base + at) % 8 == 0 and at + 16 <= len(chunk):
            _magic, version, header_size, payload = struct.unpack_from("<IHHQ", chunk, at)
            if version == 1 and header_size == 16 and base + at + 16 + payload <= end:
                return base + at
        at += 1


def _walk(fd, position, end, scan, kernels=None):
    """(sass, ptx, containers, unread bytes) of the containers from `position` to `end`;
    at most `scan` bytes that are not containers searched for the next one. `kernels`, a
    dict, gets {arch: kernels its cubins hold, None where one was not read}."""
    sass, ptx, containers = set(), set(), 0
    while position + 16 <= end:
        head = _pread(fd, 80, position)  # the container's header and its first entry's
        magic, _version, header_size, payload = (
            struct.unpack_from("<IHHQ", head) if len(head) >= 16 else (0, 0, 0, 0)
        )
        if magic != FATBIN_MAGIC or header_size < 16 or position + header_size + payload > end:
            found = _resync(fd, position, end, scan)
            if found is None:
                return sass, ptx, containers, end - position
            scan -= found - position
            position = found
            continue
        containers += 1
        entry, last = position + header_size, position + header_size + payload
        while entry + 64 <= last:
            at = entry - position
            header = head[at : at + 64] if at + 64 <= len(head) else _pread(fd, 64, entry)
            kind, _v, entry_size, body = struct.unpack_from("<HHIQ", header)
            minor, major, arch = struct.unpack_from("<HHI", header, 24)
            flags = struct.unpack_from("<Q", header, 40)[0]
            if entry_size < 64:
                return sass, ptx, containers, end - entry
            suffix = "a" if flags & ARCH_SPECIFIC else ""
            if kind == KIND_SASS:
                sass.add("sm_%d%s" % (arch, suffix))
                if kernels is not None:
                    name = "sm_%d%s" % (arch, suffix)
                    count = (
                        None if flags & COMPRESSED else _cubin_kernels(fd, entry + entry_size, body)
                    )
                    known = kernels.get(name, 0)
                    kernels[name] = None if count is None or known is None else known + count
            elif kind == KIND_PTX:
                ptx.add(("compute_%d%s" % (arch, suffix), "%d.%d" % (major, minor)))
            entry += entry_size + body
        position = (last + 7) // 8 * 8
    return sass, ptx, containers, 0


def _cubin_kernels(fd, start, size):
    """The `.text.*` sections (one per kernel or device function) of the ELF cubin at
    `start`, None where it is not one or its headers lie past the bounds."""
    head = _pread(fd, 64, start)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", head, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    table_size = shnum * shentsize
    if shentsize < 64 or shstrndx >= shnum or table_size > SECTION_LIMIT:
        return None
    if shoff + table_size > size:
        return None
    table = _pread(fd, table_size, start + shoff)
    names_offset, names_size = struct.unpack_from("<QQ", table, shstrndx * shentsize + 24)
    if names_size > SECTION_LIMIT or names_offset + names_size > size:
        return None
    names = _pread(fd, names_size, start + names_offset)
    labels = [
        _string(names, struct.unpack_from("<I", table, index * shentsize)[0])
        for index in range(shnum)
    ]
    return sum(1 for label in labels if label.startswith(".text."))


def _resync(fd, position, end, scan):
    """The next container after `position` within `scan` bytes, None if there is none:
    128 bytes searched first (a linker's padding), then RESYNC_LIMIT, then SCAN_CHUNKs."""
    searched, size = 0, 128  # cuFFT's containers lie 0-24 bytes apart
    while searched < scan and position + searched + 16 < end:
        chunk = _pread(
            fd, min(size, scan - searched + 16, end - position - searched), position + searched
        )
        found = _next_container(chunk, 8 if searched == 0 else 0, position + searched, end)
        if found is not None:
            return found
        searched += max(len(chunk) - 16, 8)
        size = RESYNC_LIMIT if size < RESYNC_LIMIT else SCAN_CHUNK
    return None


def _merge_sass(listed, sass):
    return sorted(set(listed) | sass, key=_arch_order)


def _merge_ptx(listed, ptx):
    known = set((item["arch"], item["version"]) for item in listed) | ptx
    return [
        {"arch": arch, "version": version}
        for arch, version in sorted(known, key=lambda item: _arch_order(item[0]))
    ]


def _arch_order(name):
    """sm_50 < sm_90 < sm_90a < sm_100 (as cuobjdump lists them)."""
    digits = "".join(c for c in name if c.isdigit())
    return (int(digits or 0), name)


def read_ld_cache(path="/etc/ld.so.cache"):
    """{soname: path} of the loader's cache for this machine's architecture."""
    import platform

    data = read_bytes(path, 64 << 20)  # noqa: F821 (the prelude's helper)
    start = 0
    if data.startswith(CACHE_OLD):
        count = struct.unpack_from("<I", data, 12)[0]
        start = (16 + count * 12 + 7) // 8 * 8
    if data[start : start + len(CACHE_NEW)] != CACHE_NEW:
        raise ValueError("%s: not a %s file" % (path, CACHE_NEW.decode()))
    count = struct.unpack_from("<I", data, start + 20)[0]
    wanted = CACHE_FLAGS.get(platform.machine())
    found = {}
    for index in range(count):
        flags, key, value = struct.unpack_from("<iII", data, start + 48 + index * 24)
        if (flags & 0xFF) != 3 or (wanted is not None and flags & 0xFFFF != wanted):
            continue
        found.setdefault(_string(data, start + key), _string(data, start + value))
    return found


def default_folders():
    """glibc's trusted folders (Debian's build adds the multiarch ones first)."""
    import sysconfig

    triplet = sysconfig.get_config_var("MULTIARCH")
    folders = ["/lib/%s" % triplet, "/usr/lib/%s" % triplet] if triplet else []
    return [*folders, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


def _search_path(value, origin):
    folders = []
    for folder in (value or "").split(":"):
        if folder:
            folders.append(folder.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
    return folders


def locate(need, elf, origin, loader):
    """(path, how) where ld.so finds `need` for the object, (None, None) where it does not."""
    if "/" in need:
        return (need, "path") if os.path.isfile(need) else (None, None)
    order = []
    if not elf["runpath"]:
        order.append(("rpath", _search_path(elf["rpath"], origin)))
    order.append(("LD_LIBRARY_PATH", _search_path(os.environ.get("LD_LIBRARY_PATH"), origin)))
    order.append(("runpath", _search_path(elf["runpath"], origin)))
    for how, folders in order:
        for folder in folders:
            candidate = os.path.join(folder, need)
            if os.path.isfile(candidate):
                return os.path.normpath(candidate), how
    if need in loader["cache"]:
        return loader["cache"][need], "ld.so.cache"
    for folder in loader["default"]:
        candidate = os.path.join(folder, need)
        if os.path.isfile(candidate):
            return candidate, "default"
    return None, None


def _name_version(path):
    """('nvidia-cublas-cu12', '12.9.1.4') from the folder's name (normalized as pip does)."""
    stem = os.path.basename(path).rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    return name.lower().replace("_", "-").replace(".", "-"), version or None


def _distributions():
    seen = set()
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        found = glob.glob(os.path.join(entry, "*.dist-info"))
        for path in sorted(found + glob.glob(os.path.join(entry, "*.egg-info"))):
            key = os.path.basename(path).split("-")[0].lower().replace("_", "-")
            if os.path.isdir(path) and key not in seen:
                seen.add(key)
                yield path


def _normal(name):
    return name.lower().replace("_", "-").replace(".", "-")


def _requirements(path):
    """The distributions `path` requires: Requires-Dist lines without an extra (METADATA's
    headers), or egg-info's requires.txt before its first [section]."""
    names = set()
    try:
        if path.endswith(".dist-info"):
            lines = read_text(os.path.join(path, "METADATA"), 16 << 20).splitlines()  # noqa: F821
            lines = lines[: lines.index("")] if "" in lines else lines
            specs = [
                line.split(":", 1)[1]
                for line in lines
                if line.lower().startswith("requires-dist:")
                and "extra" not in line.partition(";")[2]
            ]
        else:
            lines = read_text(os.path.join(path, "requires.txt"), 1 << 20).splitlines()  # noqa: F821
            specs = []
            for line in lines:
                if line.startswith("["):
                    break
                specs.append(line)
    except (OSError, ValueError):
        return names
    for spec in specs:
        match = REQUIREMENT_NAME.match(spec)
        if match:
            names.add(_normal(match.group(1)))
    return names


def _top_packages(path, files):
    """The __init__.py of each top-level package a distribution installs."""
    site = os.path.dirname(path)
    return [
        name
        for name in files
        if os.path.basename(name) == "__init__.py"
        and os.path.dirname(os.path.dirname(name)) == site
    ]


def _imported(inits, modules):
    """The distributions (by `modules`, {top-level package: distribution}) whose packages
    a distribution's own top-level packages (`inits`: their __init__.py) import at module
    level before any module of their own: import them and these are imported first."""
    names = set()
    for name in inits:
        folder = os.path.dirname(name)
        try:
            body = ast.parse(read_text(name, 1 << 20), name).body  # noqa: F821
        except (OSError, ValueError, SyntaxError):
            continue
        own = os.path.basename(folder)
        for node in body:
            if isinstance(node, ast.ImportFrom):
                if node.level:  # from . import x: a module of its own
                    break
                imported = [node.module.split(".")[0]]
            elif isinstance(node, ast.Import):
                imported = [alias.name.split(".")[0] for alias in node.names]
            else:
                continue
            if own in imported:
                break
            names.update(modules[m] for m in imported if m in modules)
    return names


def shared_object(name):
    base = os.path.basename(name)
    return base.endswith(".so") or ".so." in base


def driver_cuda():
    """(version, why): the CUDA version the driver supports ("13.0"), without a context."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            driver = ctypes.CDLL(name)
            break
        except OSError as exc:
            why = str(exc)
    else:
        return None, why
    version = ctypes.c_int()
    status = driver.cuDriverGetVersion(ctypes.byref(version))
    if status != 0:
        return None, "cuDriverGetVersion returned %d" % status
    return "%d.%d" % (version.value // 1000, version.value % 1000 // 10), None


def _package(path, files, inits, loader, shipped, modules, unread):
    elves = {}
    for name in sorted(set(files)):
        try:
            elf = read_elf(name)
        except (OSError, ValueError, struct.error) as exc:
            unread.append("%s: %s" % (name, exc))
            continue
        if elf is not None:
            elves[name] = elf
    if not elves:
        return None
    found_here = {}
    for name, elf in elves.items():
        elf["located"] = {}
        for need in elf["needed"]:
            where = locate(need, elf, os.path.dirname(name), loader)
            elf["located"][need] = where
            if where[0]:
                found_here.setdefault(need, (where[0], "loaded by " + name))
    requires = None
    listed = []
    for name, elf in sorted(elves.items()):
        code = bool(elf["sass"] or elf["ptx"] or elf["loaded"])
        needs = {}
        for need, where in elf["located"].items():
            if where[0] is None and need in found_here:
                where = found_here[need]
            if where[0] is None and need in shipped:
                if requires is None:
                    requires = _requirements(path) | _imported(inits, modules)
                if shipped[need]["package"] in requires:
                    where = (shipped[need]["path"], "loaded by " + shipped[need]["package"])
            if code or where[0] is None:
                needs[need] = {"path": where[0], "how": where[1]}
                if where[0] is None and need in shipped:
                    needs[need]["shipped_by"] = shipped[need]
        if code or needs:
            listed.append(
                {
                    "path": name,
                    "sass": elf["sass"],
                    "kernelless": elf["kernelless"],
                    "ptx": elf["ptx"],
                    "relocatable": elf["relocatable"],
                    "fatbin_unread": elf["fatbin_unread"],
                    "loaded": elf["loaded"],
                    "needs": needs,
                }
            )
    if not listed:
        return None
    name, version = _name_version(path)
    return {
        "name": name,
        "version": version,
        "location": os.path.dirname(path),
        "shared_objects": len(elves),
        "files": listed[:FILES_WITHOUT_CODE_LISTED],
        "requires": sorted(_requirements(path)),
    }


def collect():
    started = time.time()
    unknown, unread = {}, []
    loader = {"cache": {}, "default": default_folders()}
    try:
        loader["cache"] = read_ld_cache()
    except (OSError, ValueError, struct.error) as exc:
        unknown["ld_cache"] = str(exc)
    driver, why = driver_cuda()
    if why:
        unknown["driver"] = why
    listed, shipped, modules = [], {}, {}
    for path in _distributions():
        try:
            all_files = installed_files(path)  # noqa: F821
            files = [f for f in all_files if shared_object(f)]
        except (OSError, ValueError) as exc:
            if getattr(exc, "errno", None) != errno.ENOENT:  # none: a Debian package's, dpkg's
                unread.append("%s: %s" % (path, exc))
            continue
        inits = _top_packages(path, all_files)
        listed.append((path, files, inits))
        for name in inits:
            modules.setdefault(os.path.basename(os.path.dirname(name)), _name_version(path)[0])
        for name in files:
            shipped.setdefault(
                os.path.basename(name), {"package": _name_version(path)[0], "path": name}
            )
    packages = []
    for path, files, inits in listed:
        found = _package(path, files, inits, loader, shipped, modules, unread)
        if found is not None:
            packages.append(found)
    return {
        "packages": packages,
        "driver": driver,
        "loader": {
            "ld_library_path": os.environ.get("LD_LIBRARY_PATH") or "",
            "cache_entries": len(loader["cache"]),
            "default": loader["default"],
        },
        "unread": unread[:20],
        "seconds": round(time.time() - started, 3),
        "unknown": unknown,
    }
