"""The host memory that GPU work costs, step by step, against `python -m torch.utils.collect_env`.

Issue 14's goal, peak RSS <= 1.1x collect_env, is met by the doctor without the smoke but
not with it. This shows why: each step runs in a fresh process of the target interpreter
(import torch; + torch.cuda.is_available(); + a CUDA context; + elementwise ops, one
Linear, one Conv2d; + the smoke's own model, loaded from jetson_env/probes/smoke.py, with
and without cuDNN), in interleaved rounds (a rotating order), medians. Rows with
CUDA_MODULE_LOADING=LAZY and EAGER (the default of drivers of CUDA 11.7-12.1) for the
context and the smoke's model, and the model with MALLOC_ARENA_MAX=2; the variable is
unset for the others (this driver's default). Then the doctor with the smoke, alone and
with every check.

Two peaks per process. "Done": its VmHWM, read by itself when its work is done (with the
anonymous / file-backed split of its RSS then, from /proc/self/smaps_rollup; file-backed:
mapped libraries and files). "Until it ends": VmHWM sampled from /proc every 20 ms until
the process is gone, as bench/doctor_vs_collect_env.py measures the goal (its helper).
They differ where a process grows as it exits, as collect_env's does; the doctor kills its
probe process once the results are in, so it has no exit to pay and only the second is
shown. Both are divided by collect_env's peak until it ends. Prints a markdown table;
asserts nothing.

    python bench/gpu_memory_floor.py --python /path/to/python-with-torch --rounds 2

It needs a CUDA device that torch can use (it says so and exits where there is none), and
jetson-env importable by --doctor-python (default: the interpreter running this).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from functools import partial
from pathlib import Path

from doctor_vs_collect_env import measured

SMOKE = Path(__file__).resolve().parent.parent / "jetson_env" / "probes" / "smoke.py"
MARK = "@@memory "
REPORT = f"""
import json


def fields(path):
    with open(path) as handle:
        return {{words[0][:-1]: words[1] for words in map(str.split, handle)
                if len(words) > 1 and words[0].endswith(":")}}


status, rollup = fields("/proc/self/status"), fields("/proc/self/smaps_rollup")
print({MARK!r} + json.dumps({{"peak": int(status["VmHWM"]), "rss": int(rollup["Rss"]),
                             "anonymous": int(rollup["Anonymous"])}}))
"""
CONTEXT = "import torch\ntorch.zeros(1, device='cuda')\ntorch.cuda.synchronize()\n"
SMOKE_MODEL = f"""import runpy, torch
tiny_model = runpy.run_path({str(SMOKE)!r})["tiny_model"]
model = tiny_model(torch).eval().cuda()
with torch.no_grad():
    model(torch.randn(1, 3, 64, 64, device="cuda")).float().cpu()
"""
COLLECT_ENV = """import runpy, sys
sys.argv = ["collect_env"]
try:
    runpy.run_module("torch.utils.collect_env", run_name="__main__")
except SystemExit:
    pass
"""
# (step, environment, code run in a fresh process)
STEPS = [
    ("collect_env", "", COLLECT_ENV),
    ("import torch", "", "import torch\n"),
    ("+ torch.cuda.is_available()", "", "import torch\ntorch.cuda.is_available()\n"),
    ("+ a CUDA context", "", CONTEXT),
    ("+ a CUDA context", "CUDA_MODULE_LOADING=LAZY", CONTEXT),
    ("+ a CUDA context", "CUDA_MODULE_LOADING=EAGER", CONTEXT),
    ("+ elementwise ops only", "", "import torch\nx = torch.randn(1, 3, 64, 64, device='cuda')\n"
     "(x.relu() * 2 + 1).sum().item()\n"),
    ("+ one Linear", "", "import torch\nwith torch.no_grad():\n"
     "    torch.nn.Linear(16, 10).cuda()(torch.randn(1, 16, device='cuda')).cpu()\n"),
    ("+ one Conv2d (cuDNN)", "", "import torch\nwith torch.no_grad():\n"
     "    torch.nn.Conv2d(3, 8, 3, padding=1).cuda()"
     "(torch.randn(1, 3, 64, 64, device='cuda')).cpu()\n"),
    ("+ the smoke's model, cuDNN off", "",
     "import torch\ntorch.backends.cudnn.enabled = False\n" + SMOKE_MODEL),
    ("+ the smoke's model (cuDNN)", "", SMOKE_MODEL),
    ("+ the smoke's model (cuDNN)", "CUDA_MODULE_LOADING=LAZY", SMOKE_MODEL),
    ("+ the smoke's model (cuDNN)", "CUDA_MODULE_LOADING=EAGER", SMOKE_MODEL),
    ("+ the smoke's model (cuDNN)", "MALLOC_ARENA_MAX=2", SMOKE_MODEL),
]  # fmt: skip
PREFLIGHT = """import json, torch
cuda = torch.cuda.is_available()
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda,
                  "device": torch.cuda.get_device_name(0) if cuda else None}))
