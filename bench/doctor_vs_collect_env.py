"""Compare `jetson-env doctor --no-smoke` with `python -m torch.utils.collect_env`.

collect_env is what people paste into PyTorch bug reports. Both run here, in one
run, on the same machine, against the same interpreter (and so the same torch);
each is timed over a few rounds (median wall time), and what each checks is
counted two ways: facts read (collect_env's fields with a value; the non-null
values in the doctor's probe results) and verdicts (collect_env gives none; the
doctor's findings, each judged against the matrix, most with a remedy). Prints
the ratios; asserts nothing.

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


def doctor_facts(python: str) -> int:
    """Non-null scalar values in the probes' JSON (what the doctor read), run once, untimed."""
    from jetson_env import doctor
    from jetson_env.targets import LocalTarget, run_probe

    names = sorted({p for c in doctor.select(None, smoke=False) for p in c.probes})
    target = LocalTarget(python)

    def leaves(value) -> int:
        if isinstance(value, dict):
            return sum(leaves(v) for k, v in value.items() if k not in ("unknown", "seconds"))
        if isinstance(value, list):
            return sum(leaves(v) for v in value)
        return 0 if value in (None, "") else 1

    return sum(leaves(run_probe(target, name, 120).data or {}) for name in names)


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
    known = sum(1 for _, value in fields if value not in ("N/A", "None", "Could not collect", ""))
    findings = len(report["findings"])
    checks = len({f["check"] for f in report["findings"]})

    print(f"interpreter: {args.python}  (median of {args.rounds} rounds)")
    print(f"torch.utils.collect_env : {collect_s:6.2f} s, {len(fields)} fields reported")
    print(f"jetson-env doctor       : {doctor_s:6.2f} s, {findings} findings from {checks} checks,"
          f" {sum(1 for f in report['findings'] if f['remedy'])} with a remedy")  # fmt: skip
    facts = doctor_facts(args.python)
    print(f"facts read: collect_env {known} fields with a value, doctor {facts} probe values")
    print(f"wall-time ratio doctor/collect_env: {doctor_s / collect_s:.2f}")
    print(f"facts ratio doctor/collect_env: {facts / known:.2f}")
    print(f"verdicts: collect_env 0, doctor {findings}")


if __name__ == "__main__":
    main()
