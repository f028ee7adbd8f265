"""Compare `jetson-env doctor` (with smoke, --no-smoke, --quick) with
`python -m torch.utils.collect_env`, a bare `import torch` and one convolution on the GPU:
wall time and peak memory, side by side in one run.

collect_env is what people paste into PyTorch bug reports. All run here, on the
same machine, against the same interpreter (and so the same torch), in interleaved
rounds (each round runs every command once, in a rotating order, so that a busy
moment hits them alike); each is summarised by its median wall time. Memory is
sampled from /proc every 20 ms while a command runs: the peak RSS of its largest
process (VmHWM: exact for every process seen alive) and the peak sum over all its
processes at one moment (what a 4 GB Nano must hold). What each checks is counted
too: facts read (collect_env's fields with a value; the non-null values in the
doctor's probe results) and verdicts (collect_env gives none). Prints the ratios and
the goals of issue 55: the doctor without the smoke against a bare `import torch` (its
floor: it must import torch), with the smoke and --quick against collect_env, and the
doctor's peak RSS against one convolution's on the GPU (what the smoke must at least
hold; with --gpu), and against the same convolution after importing what the doctor checks in
that one process (torchvision, cuda-python, pycuda where installed): the floor of a doctor
that checks them in the target's Python. Every command runs from an empty folder. Asserts
nothing.

    python bench/doctor_vs_collect_env.py --python /path/to/python-with-torch [--gpu]

The doctor runs as the user types it: the `jetson-env` script beside --doctor-python (its
venv's bin/), else `--doctor-python -m jetson_env` (the same entry: the head start, then the
command line); jetson-env must be installed for --doctor-python (default: the interpreter
running this).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

SAMPLE_SECONDS = 0.02
# issue 55: (command, against, goal), wall time
GOALS = (
    ("doctor --no-smoke", "import torch", 1.05),
    ("doctor", "collect_env", 0.85),
    ("doctor --quick", "collect_env", 0.10),
)
RSS_GOAL = ("doctor", "one GPU convolution", 1.05)  # peak RSS of the largest process
# One convolution on the GPU (a CUDA context and cuDNN): the least the smoke holds.
CONVOLUTION = (
    "import torch; torch.nn.Conv2d(3, 8, 3).cuda()(torch.zeros(1, 3, 32, 32, device='cuda'))"
    "; torch.cuda.synchronize()"
)
# The same convolution after loading what the doctor's one framework process must load to check
# them in the target's Python, where installed, as it loads them: torchvision's C++ ops alone
# (torch.ops.load_library of its _C, not the Python package: jetson_env/probes/torch.py),
# cuda-python's driver and runtime bindings, pycuda's driver. The floor of any doctor that checks
# them without a second process holding torch.
FLOOR = (
    "import glob, importlib, importlib.machinery, importlib.util, os\n"
    "import torch\n"
    "spec = importlib.util.find_spec('torchvision')\n"
    "if spec is not None:\n"
    "    folder = next(iter(spec.submodule_search_locations))\n"
    "    for suffix in importlib.machinery.EXTENSION_SUFFIXES:\n"
    "        for library in glob.glob(os.path.join(folder, '_C' + suffix)):\n"
    "            torch.ops.load_library(library)\n"
    "for name in ('cuda.bindings.driver', 'cuda.bindings.runtime', 'pycuda.driver'):\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except ImportError:\n"
    "        pass\n" + CONVOLUTION.replace("; ", "\n")
)
# Everything the doctor's framework process must do on a GPU host without TensorRT, written
# plainly after those imports: the smoke's model (jetson_env/probes/smoke.py's tiny net: two
# convolutions, BatchNorm, a Linear) run on the GPU, torchvision's nms on CUDA (the torchvision
# check with the smoke), and cuda-python's round trip through the primary context with its
# runtime bindings imported (jetson_env/probes/cuda_python.py). The doctor's peak RSS against
# this is what its probing costs beyond the work itself.
WORK = FLOOR + (
    "\nimport ctypes\n"
    "import torch.nn as nn\n"
    "model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),\n"
    "    nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),\n"
    "    nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(16, 10)).eval().cuda()\n"
    "with torch.no_grad():\n"
    "    for _ in range(30):\n"
    "        model(torch.randn(1, 3, 64, 64, device='cuda'))\n"
    "torch.cuda.synchronize()\n"
    "try:\n"
    "    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0]], device='cuda')\n"
    "    torch.ops.torchvision.nms(boxes, torch.tensor([0.9, 0.8], device='cuda'), 0.5)\n"
    "except (AttributeError, RuntimeError):\n"
    "    pass\n"
    "try:\n"
    "    from cuda.bindings import driver, runtime\n"
    "except ImportError:\n"
    "    driver = None\n"
    "if driver is not None:\n"
    "    driver.cuInit(0)\n"
    "    runtime.cudaRuntimeGetVersion()\n"
    "    _, device = driver.cuDeviceGet(0)\n"
    "    _, context = driver.cuDevicePrimaryCtxRetain(device)\n"
    "    driver.cuCtxSetCurrent(context)\n"
    "    host = (ctypes.c_float * 16)(*range(16))\n"
    "    _, memory = driver.cuMemAlloc(64)\n"
    "    driver.cuMemcpyHtoD(memory, ctypes.addressof(host), 64)\n"
    "    driver.cuMemFree(memory)\n"
)


@dataclass
class Runs:
    seconds: list[float] = field(default_factory=list)
    largest_mb: list[float] = field(default_factory=list)  # peak RSS of its largest process
    total_mb: list[float] = field(default_factory=list)  # peak RSS of all its processes at once
    output: str = ""

    def median(self, values: list[float]) -> float:
        return statistics.median(values)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in kB; (0, 0) for a process that is gone."""
    values = {"VmRSS:": 0, "VmHWM:": 0}
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                key = line.split(None, 1)[0]
                if key in values:
                    values[key] = int(line.split()[1])
    except OSError:
        pass
    return values["VmRSS:"], values["VmHWM:"]


