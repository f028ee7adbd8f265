"""Second-run cost of playbooks/jetson.yml on a fresh x86 test host.

Runs the playbook twice against a new container from the x86 test-host image (torch:
the CPU wheel from /opt/wheels; TensorRT: the stand-in tarball; torchvision: the
fixture source archive) and prints the wall time of the second run divided by the
first, and the second run's changed count. Goal: changed=0 and a ratio <= 0.10 (issue 38).

    .venv/bin/python bench/playbook_idempotence.py [--oldest]
"""

import sys
import tempfile
from pathlib import Path

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
    finally:
        remove_host(host)
    ratio = second.wall_s / first.wall_s
    changed = second.changed("x86")
    print(f"first run     {first.wall_s:7.1f} s  changed={first.changed('x86')}")
    print(f"second run    {second.wall_s:7.1f} s  changed={changed}")
    print(f"ratio         {ratio:7.3f}  (goal <= {GOAL}, changed=0)")
    print(f"ansible       {ansible.versions}")
    return 0 if changed == 0 and ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
