"""Time the kernels probe over a Python environment: what it reads against what is there.

The probe (jetson_env/probes/kernels.py) reads every shared object of the interpreter's
distributions by seeking: ELF and section headers, each fatbin container's and entry's
header, the dynamic section. This runs it the way the doctor does (the launcher, in the
target interpreter), `--rounds` times, and prints the median of the probe's own seconds
and of the whole launch, the shared objects and their size on disk, how many carry device
code, and the packages with their architectures. Asserts nothing.

    python bench/kernels_probe.py --python /opt/torch/.venv/bin/python3 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from jetson_env.probing import run_probes
from jetson_env.targets import LocalTarget


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the environment's interpreter")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    probe_seconds, launch_seconds, data = [], [], {}
    for _ in range(args.rounds):
        started = time.monotonic()
        result = run_probes(LocalTarget(args.python), ["kernels"], {"kernels": 600})["kernels"]
        launch_seconds.append(time.monotonic() - started)
        if not result.ok:
            raise SystemExit(f"the probe failed: {result.error}\n{result.stderr}")
        data = result.data
        probe_seconds.append(data["seconds"])
    code_files = [f for p in data["packages"] for f in p["files"] if f["sass"] or f["ptx"]]
    shared = sum(p["shared_objects"] for p in data["packages"])
    size = sum(os.path.getsize(f["path"]) for f in code_files if os.path.exists(f["path"]))
    print(f"python: {args.python}, {args.rounds} rounds")
    print(f"probe seconds (median, in the probe): {statistics.median(probe_seconds):.3f}")
    print(f"launch seconds (median, interpreter start included): "
          f"{statistics.median(launch_seconds):.3f}")  # fmt: skip
    print(f"packages listed: {len(data['packages'])}; their ELF shared objects: {shared}; "
          f"with device code: {len(code_files)}, {size / 2**30:.2f} GiB on disk")  # fmt: skip
    print(f"driver CUDA: {data['driver']}; ld.so.cache entries: {data['loader']['cache_entries']}")
    for package in data["packages"]:
        sass = sorted({a for f in package["files"] for a in f["sass"]},
                      key=lambda a: int("".join(c for c in a if c.isdigit())))  # fmt: skip
        ptx = sorted({f"{p['arch']}@{p['version']}" for f in package["files"] for p in f["ptx"]})
        missing = sorted({n for f in package["files"] for n, w in f["needs"].items()
                          if not w["path"]})  # fmt: skip
        print(f"  {package['name']} {package['version']}: SASS {' '.join(sass) or '-'}; "
              f"PTX {' '.join(ptx) or '-'}" + (f"; not found: {' '.join(missing)}"
                                               if missing else ""))  # fmt: skip
    for line in data["unread"]:
        print(f"  unread: {line}")


if __name__ == "__main__":
    main()