def measured(
    argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None
) -> tuple[float, float, float, str]:
    """Wall seconds, peak RSS of the largest process and of all processes (MB), stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd
    )
    peaks = {"largest": 0, "total": 0}

    def sample() -> None:
        while proc.poll() is None:
            rows = [memory_kb(pid) for pid in descendants(proc.pid)]
            peaks["total"] = max(peaks["total"], sum(rss for rss, _ in rows))
            peaks["largest"] = max([peaks["largest"], *(hwm for _, hwm in rows)])
            time.sleep(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = proc.communicate()[0]
    seconds = time.perf_counter() - start
    sampler.join()
    if not output and proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} printed nothing (exit {proc.returncode})")
    return seconds, peaks["largest"] / 1024, peaks["total"] / 1024, output


def collect_env_fields(output: str) -> list[tuple[str, str]]:
    """("PyTorch version", "2.13.0+cpu") pairs: each a reported fact, known or not.

    The "CPU:" block is `lscpu` pasted as is (flags, cache sizes, vulnerabilities);
    it is one command's dump, counted as one field. Package lines ("[pip3] numpy==...")
    count one each.
    """
    fields, in_cpu = [], False
    for line in output.splitlines():
        if line.startswith("CPU:"):
            in_cpu = True
            fields.append(("CPU", "lscpu"))
        elif in_cpu and not line.strip():
            in_cpu = False
        elif not in_cpu and line.startswith("["):
            fields.append((line, line))
        elif not in_cpu and ": " in line:
            name, value = line.split(": ", 1)
            fields.append((name, value.strip()))
    return fields


def leaves(value) -> int:
    """Non-null scalar values in a probe's JSON (what the doctor read)."""
    if isinstance(value, dict):
        return sum(leaves(v) for k, v in value.items() if k not in ("unknown", "seconds"))
    if isinstance(value, list):
        return sum(leaves(v) for v in value)
    return 0 if value in (None, "") else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="target interpreter with torch")
    parser.add_argument("--doctor-python", default=sys.executable, help="runs jetson-env")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gpu", action="store_true", help="also one convolution on the GPU")
    args = parser.parse_args()
    args.python, args.doctor_python = (os.path.abspath(p) if os.sep in p else shutil.which(p) or p
                                       for p in (args.python, args.doctor_python))  # fmt: skip

    script = os.path.join(os.path.dirname(args.doctor_python), "jetson-env")
    entry = [script] if os.access(script, os.X_OK) else [args.doctor_python, "-m", "jetson_env"]
    doctor = [*entry, "doctor", "--json", "--python", args.python]
    commands = {
        "collect_env": [args.python, "-m", "torch.utils.collect_env"],
        "import torch": [args.python, "-c", "import torch"],
        # The same import without the interpreter's teardown at exit (torch's atexit and
        # destructors: 0.8 s of 4.4 on an H200, and most of its spread), which the doctor's
        # probe process, killed once its records are in, never runs.
        "import torch, _exit": [args.python, "-c", "import os, torch; os._exit(0)"],
        "doctor": doctor,
        "doctor --no-smoke": [*doctor, "--no-smoke"],
        "doctor --quick": [*doctor, "--quick"],
    }
    if args.gpu:
        commands["one GPU convolution"] = [args.python, "-c", CONVOLUTION]
        commands["the same + imports"] = [args.python, "-c", FLOOR]
        commands["the doctor's own work"] = [args.python, "-c", WORK]
    runs = {name: Runs() for name in commands}
    names = list(commands)
    empty = tempfile.mkdtemp(prefix="doctor-bench-")  # every command from an empty folder
    for round_index in range(args.rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        for name in order:
            seconds, largest, total, output = measured(commands[name], cwd=empty)
            run = runs[name]
            run.seconds.append(seconds)
            run.largest_mb.append(largest)
            run.total_mb.append(total)
            run.output = output

    base = runs["collect_env"]
    print(f"target interpreter: {args.python}; {args.rounds} interleaved rounds, medians")
    print(f"{'command':<20} {'wall s':>8} {'min-max s':>11} {'largest MB':>11} {'all MB':>8}"
          f" {'time x':>7} {'largest x':>10} {'all x':>6}   (x: against collect_env)")  # fmt: skip
    for name, run in runs.items():
        seconds, largest, total = (statistics.median(v) for v in
                                   (run.seconds, run.largest_mb, run.total_mb))  # fmt: skip
        ratio = seconds / statistics.median(base.seconds)
        spread = f"{min(run.seconds):.2f}-{max(run.seconds):.2f}"
        print(f"{name:<20} {seconds:>8.2f} {spread:>11} {largest:>11.0f} {total:>8.0f}"
              f" {ratio:>7.2f} {largest / statistics.median(base.largest_mb):>10.2f}"
              f" {total / statistics.median(base.total_mb):>6.2f}")  # fmt: skip
    print("ratios (issue 55):")
    for name, against, goal in GOALS:
        ratio = statistics.median(runs[name].seconds) / statistics.median(runs[against].seconds)
        print(f"  {name} / {against}: {ratio:.2f}  (goal <= {goal:g}: "
              f"{'met' if ratio <= goal else 'NOT met'})")  # fmt: skip
    no_exit = statistics.median(runs["import torch, _exit"].seconds)
    print(f"  doctor --no-smoke / import torch without its teardown at exit: "
          f"{statistics.median(runs['doctor --no-smoke'].seconds) / no_exit:.2f}  (no goal: "
          f"what the doctor adds to the import itself)")  # fmt: skip
    name, against, goal = RSS_GOAL
    if against in runs:
        ratio = statistics.median(runs[name].largest_mb) / statistics.median(
            runs[against].largest_mb
        )
        print(f"  peak RSS {name} / {against}: {ratio:.2f}  (goal <= {goal:g}: "
              f"{'met' if ratio <= goal else 'NOT met'})")  # fmt: skip
        floor = statistics.median(runs["the same + imports"].largest_mb)
        print(
            f"  peak RSS {name} / the same + imports (torchvision's ops, cuda-python, pycuda where"
            f" installed): {statistics.median(runs[name].largest_mb) / floor:.2f}; that floor"
            f" / {against}: {floor / statistics.median(runs[against].largest_mb):.2f}"
        )
        work = statistics.median(runs["the doctor's own work"].largest_mb)
        doctor_mb = statistics.median(runs[name].largest_mb)
        print(
            f"  peak RSS {name} / the doctor's own work (the smoke's model, nms on CUDA,"
            f" cuda-python's round trip, plainly): {doctor_mb / work:.2f};"
            f" that work / {against}: {work / statistics.median(runs[against].largest_mb):.2f}"
        )
    report = json.loads(runs["doctor --no-smoke"].output)
    fields = collect_env_fields(base.output)
    known = sum(1 for _, value in fields if value not in ("N/A", "None", "Could not collect", ""))
    full = json.loads(runs["doctor"].output)
    facts = sum(leaves(finding) for finding in [full.get("platform"), full.get("smoke")])
    print(f"facts read: collect_env {known} of {len(fields)} fields with a value; doctor "
          f"{len(report['findings'])} findings from "
          f"{len({f['check'] for f in report['findings']})} checks "
          f"({sum(1 for f in report['findings'] if f['remedy'])} with a remedy), "
          f"{facts} platform and smoke values")  # fmt: skip
    for name in ("doctor", "doctor --no-smoke", "doctor --quick"):
        last = json.loads(runs[name].output)
        seconds = {probe: run["seconds"] for probe, run in last["probes"].items()}
        print(f"{name}: {last['counts']}; probe seconds (last round): {seconds}")


if __name__ == "__main__":
    main()
