"""Issue 59, item 5: the doctor's own output, read as a user reads it. The installed console
script by its full path, from an unrelated folder, piped with --no-color: the heading names the
interpreter the probes ran in; --quick without torch names torch's install once; a host
without a GPU is not prescribed what only a GPU uses, and is told why once. A GPU is
nvidia-smi's STAND-IN (tests/fixtures/cuda) on PATH: this machine has none. Then the checks'
own words where no machine here can show them (a Jetson's TensorRT, a hidden GPU under pycuda).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult

JETSON_ENV = str(Path(sys.executable).with_name("jetson-env"))  # the console script
FIXTURES = Path(__file__).parents[1] / "fixtures"
ROLES = Path(__file__).parents[2] / "ansible_collections" / "jetson_env" / "jetson" / "roles"
MATRIX = load()
# What only a GPU uses, as the doctor's fixes install it here (x86, pip and apt).
GPU_ONLY = ("tensorrt-cu", "pip install torch==", "cudnn-downloads", "nvidia-container-toolkit",
            "pycuda==", "cuda-python==", "torch2trt-src")  # fmt: skip


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A venv with nothing installed (not even pip): torch, TensorRT, termcolor are missing."""
    venv.create(tmp_path / "bare", with_pip=False)
    return tmp_path / "bare" / "bin"


@pytest.fixture
def with_a_gpu(tmp_path: Path) -> Path:
    """A folder whose nvidia-smi is the STAND-IN that lists one H200."""
    folder = tmp_path / "gpu"
    folder.mkdir()
    shutil.copy(FIXTURES / "cuda" / "nvidia-smi.standin", folder / "nvidia-smi")
    (folder / "nvidia-smi").chmod(0o755)
    return folder


def doctor(*args: str, cwd: Path, path_first: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env |= {"NO_COLOR": "1", "COLUMNS": "400"}
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env['PATH']}"
    cwd.mkdir(exist_ok=True)
    done = subprocess.run([JETSON_ENV, "doctor", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def fixes(text: str) -> list[str]:
    """The numbered fixes as printed: each one's checks line and what follows it."""
    lines = text.split("Fixes, in the order to apply them:\n", 1)[1].splitlines()
    blocks: list[str] = []
    for line in lines:
        if line[:1].isdigit() and ". " in line and line.endswith(":"):
            blocks.append(line)
        elif blocks and not line.startswith(("FAIL:", "WARN:", "OK:", "CRASH:")):
            blocks[-1] += "\n" + line
    return blocks


def test_the_heading_names_the_interpreter_the_probes_ran_in(bare: Path, tmp_path: Path):
    """`--python python3` found on PATH (pyenv's shim, a venv's): the heading said `local
    (python3)`; it names the interpreter the platform probe ran in, by path and version."""
    done = doctor("--quick", "--check", "platform", "--python", "python3", cwd=tmp_path / "here",
                  path_first=bare)  # fmt: skip
    lines = done.stdout.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))  # the table's
    heading = " ".join(line.strip() for line in lines[:top])  # the title, as rich folds it
    python = f"{bare}/python3, Python {platform.python_version()}"
    assert heading == f"jetson-env doctor: local (python3): {python}", done.stdout
    report = json.loads(doctor("--quick", "--check", "platform", "--python", "python3", "--json",
                               cwd=tmp_path / "here", path_first=bare).stdout)  # fmt: skip
    assert report["target"] == "local (python3)"  # the JSON keeps the target as asked
    assert report["platform"]["python"]["executable"] == f"{bare}/python3"


@pytest.mark.parametrize("page", ["one.md", "one.html"])
def test_the_one_host_pages_heading_names_the_interpreter_too(page, bare: Path, tmp_path: Path):
    """`doctor --report FILE` (the page for this machine) heads the page as the terminal
    heads its table: main's page kept `local (python3)` without the interpreter checked."""
    here = tmp_path / "here"
    done = doctor("--quick", "--check", "platform", "--python", "python3", "--report", page,
                  cwd=here, path_first=bare)  # fmt: skip
    assert f"report written to {page}" in done.stderr.splitlines(), done.stderr
    heading = f"jetson-env doctor: local (python3): {bare}/python3, Python "
    heading += platform.python_version()
    text = (here / page).read_text()
    if page.endswith(".md"):
        shown = re.sub(r"\\(.)", r"\1", text.splitlines()[0])  # as Markdown shows it
        assert shown == f"# {heading}", text[:500]
    else:
        assert f"<title>{heading}</title>" in text and f"<h1>{heading}</h1>" in text, text[:800]


