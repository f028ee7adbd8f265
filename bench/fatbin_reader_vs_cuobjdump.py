"""The kernels probe's reader against cuobjdump and an exhaustive scan, over real shared
objects (issue 56: NVIDIA's cuFFT and cuFile wheels, unpacked by hand; not in the tests,
which download nothing at test time).

For each file: what cuobjdump --list-elf --list-ptx lists (the fatbin sections: what the
runtime registers at load), what read_elf reads (`sass`/`ptx`, and `loaded`: the fatbins
the library keeps in its data and loads itself) and its time, and an exhaustive scan that
reads the whole file for every fatbin container magic (0xBA55ED50) and walks each one: the
truth the bounded reader must equal. Prints one JSON object per file.

    .venv/bin/python bench/fatbin_reader_vs_cuobjdump.py --cuobjdump PATH FILE.so...
"""

import argparse
import json
import re
import struct
import subprocess
import time
from pathlib import Path

from jetson_env.probes import kernels


def cuobjdump(tool: str, path: str) -> dict:
    listed = subprocess.run(
        [tool, "--list-elf", "--list-ptx", path], capture_output=True, text=True
    ).stdout.split()
    pick = lambda ext: sorted({n.rsplit(".", 2)[-2] for n in listed if n.endswith(ext)})  # noqa: E731
    return {"elf": pick(".cubin"), "ptx": pick(".ptx")}


def exhaustive(path: str) -> dict:
    """Every container in the file (whole-file read), its entries' kinds and archs."""
    data = Path(path).read_bytes()
    kinds = {}
    containers = 0
    for match in re.finditer(re.escape(kernels.MAGIC_BYTES), data):
        at = match.start()
        _version, header_size, payload = struct.unpack_from("<HHQ", data, at + 4)
        if header_size != 16 or at + 16 + payload > len(data):
            continue
        containers += 1
        entry, end = at + 16, at + 16 + payload
        while entry + 64 <= end:
            kind, _v, size, body = struct.unpack_from("<HHIQ", data, entry)
            minor, major, arch = struct.unpack_from("<HHI", data, entry + 24)
            name = {1: "ptx", 2: "sass", 8: "ltoir"}.get(kind, f"kind{kind}")
            label = f"sm_{arch}" + (f" ({major}.{minor})" if kind == 1 else "")
            kinds.setdefault(name, {}).setdefault(label, 0)
            kinds[name][label] += 1
            if size < 64:
                break
            entry += size + body
    return {"containers": containers, "entries": kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuobjdump", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    for path in args.files:
        started = time.perf_counter()
        read = kernels.read_elf(path)
        seconds = time.perf_counter() - started
        keys = ("sass", "ptx", "fatbin_unread", "loaded")
        print(
            json.dumps(
                {
                    "file": path,
                    "cuobjdump": cuobjdump(args.cuobjdump, path),
                    "read_elf": {key: read[key] for key in keys},
                    "read_elf_seconds": round(seconds, 3),
                    "exhaustive": exhaustive(path),
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
