"""`jetson-env doctor --inventory`: wall time for 32 hosts and 8 hosts over 1 host.

Light hosts: 32 containers of the x86 test-host image with Debian's openssh-server added
(an image built once, keyed by the base image), each an sshd on its own loopback address
(127.0.0.10 ...), reached over SSH as fleets are: a key of the bench's own, host keys
checked against a known_hosts written from the containers' keys, Ansible's own SSH
settings (ControlPersist included), the hosts' venv Python as ansible_python_interpreter.
Times, in one run, each size in turn for every row and ROUNDS rounds (medians):

- the doctor with `--forks 32`: `--quick` (the light probes), `--check platform` (one
  probe: mostly the cost of reaching a host), and every check (--no-smoke: the light
  hosts have no torch, so the framework probes only fail to import it);
- `--check platform` with SSH multiplexing off (every run connects afresh);
- the engine alone on the same hosts: `ansible -m raw` running `python -c pass` (a
  connection and a Python start: the floor of any probe) and `ansible -m ping` (a module).

Also, at 32 hosts, where the CPU went: the seconds used by the command and its children
here (the controller: jetson-env, Ansible, ssh) and by the 32 containers (sshd, the
probes), from their cgroups. The hosts share this machine's cores with the controller, which a real
fleet's do not. Goal (issue 17): 32 hosts / 1 host <= 2.0. Asserts nothing.

    .venv/bin/python bench/fleet_scaling.py [--rounds 3]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from playbook_support import remove_host, start_host  # noqa: E402
from support.hosts import HOSTS as HOST_SPECS  # noqa: E402
from support.hosts import VENV, HostImage, free_port  # noqa: E402

HOSTS = 32
SIZES = (1, 8, HOSTS)
PYTHON = f"{VENV}/bin/python"
NO_MULTIPLEXING = {"ANSIBLE_SSH_ARGS": "-o ControlMaster=no"}


def doctor(*args: str, env: dict[str, str] | None = None):
    def command(group: str) -> list[str]:
        return [sys.executable, "-m", "jetson_env.cli", "doctor", "-i", "fleet.yml",
                "--limit", group, "--json", "--forks", str(HOSTS), *args]  # fmt: skip

    return command, env or {}


def engine(module: str, *args: str):
    def command(group: str) -> list[str]:
        return [str(Path(sys.executable).parent / "ansible"), group, "-i", "fleet.yml",
                "-m", module, *args, "--forks", str(HOSTS)]  # fmt: skip

    return command, {}


ROWS = {
    "doctor --quick": doctor("--quick"),
    "doctor --check platform": doctor("--check", "platform"),
    "doctor --no-smoke (every check)": doctor("--no-smoke"),
    "doctor --check platform, no SSH multiplexing": doctor(
        "--check", "platform", env=NO_MULTIPLEXING
    ),
    "ansible -m raw 'python -c pass'": engine("ansible.builtin.raw", "-a", f"{PYTHON} -c pass"),
    "ansible -m ping": engine("ansible.builtin.ping"),
}


def sshd_image() -> str:
    """The x86 test-host image with openssh-server, built once per base image."""
    base = HostImage(HOST_SPECS["x86-debian12"]).ensure()
    base_id = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", base],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    tag = f"jetson-env-bench-sshd:{base_id.split(':')[-1][:12]}"
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode:
        host = start_host("x86-debian12", "bench-sshd-build")
        try:
            install = ("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install "
                       "-y -qq --no-install-recommends openssh-server")  # fmt: skip
            host.exec(["sh", "-c", install])
            subprocess.run(["docker", "commit", host.container, tag], check=True,
                           capture_output=True)  # fmt: skip
        finally:
            remove_host(host)
    return tag


def cgroup_cpu_seconds(containers: list[str]) -> float:
    """CPU time used so far by the containers (cgroup v2 or v1), in seconds."""
    ids = subprocess.run(["docker", "inspect", "--format", "{{.Id}}", *containers],
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    total = 0.0
    for full in ids:
        v2 = [Path(f"/sys/fs/cgroup/system.slice/docker-{full}.scope/cpu.stat"),
              Path(f"/sys/fs/cgroup/docker/{full}/cpu.stat")]  # fmt: skip
        v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{full}/cpuacct.usage")
        found = next((path for path in v2 if path.exists()), None)
        if found:
            stat = dict(line.split() for line in found.read_text().splitlines())
            total += int(stat["usage_usec"]) / 1e6
        elif v1.exists():
            total += int(v1.read_text()) / 1e9
    return total


def timed(command: list[str], env: dict[str, str], work: Path) -> tuple[float, float]:
    """Wall seconds, and CPU seconds of the command and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=work, check=False,
                          env={**os.environ, "HOME": str(work), **env})  # fmt: skip
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # the hosts fail checks (no GPU); all must be reached
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr}{done.stdout[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, cpu


def start_hosts(work: Path) -> tuple[list, dict]:
    """The light hosts, each an sshd on 127.0.0.(10 + i):PORT; the inventory for them."""
    image = sshd_image()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / "key")],
                   check=True)  # fmt: skip
    public = (work / "key.pub").read_text().strip()
    port = free_port()
    hosts, known, names = [], [], [f"h{index:02d}" for index in range(HOSTS)]
    for index in range(HOSTS):
        address = f"127.0.0.{10 + index}"
        host = start_host("x86-debian12", f"bench-fleet-{index:02d}", image=image)
        hosts.append(host)
        host.exec(["sh", "-c", "mkdir -p /run/sshd /root/.ssh && ssh-keygen -A >/dev/null && "
                   f"echo '{public}' > /root/.ssh/authorized_keys"])  # fmt: skip
        subprocess.run(["docker", "exec", "--detach", host.container, "/usr/sbin/sshd", "-D",
                        "-o", f"ListenAddress={address}:{port}", "-o", "PasswordAuthentication=no"],
                       check=True)  # fmt: skip
        key = host.exec(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).stdout.split()[:2]
        known.append(f"[{address}]:{port} {' '.join(key)}")
    (work / "known_hosts").write_text("\n".join(known) + "\n")
    inventory = {
        "all": {
            "vars": {"ansible_user": "root", "ansible_port": port,
                     "ansible_python_interpreter": PYTHON,
                     "ansible_ssh_private_key_file": str(work / "key"),
                     "ansible_ssh_common_args": f"-o UserKnownHostsFile={work}/known_hosts"},
            "hosts": {name: {"ansible_host": f"127.0.0.{10 + index}"}
                      for index, name in enumerate(names)},
            "children": {f"first{size}": {"hosts": dict.fromkeys(names[:size])}
                         for size in SIZES},
        }
    }  # fmt: skip
    (work / "fleet.yml").write_text(yaml.safe_dump(inventory))
    return hosts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    work = Path(tempfile.mkdtemp(prefix="jetson-env-bench-fleet-"))
    hosts = []
    try:
        hosts = start_hosts(work)
        containers = [host.container for host in hosts]
        print(f"load average before: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
        warm, env = ROWS["doctor --check platform"]  # every host's key checked, the page cache
        timed(warm(f"first{HOSTS}"), env, work)
        walls = {row: {size: [] for size in SIZES} for row in ROWS}
        split = {row: [] for row in ROWS}  # (controller, hosts) CPU seconds at 32 hosts
        for _ in range(rounds):
            for size in SIZES:
                for row, (command, env) in ROWS.items():
                    hosts_before = cgroup_cpu_seconds(containers)
                    seconds, cpu = timed(command(f"first{size}"), env, work)
                    walls[row][size].append(seconds)
                    if size == HOSTS:
                        split[row].append((cpu, cgroup_cpu_seconds(containers) - hosts_before))
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        print(f"| run | 1 host | 8 hosts | {HOSTS} hosts | 8/1 | {HOSTS}/1 "
              f"| CPU s at {HOSTS}: controller | hosts |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        for row, by_size in walls.items():
            one, eight, all_ = (statistics.median(by_size[size]) for size in SIZES)
            controller = statistics.median(c for c, _ in split[row])
            on_hosts = statistics.median(h for _, h in split[row])
            print(f"| {row} | {one:.2f} s | {eight:.2f} s | {all_:.2f} s | {eight / one:.2f} "
                  f"| {all_ / one:.2f} | {controller:.1f} | {on_hosts:.1f} |")  # fmt: skip
        print(f"Goal: {HOSTS}/1 <= 2.0. {rounds} rounds, medians.")
    finally:
        for host in hosts:
            remove_host(host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