@pytest.mark.parametrize("page", ["one.md", "one.html"])
def test_the_one_host_page_says_which_role_applies_a_fix_as_the_terminal_does(
    page, bare: Path, tmp_path: Path
):
    """termcolor missing in a bare venv: the terminal prints the pip fix and `or the
    playbook's role python_base: JETSON-ENV doctor --python BARE --fix python_base`; the
    page (main: the pip fix only) carries the same line, its command whole in a block."""
    here, python = tmp_path / "here", str(bare / "python")
    args = ("--check", "termcolor", "--python", python)
    said = doctor(*args, cwd=here).stdout.splitlines()
    (line,) = [line for line in said if "or the playbook's role python_base: " in line]
    again = line.split("or the playbook's role python_base: ", 1)[1]
    assert again.endswith(f"jetson-env doctor --python {python} --fix python_base"), line
    done = doctor(*args, "--report", page, cwd=here)
    assert f"report written to {page}" in done.stderr.splitlines(), done.stderr
    text = (here / page).read_text()
    if page.endswith(".md"):
        lines = text.splitlines()
        at = lines.index("or the playbook's role python\\_base:")
        assert lines[at + 2 : at + 5] == ["```", again, "```"], lines[at:]
    else:
        assert ("<p class=\"note\">or the playbook's role python_base:</p>"
                f'<pre class="fix">{again}</pre>') in text, text[-1500:]  # fmt: skip


def test_quick_without_torch_names_torchs_install_once(bare: Path, with_a_gpu: Path,
                                                        tmp_path: Path):  # fmt: skip
    """--quick where torch is absent: torch's install was listed twice (its own fix and the
    end of torchvision's "no torchvision release is known to pair with torch (version
    unknown)"); torchvision now says torch is missing, with no fix of its own."""
    args = ("--quick", "--check", "packages", "--python", str(bare / "python"))
    text = doctor(*args, cwd=tmp_path / "here", path_first=with_a_gpu).stdout
    report = json.loads(doctor(*args, "--json", cwd=tmp_path / "here",
                               path_first=with_a_gpu).stdout)  # fmt: skip

    assert "version unknown" not in text and "pair" not in text, text
    torch_fixes = [fix for fix in fixes(text) if "pip install torch==" in fix]
    assert len(torch_fixes) == 1, fixes(text)
    (vision,) = [f for f in report["findings"] if f["summary"].startswith("torchvision")]
    assert (vision["status"], vision["remedy"]) == ("skip", None), vision
    assert vision["summary"] == "torchvision not installed; torch is not installed either"
    (torch,) = [f for f in report["findings"] if f["summary"].startswith("torch is not")]
    assert torch["status"] == "fail" and "pip install torch==" in torch["remedy"]


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_without_a_gpu_what_only_a_gpu_uses_is_not_prescribed(
    bare: Path, with_a_gpu: Path, tmp_path: Path, quick: bool
):
    """The doctor said "x86_64 host without an NVIDIA GPU: TensorRT cannot build engines
    here", then prescribed TensorRT, torch's CUDA build (5.5 GB with its nvidia wheels), cuDNN,
    pycuda and the nvidia runtime. Its own verdict applies: they are left out, said once, in
    one step the findings point to; the same host with a GPU (the stand-in) gets them."""
    args = ("--no-smoke", "--python", str(bare / "python"), *(["--quick"] if quick else []))
    here = tmp_path / "here"
    text = doctor(*args, cwd=here).stdout
    report = json.loads(doctor(*args, "--json", cwd=here).stdout)

    assert "without an NVIDIA GPU" in text
    printed = fixes(text)
    for fix in printed:
        assert not any(word in fix for word in GPU_ONLY), fix
    (left_out,) = [fix for fix in printed if "left out" in fix]
    checks = left_out.splitlines()[0].split(". ", 1)[1]
    assert "libnvinfer" in checks or "packages" in checks, left_out
    assert "of use only with an NVIDIA GPU, and this host has none" in left_out
    assert text.count("of use only with an NVIDIA GPU") == 1
    (step,) = [f for f in report["fixes"] if f["command"].startswith("left out")]
    assert step["words"] is True
    unfixed = [f for f in report["findings"] if f["remedy"] == step["command"]]
    assert unfixed and all(f["status"] in ("fail", "warn") for f in unfixed)
    assert all(f["playbook"] is None for f in unfixed)  # --fix runs no role for them

    with_gpu = json.loads(doctor(*args, "--json", cwd=here, path_first=with_a_gpu).stdout)
    commands = " ".join(f["command"] for f in with_gpu["fixes"])
    assert "tensorrt-cu" in commands and "pip install torch==" in commands, commands
    assert not any(f["command"].startswith("left out") for f in with_gpu["fixes"])