"""


def step_memory(python: str, environment: str, code: str) -> dict[str, float]:
    """The peaks (done, until it ends) and the split (MB) of a fresh process that ran `code`."""
    env = dict(os.environ)
    if environment:
        name, value = environment.split("=", 1)
        env[name] = value
    _, until_it_ends, _, output = measured([python, "-c", code + REPORT], env)
    line = next((x for x in output.splitlines() if x.startswith(MARK)), None)
    if line is None:
        sys.exit(f"this step printed no measurement (run it to see why):\n{code}")
    kb = json.loads(line[len(MARK) :])
    return {"done": kb["peak"] / 1024, "until it ends": until_it_ends,
            "anonymous": kb["anonymous"] / 1024,
            "file-backed": (kb["rss"] - kb["anonymous"]) / 1024}  # fmt: skip


def doctor_memory(argv: list[str]) -> dict[str, float]:
    """Peak RSS (MB) of the doctor's largest process: its probe process with the frameworks."""
    return {"until it ends": measured(argv)[1]}


def preflight(python: str) -> dict[str, str | None]:
    """torch's version and the GPU's name; exits with the reason where there is no GPU."""
    proc = subprocess.run([python, "-c", PREFLIGHT], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"{python} cannot import torch ({last}): pass an interpreter with torch "
                 "as --python")  # fmt: skip
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    if found["device"] is None:
        sys.exit(f"no CUDA device is available to torch {found['torch']} in {python}: this "
                 "bench measures what GPU work costs in host memory; run it on a machine "
                 "with an NVIDIA GPU (scripts/gpu-bench)")  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="target interpreter with torch")
    parser.add_argument("--doctor-python", default=sys.executable, help="runs jetson-env")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    os.environ.pop("CUDA_MODULE_LOADING", None)  # unset: the driver's default, unless a row sets it
    found = preflight(args.python)
    doctor = [args.doctor_python, "-m", "jetson_env.cli", "doctor", "--json",
              "--python", args.python]  # fmt: skip
    runs = {(name, environment): partial(step_memory, args.python, environment, code)
            for name, environment, code in STEPS}  # fmt: skip
    for name, argv in (("doctor --check smoke", [*doctor, "--check", "smoke"]), ("doctor", doctor)):
        runs[(name, "")] = partial(doctor_memory, argv)
    results: dict[tuple[str, str], list[dict[str, float]]] = {row: [] for row in runs}
    rows = list(runs)
    for round_index in range(args.rounds):
        shift = round_index % len(rows)
        for row in rows[shift:] + rows[:shift]:
            results[row].append(runs[row]())

    def median(row: tuple[str, str], key: str) -> float | None:
        values = [result[key] for result in results[row] if key in result]
        return statistics.median(values) if values else None

    base = median(("collect_env", ""), "until it ends")
    print(f"torch {found['torch']} (CUDA {found['cuda']}) on {found['device']}; "
          f"{args.rounds} interleaved rounds, medians; x: against collect_env's peak until "
          "it ends; peak RSS goal (issue 14): <= 1.1x")  # fmt: skip
    print()
    print("| step | environment | peak RSS MB, done | x | peak RSS MB, until it ends | x "
          "| anonymous MB | file-backed MB |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = []
        for key in ("done", "until it ends", "anonymous", "file-backed"):
            value = median(row, key)
            cells.append("" if value is None else f"{value:.0f}")
            if key in ("done", "until it ends"):
                cells.append("" if value is None else f"{value / base:.2f}")
        print(f"| {row[0]} | {row[1]} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
