"""`bundle --verify`'s lines for what is still to supply by hand run as printed.

A download that failed while the bundle was made (a wheel of python_base's pip set, here)
is listed in the manifest's `manual` with its role as its kind; `--file` takes only the
kinds of docs/playbook.md (torch, torchvision, torch2trt, tensorrt, cusparselt), so the
line that brings it back is the same `jetson-env bundle` line without `--file`.
"""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from jetson_env.bundle.manifest import write_manifest


def jetson_env(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "--no-color", *args],
        capture_output=True, text=True, cwd=cwd, timeout=600,
        env={**os.environ, "COLUMNS": "400"},
    )  # fmt: skip


def test_a_failed_download_is_brought_back_by_the_line_verify_prints(tmp_path: Path):
    directory = tmp_path / "bundle"
    made = jetson_env("bundle", str(directory), "--x86", "--roles", "python_base",
                      "--no-controller", cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    manifest = json.loads((directory / "manifest.json").read_text())
    path = next(p for p in manifest["artifacts"] if p.startswith("pip/termcolor-"))
    entry = manifest["artifacts"].pop(path)
    (directory / path).unlink()
    # As making._merge_manual records a fetch that failed (needs.file_kind: the role).
    manifest["manual"] = [{
        "role": "python_base", "what": entry["what"], "expected": path,
        "where_from": f"{entry['source']} (HTTP Error 503: Service Unavailable)",
        "sha256": entry["sha256"], "targets": entry["targets"], "kind": "python_base",
    }]  # fmt: skip
    write_manifest(directory, manifest)

    verified = jetson_env("bundle", "--verify", str(directory), cwd=tmp_path)

    (said,) = [line for line in verified.stdout.splitlines() if "to supply by hand" in line]
    assert "--file python_base" not in said, said
    command = said.split(": ", 2)[2]
    assert command.startswith("jetson-env bundle "), said
    again = jetson_env(*shlex.split(command)[1:], cwd=tmp_path)  # as printed
    assert again.returncode == 0, again.stdout + again.stderr
    assert (directory / path).is_file()
    after = json.loads((directory / "manifest.json").read_text())
    assert after["manual"] == [] and path in after["artifacts"]
