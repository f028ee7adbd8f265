"""Compare `jetson-env doctor --no-smoke` with `python -m torch.utils.collect_env`.

collect_env is what people paste into PyTorch bug reports. Both run here, in one
run, on the same machine, against the same interpreter (and so the same torch);
each is timed over a few rounds (median wall time), and what each checks is
counted: collect_env's reported fields ("Name: value" lines), the doctor's
findings. Prints the ratios; asserts nothing.

    python bench/doctor_vs_collect_env.py --python /path/to/python-with-torch

jetson-env must be importable by the interpreter running this script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def timed(argv: list[str], rounds: int) -> tuple[float, str]:
    times, output = [], ""
    for _ in range(rounds):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        output = proc.stdout
        if not output:
            sys.exit(f"{' '.join(argv)} printed nothing (exit {proc.returncode}): {proc.stderr}")
    return statistics.median(times), output


def collect_env_fields(output: str) -> int:
    """Lines like 'PyTorch version: 2.13.0+cpu' (a reported fact, known or not).

    The "CPU:" block is `lscpu` pasted as is (flags, cache sizes, vulnerabilities);
    it is one command's dump, counted as one field. Package lines ("[pip3] numpy==...")
    count one each.
    """
    count, in_cpu = 0, False
    for line in output.splitlines():
        if line.startswith("CPU:"):
            in_cpu, count = True, count + 1
        elif in_cpu and not line.strip():
            in_cpu = False
        elif not in_cpu and (": " in line or line.startswith("[")):
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    collect_s, collect_out = timed([args.python, "-m", "torch.utils.collect_env"], args.rounds)
    doctor_argv = [sys.executable, "-m", "jetson_env.cli", "doctor", "--no-smoke", "--json",
                   "--python", args.python]  # fmt: skip
    doctor_s, doctor_out = timed(doctor_argv, args.rounds)
    report = json.loads(doctor_out)
    fields = collect_env_fields(collect_out)
    findings = len(report["findings"])
    checks = len({f["check"] for f in report["findings"]})

    print(f"interpreter: {args.python}  (median of {args.rounds} rounds)")
    print(f"torch.utils.collect_env : {collect_s:6.2f} s, {fields} fields reported")
    print(f"jetson-env doctor       : {doctor_s:6.2f} s, {findings} findings from {checks} checks,"
          f" {sum(1 for f in report['findings'] if f['remedy'])} with a remedy")  # fmt: skip
    print(f"wall-time ratio doctor/collect_env: {doctor_s / collect_s:.2f}")
    print(f"findings per collect_env field: {findings / fields:.2f}")


if __name__ == "__main__":
    main()
