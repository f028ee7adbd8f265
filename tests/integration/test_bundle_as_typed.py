"""Issue 59, item 7: `jetson-env bundle` as a user types it (the console script from an
unrelated folder, its output in a pipe as a CI log gets it): how much it will fetch is said
before the first byte, the progress is a line every few seconds (not one per file), and the
next steps (check it, provision from it) are printed whole and run as printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

JETSON_ENV = str(Path(sys.executable).with_name("jetson-env"))  # the console script
UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
SIZE = r"(\d+(?:\.\d+)?) (B|KiB|MiB|GiB)"


def in_bytes(number: str, unit: str) -> float:
    return float(number) * UNITS[unit]


def test_bundle_says_its_size_before_and_the_next_step_after(tmp_path):
    """python_base for this x86 machine, with an empty cache (its .debs and wheels come from
    their sources): the line `to fetch: N file(s): X to download, Y from this machine` comes
    before the first `fetched` line and adds up (to the rounding of one decimal) to the
    manifest's sizes; `fetched` lines come at most every 5 s (and its last state); the last
    two lines of stdout are `bundle --verify DIR` (which passes, pasted) and `provision
    --bundle DIR`."""
    venv_bin = str(Path(JETSON_ENV).parent)  # README's venv, not activated: not on PATH
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {**os.environ, "PATH": path, "XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}
    start = time.monotonic()
    done = subprocess.run([JETSON_ENV, "bundle", "b", "--x86", "--roles", "python_base",
                           "--no-controller"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900, stdin=subprocess.DEVNULL)  # fmt: skip
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    total = sum(entry["size"] for entry in manifest["artifacts"].values())
    count = len(manifest["artifacts"])

    (preview,) = [line for line in lines if line.startswith("to fetch: ")]
    fetched = [line for line in lines if line.startswith("fetched ")]
    assert lines.index(preview) < lines.index(fetched[0]), done.stderr
    said = re.fullmatch(rf"to fetch: {count} file\(s\): {SIZE} to download(?:, {SIZE} from "
                        r"this machine \(the cache, local files\))?", preview)  # fmt: skip
    assert said, preview
    download = in_bytes(*said.group(1, 2))
    here = in_bytes(*said.group(3, 4)) if said.group(3) else 0
    assert download > 0  # the cache was empty: the .debs and the index's wheels download
    assert abs(download + here - total) <= 0.1 * 2**20, (preview, total)

    assert fetched[-1].startswith(f"fetched {count}/{count} files, "), fetched
    assert len(fetched) <= seconds / 5 + 3, (seconds, fetched)  # not one line per file

    out = done.stdout.splitlines()
    folder = tmp_path / "b"
    verify = out[-2].removeprefix("next: check it where it is used: ")
    provision = out[-1].removeprefix("then provision from it, with no network: ")
    assert shlex.split(verify) == [JETSON_ENV, "bundle", "--verify", str(folder)], out[-2]
    assert shlex.split(provision) == [JETSON_ENV, "provision", "--bundle", str(folder)], out[-1]
    checked = subprocess.run(["sh", "-c", verify], cwd="/", env=env, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith(f"{folder}: all {count} artifact(s) match"), checked.stdout
