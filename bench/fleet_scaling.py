"""`jetson-env doctor --inventory`: wall time for 32 hosts and 8 hosts over 1 host.

Starts 32 light hosts, containers of the x86 test-host image (`sleep` and nothing
else; Ansible reaches them with community.docker's connection, their venv's Python as
the interpreter), then times the doctor on 1, 8 and 32 of them with `--forks 32`, in
two modes: `--quick` (the seven light probes per host) and `--check platform` (one
probe: mostly Ansible's own cost), and `ansible -m ping` on the same hosts for the
engine's own scaling here. Prints each time and the ratios. Goal: 32 hosts / 1 host
<= 2.0.

    .venv/bin/python bench/fleet_scaling.py
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from playbook_support import remove_host, start_host  # noqa: E402
from support.hosts import VENV  # noqa: E402

HOSTS = 32
SIZES = (1, 8, 32)
MODES = {"--quick": ["--quick"], "--check platform": ["--check", "platform"]}


def doctor(inventory: Path, group: str, args: list[str]) -> float:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "doctor", "--inventory", str(inventory),
         "--limit", group, "--forks", str(HOSTS), "--json", *args],
        capture_output=True, text=True, cwd=inventory.parent, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):  # the hosts fail checks (no GPU); all must be reached
        raise SystemExit(f"doctor exited {done.returncode}: {done.stderr}{done.stdout[-2000:]}")
    return seconds


def ping(inventory: Path, group: str) -> float:
    """The engine alone: ansible -m ping on the same hosts, same forks (no probes)."""
    ansible = Path(sys.executable).parent / "ansible"
    started = time.monotonic()
    subprocess.run(
        [str(ansible), group, "-i", str(inventory), "-m", "ansible.builtin.ping",
         "--forks", str(HOSTS)],
        capture_output=True, text=True, cwd=inventory.parent, check=True,
    )  # fmt: skip
    return time.monotonic() - started


def report(mode: str, times: dict[int, float]) -> None:
    figures = ", ".join(f"{size} hosts {times[size]:.1f} s" for size in SIZES)
    print(f"{mode}: {figures}; 8/1 = {times[8] / times[1]:.2f}, "
          f"32/1 = {times[32] / times[1]:.2f} (goal <= 2.0)")  # fmt: skip


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="jetson-env-bench-fleet-"))
    hosts = []
    try:
        for index in range(HOSTS):
            hosts.append(start_host("x86-debian12", f"bench-fleet-{index:02d}"))
        names = [f"h{index:02d}" for index in range(HOSTS)]
        inventory = {
            "all": {
                "vars": {"ansible_connection": "community.docker.docker",
                         "ansible_python_interpreter": f"{VENV}/bin/python"},
                "hosts": {name: {"ansible_host": host.container}
                          for name, host in zip(names, hosts, strict=True)},
                "children": {f"first{size}": {"hosts": dict.fromkeys(names[:size])}
                             for size in SIZES},
            }
        }  # fmt: skip
        path = work / "fleet.yml"
        path.write_text(yaml.safe_dump(inventory))
        doctor(path, "first1", ["--check", "platform"])  # warm: Ansible's caches, page cache
        for mode, args in MODES.items():
            report(mode, {size: doctor(path, f"first{size}", args) for size in SIZES})
        report("ansible -m ping", {size: ping(path, f"first{size}") for size in SIZES})
    finally:
        for host in hosts:
            remove_host(host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
