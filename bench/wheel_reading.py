"""Reading a bundle's wheels for their device code (jetson_env.bundle.judging): one at a
time, as `jetson-env bundle` did before session 22, against judging.READ_WORKERS threads,
as it does now. The same readings either way (printed); ratios from one run, the order
alternated over rounds so the page cache serves both alike. Asserts nothing.

    jetson-env bundle B --x86            # a default x86 bundle: the CUDA torch, its nvidia wheels
    python bench/wheel_reading.py B [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jetson_env.bundle import judging


def one_at_a_time(wheels: list[Path]) -> list[dict]:
    return [judging.read_wheel(wheel) for wheel in wheels]


def in_threads(wheels: list[Path]) -> list[dict]:
    with ThreadPoolExecutor(judging.READ_WORKERS) as pool:
        return list(pool.map(judging.read_wheel, wheels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    wheels = sorted(args.bundle.glob("pip/*.whl"))
    ways = {"one at a time": one_at_a_time, f"{judging.READ_WORKERS} threads": in_threads}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    readings = {}
    for index in range(args.rounds):
        for name in list(ways)[:: 1 if index % 2 == 0 else -1]:
            start = time.perf_counter()
            readings[name] = ways[name](wheels)
            seconds[name].append(time.perf_counter() - start)
    size = sum(wheel.stat().st_size for wheel in wheels) / 2**20
    print(f"{len(wheels)} wheels, {size:.0f} MiB, {args.rounds} rounds, medians")
    for name, values in seconds.items():
        print(f"  {name}: {statistics.median(values):.1f} s")
    first, second = (statistics.median(v) for v in seconds.values())
    print(f"threads / one at a time: {second / first:.2f}; same readings: "
          f"{len(set(map(repr, readings.values()))) == 1}")  # fmt: skip


if __name__ == "__main__":
    main()
