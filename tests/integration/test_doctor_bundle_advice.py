"""Issue 59, item 5: `doctor --bundle`'s section, read as a user reads it. It came after the
final verdict line, without a heading, with the same line once per finding (4 exact
duplicates in 11 lines) and one `bundle ... --roles X` line per role the bundle lacks. Now:
its heading, before the verdict, each line once, and one `--roles A,B,...` line.

A real bundle (`jetson-env bundle --x86 --roles tensorrt`, its tarball a file of random
bytes given with --file, as tests/integration/test_bundle_hostile.py makes one; the onnx
set's wheels come from the package index), the console script from an unrelated folder, a
bare venv of this Python as the target, nvidia-smi's STAND-IN on PATH as the GPU (without
one the doctor prescribes no TensorRT, torch, pycuda or nvidia runtime).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

JETSON_ENV = str(Path(sys.executable).with_name("jetson-env"))  # the console script
STANDIN = Path(__file__).parents[1] / "fixtures" / "cuda" / "nvidia-smi.standin"
TARBALL = "TensorRT-10.0.0.Linux.x86_64-gnu.cuda-12.4.tar.gz"


def run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run([JETSON_ENV, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def test_the_bundle_section_is_headed_before_the_verdict_each_line_once(tmp_path: Path):
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    shutil.copy(STANDIN, gpu / "nvidia-smi")
    (gpu / "nvidia-smi").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env |= {"NO_COLOR": "1", "COLUMNS": "400", "PATH": f"{gpu}{os.pathsep}{os.environ['PATH']}"}
    here = tmp_path / "elsewhere"
    here.mkdir()
    source = tmp_path / "src" / TARBALL
    source.parent.mkdir()
    source.write_bytes(os.urandom(4096))
    bundle = tmp_path / "b"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    made = run("bundle", str(bundle), "--x86", "--python-version", python, "--roles", "tensorrt",
               "--no-controller", "--file", f"tensorrt={source}", cwd=here, env=env)  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    venv.create(tmp_path / "bare", with_pip=False)  # torch, TensorRT, pycuda ... missing
    target = ("doctor", "--no-smoke", "--python", str(tmp_path / "bare" / "bin" / "python"),
              "--bundle", str(bundle))  # fmt: skip

    lines = run(*target, cwd=here, env=env).stdout.splitlines()
    report = json.loads(run(*target, "--json", cwd=here, env=env).stdout)

    heading = f"From the bundle {bundle}, with no network:"
    assert heading in lines, lines[-20:]
    section = lines[lines.index(heading) + 1 :]
    verdict = section.pop()
    assert verdict.startswith("FAIL: "), verdict  # the verdict is the last line, after it
    assert section and all(line.startswith("  ") for line in section), section
    assert len(set(section)) == len(section), section  # no line twice
    offline = report["bundle"]
    absent = offline["add"]["roles"]
    assert {"python_base", "torch", "pycuda"} <= set(absent), offline
    (add,) = [line for line in section if "--roles" in line]  # one line for all of them
    words = shlex.split(add.split("add them with: ", 1)[1])
    assert Path(words[0]).name == "jetson-env" and words[1:3] == ["bundle", str(bundle)], words
    assert words[words.index("--roles") + 1] == ",".join(absent)
    for role in absent:
        assert f"{role} (" in add  # named with the checks it fixes
    assert [line for line in section if "tensorrt (" in line and "can apply" in line], section
    (fix,) = [line for line in section if line.startswith("  offline fix: ")]
    assert shlex.split(fix.split(": ", 1)[1])[-4:] == ["--fix", ",".join(offline["roles"]),
                                                       "--bundle", str(bundle)]  # fmt: skip