def facts(platform: dict, **data: dict) -> Facts:
    python = {"version": "3.10.12", "executable": "/usr/bin/python3"}
    raw = {"uid": 0, "unknown": {}, "os": {"pretty_name": "Ubuntu 22.04"}, "soc": None,
           "python": python, **platform}  # fmt: skip
    results = {"platform": ProbeResult("platform", raw, None, 0.1)}
    results |= {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}
    described = {**raw, "compute_capability": raw.get("compute_capability"), "jetpack": None,
                 "supported": True}  # fmt: skip
    return Facts(results, MATRIX, described)


ORIN = {"is_jetson": True, "machine": "aarch64", "l4t": "36.4.3", "gpus": [],
        "compute_capability": "8.7"}  # fmt: skip


def test_a_jetsons_tensorrt_fix_installs_the_roles_packages_not_all_of_jetpack():
    """On a Jetson without libnvinfer the fix was `apt-get install nvidia-jetpack` (all of
    JetPack), labelled the tensorrt role's, which installs two packages: one fix, the role's
    packages, read from where the role reads them (its defaults)."""
    (finding,) = BY_NAME["libnvinfer"].run(facts(ORIN, tensorrt={"files": [], "loaded": None}))
    defaults = yaml.safe_load((ROLES / "tensorrt" / "defaults" / "main.yml").read_text())
    packages = defaults["tensorrt_apt_packages"]
    assert packages == ["tensorrt", "python3-libnvinfer-dev"]
    assert finding.status == "fail"
    assert finding.remedy.shell == f"apt-get update && apt-get install -y {' '.join(packages)}"
    assert finding.remedy.role == "tensorrt"
    assert "nvidia-jetpack" not in finding.remedy.shell


PYCUDA = {"installed": True, "importable": True, "version": "2025.1", "device_count": None,
          "error": "cuInit failed: no CUDA-capable device is detected"}  # fmt: skip


@pytest.mark.parametrize(
    ("visibility", "hidden"),
    [({"cuda_visible_devices": ""}, "CUDA_VISIBLE_DEVICES='' (set empty) hides every GPU"),
     ({"cuda_visible_devices": "-1"}, "CUDA_VISIBLE_DEVICES=-1 hides every GPU")],
)  # fmt: skip
def test_pycuda_names_what_hides_the_gpu_as_torch_and_cuda_python_do(visibility, hidden):
    """Under CUDA_VISIBLE_DEVICES= pycuda's line said "the CUDA driver does not initialise"
    where torch's and cuda-python's name the variable."""
    h100 = {"is_jetson": False, "machine": "x86_64", "l4t": None, "compute_capability": "9.0",
            "gpus": [{"name": "NVIDIA H100", "compute_capability": "9.0"}],
            "visibility": visibility}  # fmt: skip
    (finding,) = BY_NAME["pycuda"].run(facts(h100, pycuda=PYCUDA, cuda={"version": "13.0"}))
    assert finding.status == "fail"
    assert finding.summary == f"pycuda 2025.1 imports, but {hidden}: the CUDA driver sees no device"
    assert finding.remedy.shell.startswith("unset CUDA_VISIBLE_DEVICES")
    assert finding.remedy.role is None
