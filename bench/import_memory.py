"""What each import the doctor's framework process checks adds to one GPU convolution's
peak RSS: the floor under issue 55's RSS row.

Each case is a fresh process of the target interpreter, run from an empty folder: the
imports, then bench/doctor_vs_collect_env.py's tiny convolution; the peak RSS of its largest
process is sampled from /proc as that bench samples it. Interleaved rounds, medians. A module
that is not installed is said and left out of that case. Asserts nothing.

    python bench/import_memory.py --python /path/to/python-with-torch [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from doctor_vs_collect_env import CONVOLUTION, measured

# A context retained and a round trip through cuda-python's driver API, as the doctor's
# cuda_python probe does beside torch's context.
ROUND_TRIP = (
    "from cuda.bindings import driver\n"
    "driver.cuInit(0)\n"
    "_, device = driver.cuDeviceGet(0)\n"
    "_, context = driver.cuDevicePrimaryCtxRetain(device)\n"
    "driver.cuCtxSetCurrent(context)\n"
    "_, pointer = driver.cuMemAlloc(1024)\n"
    "driver.cuMemFree(pointer)\n"
)
CASES = {
    "nothing": (),
    "torchvision": ("torchvision",),
    "cuda.bindings.driver": ("cuda.bindings.driver",),
    "pycuda.driver": ("pycuda.driver",),
    "all three": ("torchvision", "cuda.bindings.driver", "pycuda.driver"),
}


def program(modules: tuple[str, ...], round_trip: bool = False) -> str:
    lines = ["import importlib"]
    for name in modules:
        lines.append(f"try:\n    importlib.import_module({name!r})\n"
                     f"except ImportError:\n    print('not installed: {name}')")  # fmt: skip
    if round_trip:
        lines.append(ROUND_TRIP)
    return "\n".join(lines) + "\n" + CONVOLUTION.replace("; ", "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the target interpreter (with torch)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    programs = {name: program(modules) for name, modules in CASES.items()}
    programs["all three + a round trip"] = program(CASES["all three"], round_trip=True)
    peaks: dict[str, list[float]] = {name: [] for name in programs}
    missing: set[str] = set()
    empty = tempfile.mkdtemp()
    for index in range(args.rounds):
        names = list(programs)
        for name in names[index % len(names) :] + names[: index % len(names)]:
            _, largest, _, output = measured([args.python, "-c", programs[name]], cwd=empty)
            peaks[name].append(largest)
            missing.update(line for line in output.splitlines() if line.startswith("not "))
    base = statistics.median(peaks["nothing"])
    print(f"one GPU convolution after importing ({args.rounds} rounds, medians):")
    print("| the convolution after importing | peak RSS MB | x the convolution |")
    print("|---|---|---|")
    for name, values in peaks.items():
        peak = statistics.median(values)
        print(f"| {name} | {peak:.0f} | {peak / base:.3f} |")
    for line in sorted(missing):
        print(line)


if __name__ == "__main__":
    main()
