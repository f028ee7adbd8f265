"""`jetson-env doctor --inventory`: wall time for 32 hosts and 8 hosts over 1 host.

Starts 32 light hosts, containers of the x86 test-host image (`sleep` and nothing
else; Ansible reaches them with community.docker's connection, their venv's Python as
the interpreter), then times on 1, 8 and 32 of them, in one run (each size in turn for
every row, so that the machine's load drifts alike for all rows):

- the doctor with `--forks 32`, `--quick` (the seven light probes per host) and
  `--check platform` (one probe: mostly Ansible's own cost), as it runs (Ansible's
  pipelining on) and with ANSIBLE_PIPELINING=false (Ansible's default);
- `--check platform` with Ansible's default forks (5), and with an ansible.cfg that sets
  `internal_poll_interval = 0.01` (Ansible's main process checks its workers every
  0.001 s by default; an ini setting only, no environment variable);
- `ansible -m ping` on the same hosts with and without pipelining: the engine's own
  scaling here.

Prints each time, the ratios and the load average before and after. Goal: 32 hosts /
1 host <= 2.0.

    .venv/bin/python bench/fleet_scaling.py
"""

import os
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
NO_PIPELINING = {"ANSIBLE_PIPELINING": "false"}
SLOWER_POLL = "[defaults]\ninternal_poll_interval = 0.01\n"


def doctor(args: list[str], env: dict[str, str] | None = None, forks: int | None = HOSTS):
    def command(inventory: Path, group: str) -> list[str]:
        return [sys.executable, "-m", "jetson_env.cli", "doctor", "--inventory", str(inventory),
                "--limit", group, "--json", *(["--forks", str(forks)] if forks else []),
                *args]  # fmt: skip

    return command, env or {}


def ping(env: dict[str, str] | None = None):
    """The engine alone: ansible -m ping on the same hosts, same forks (no probes)."""

    def command(inventory: Path, group: str) -> list[str]:
        return [str(Path(sys.executable).parent / "ansible"), group, "-i", str(inventory),
                "-m", "ansible.builtin.ping", "--forks", str(HOSTS)]  # fmt: skip

    return command, env or {}


ROWS = {
    "doctor --quick": doctor(["--quick"]),
    "doctor --check platform": doctor(["--check", "platform"]),
    "doctor --quick, no pipelining": doctor(["--quick"], NO_PIPELINING),
    "doctor --check platform, no pipelining": doctor(["--check", "platform"], NO_PIPELINING),
    "doctor --check platform, forks 5": doctor(["--check", "platform"], forks=None),
    "doctor --check platform, poll 0.01 s": doctor(
        ["--check", "platform"], {"ANSIBLE_CONFIG": "slower-poll.cfg"}
    ),
    "ansible -m ping, pipelining": ping({"ANSIBLE_PIPELINING": "true"}),
    "ansible -m ping (Ansible's defaults)": ping(),
}


def timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False,
                          env={**os.environ, **env})  # fmt: skip
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):  # the hosts fail checks (no GPU); all must be reached
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr}{done.stdout[-2000:]}")
    return seconds


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
        (work / "slower-poll.cfg").write_text(SLOWER_POLL)
        print(f"load average before: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
        warm, env = ROWS["doctor --check platform"]  # Ansible's caches, the page cache
        timed(warm(path, "first1"), env, work)
        times: dict[str, dict[int, float]] = {row: {} for row in ROWS}
        for size in SIZES:
            for row, (command, env) in ROWS.items():
                times[row][size] = timed(command(path, f"first{size}"), env, work)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        print("| run | 1 host | 8 hosts | 32 hosts | 8/1 | 32/1 |")
        print("|---|---|---|---|---|---|")
        for row, by_size in times.items():
            one, eight, all_ = (by_size[size] for size in SIZES)
            print(f"| {row} | {one:.1f} s | {eight:.1f} s | {all_:.1f} s "
                  f"| {eight / one:.2f} | {all_ / one:.2f} |")  # fmt: skip
        print("Goal: 32/1 <= 2.0")
    finally:
        for host in hosts:
            remove_host(host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
