"""Bundle creation and offline provisioning time.

1. `jetson-env bundle` for an x86 target (python_base and torch: the CPU torch 2.13.0 wheel
   from /opt/wheels with its dependencies from the index) into a new folder, twice: cold
   (the controller's bundle cache emptied: every file downloaded; pip's resolution kept
   unless --cold-resolve) and warm (a second new folder from the cache), with the sizes.
2. A fresh x86 test host with its network cut (docker --network none), provisioned from
   that bundle (jetson_env_bundle), then again (changed=0): wall times.

    .venv/bin/python bench/bundle_offline.py [--oldest] [--cold-resolve] [--forks N]

Prints one table; no test asserts on it.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from playbook_support import (  # noqa: E402
    OFFLINE_VARS,
    TORCH_WHEEL_X86,
    remove_host,
    run_playbook,
    start_host,
    write_inventory,
)
from support.ansible_envs import ANSIBLE_ENDS  # noqa: E402

from jetson_env import bundle  # noqa: E402


def make_bundle(directory: Path, jobs: str) -> tuple[float, dict]:
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "jetson_env.cli",
            "bundle",
            str(directory),
            "--x86",
            "--python-version",
            "3.11",
            "--glibc",
            "2.36",
            "--roles",
            "python_base,torch",
            "--file",
            f"torch={TORCH_WHEEL_X86}",
            "--forks",
            jobs,
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bundle failed:\n{proc.stderr}")
    return time.monotonic() - start, json.loads(proc.stdout)


def main() -> int:
    args = sys.argv[1:]
    jobs = args[args.index("--forks") + 1] if "--forks" in args else "4"
    ansible = ANSIBLE_ENDS["oldest" if "--oldest" in args else "newest"].ensure()
    work = Path(tempfile.mkdtemp(prefix="jetson-env-bench-bundle-"))
    shutil.rmtree(bundle.CACHE / "files", ignore_errors=True)
    if "--cold-resolve" in args:
        shutil.rmtree(bundle.CACHE / "resolve", ignore_errors=True)
    cold_s, data = make_bundle(work / "cold", jobs)
    warm_s, _ = make_bundle(work / "warm", jobs)

    host = start_host("x86-debian12", "bench-bundle-x86", network="none")
    try:
        inventory = write_inventory(
            work / "inventory.yml",
            {"x86": {"ansible_host": host.container}},
            {**OFFLINE_VARS, "torch_lock_file": str(work / "lock.yml")},
        )
        extra = {"jetson_env_bundle": str(work / "cold")}
        first = run_playbook(ansible, inventory, extra_vars=extra)
        second = run_playbook(ansible, inventory, extra_vars=extra)
    finally:
        remove_host(host)
    if first.rc != 0 or second.rc != 0:
        print(first.messages() or first.stderr, second.messages(), file=sys.stderr)
        return 1
    files = len(json.loads((work / "cold" / "manifest.json").read_text())["artifacts"])
    print(
        f"bundle, cold (downloads)   {cold_s:7.1f} s  {files} files, "
        f"{data['total_bytes'] / 2**20:.0f} MiB, --forks {jobs}"
    )
    print(f"bundle, warm (cache)       {warm_s:7.1f} s")
    print(f"offline provisioning       {first.wall_s:7.1f} s  changed={first.changed('x86')}")
    print(f"offline second run         {second.wall_s:7.1f} s  changed={second.changed('x86')}")
    print(f"ansible                    {ansible.versions}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if second.changed("x86") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
