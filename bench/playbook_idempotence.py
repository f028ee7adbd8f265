"""Second-run cost of playbooks/jetson.yml on a fresh x86 test host, against Ansible's floor.

Runs the playbook twice against a new container from the x86 test-host image (torch:
the CPU wheel from /opt/wheels; TensorRT: the stand-in tarball; torchvision: the
fixture source archive) and prints the wall time of the second run divided by the
first, and the second run's changed count. Goal: changed=0 and a ratio <= 0.10 (issues
38, 55). Then Ansible's own floor for that run (issue 55): a play of the same host with
as many tasks as the second run had, every one skipped (`when: false`), and the second
run against it; and where the second run's time went (its slowest tasks, the json
callback's durations).

    .venv/bin/python bench/playbook_idempotence.py [--oldest]
"""

import datetime
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from playbook_support import (  # noqa: E402
    remove_host,
    run_playbook,
    start_host,
    vars_for_test_hosts,
    write_inventory,
)
from support.ansible_envs import ANSIBLE_ENDS  # noqa: E402
from support.standins import build_tensorrt_tarball  # noqa: E402

GOAL = 0.10
SLOWEST = 12


def floor_playbook(path: Path, tasks: int) -> Path:
    """A play of every host with `tasks` tasks that all skip: what Ansible itself costs for a
    run of that many tasks that does nothing."""
    play = {
        "name": "Floor: every task skipped",
        "hosts": "all",
        "gather_facts": False,
        "become": True,
        "tasks": [
            {"name": f"skipped {n}", "ansible.builtin.debug": {"msg": "x"}, "when": False}
            for n in range(tasks)
        ],
    }
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return path


def seconds(task: dict) -> float:
    span = task["task"].get("duration", {})
    if "start" not in span or "end" not in span:
        return 0.0
    start, end = (datetime.datetime.fromisoformat(span[k].rstrip("Z")) for k in ("start", "end"))
    return (end - start).total_seconds()


def main() -> int:
    ansible = ANSIBLE_ENDS["oldest" if "--oldest" in sys.argv[1:] else "newest"].ensure()
    work = Path(tempfile.mkdtemp(prefix="jetson-env-bench-"))
    host = start_host("x86-debian12", "bench-x86")
    try:
        hosts = {
            "x86": {
                "ansible_host": host.container,
                "tensorrt_tarball": str(build_tensorrt_tarball("10.3.0", "cp311", work / "trt")),
            }
        }
        common = vars_for_test_hosts(work)
        inventory = write_inventory(work / "inventory.yml", hosts, common)
        first = run_playbook(ansible, inventory)
        if first.rc != 0:
            print(f"first run failed:\n{first.messages() or first.stderr}", file=sys.stderr)
            return 1
        second = run_playbook(ansible, inventory)
        if second.rc != 0:
            print(f"second run failed:\n{second.messages() or second.stderr}", file=sys.stderr)
            return 1
        tasks = second.tasks()
        floor = run_playbook(
            ansible, inventory, playbook=floor_playbook(work / "floor.yml", len(tasks))
        )
        if floor.rc != 0:
            print(f"floor run failed:\n{floor.stderr}", file=sys.stderr)
            return 1
    finally:
        remove_host(host)
    ratio = second.wall_s / first.wall_s
    changed = second.changed("x86")
    skipped = sum(1 for task in tasks if task["hosts"].get("x86", {}).get("skipped"))
    print(f"first run     {first.wall_s:7.1f} s  changed={first.changed('x86')}")
    summed = sum(map(seconds, tasks))
    print(f"second run    {second.wall_s:7.1f} s  changed={changed}  "
          f"{len(tasks)} tasks ({skipped} skipped), {summed:.1f} s summed")  # fmt: skip
    print(f"floor         {floor.wall_s:7.1f} s  {len(tasks)} tasks, every one skipped")
    print(f"second/first  {ratio:7.3f}  (goal <= {GOAL}, changed=0)")
    print(f"second/floor  {second.wall_s / floor.wall_s:7.2f}")
    print(f"floor/first   {floor.wall_s / first.wall_s:7.3f}  (no run of as many tasks is faster)")
    print(f"ansible       {ansible.versions}")
    ran = [t["task"]["name"] for t in tasks if not t["hosts"].get("x86", {}).get("skipped")]
    asked = [name for name in ran if "Install with the target Python's pip" in name]
    print(f"pip asked     {len(asked)} times in the second run {asked}")
    print("second run's slowest tasks:")
    for task in sorted(tasks, key=seconds, reverse=True)[:SLOWEST]:
        status = "skipped" if task["hosts"].get("x86", {}).get("skipped") else "ran"
        print(f"  {seconds(task):5.2f} s  {status:<7}  {task['task']['name']}")
    return 0 if changed == 0 and ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
