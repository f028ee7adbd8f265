"""Probes running for real: every probe in this interpreter and in JetPack 4's Python 3.6,
the shared framework process, and how a probe that goes wrong is reported."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.pythons import interpreter, required

from jetson_env import probing
from jetson_env.probing import PROBES, ProbeResult, Unusable, run_probes
from jetson_env.targets import BOOTSTRAP, LocalTarget, Target


def run_probe(target: Target, name: str, timeout: float) -> ProbeResult:
    """One probe in a process of its own."""
    return run_probes(target, [name], {name: timeout})[name]


PYTHON36 = interpreter("3.6.15")
PYTHON27 = interpreter("2.7.18")
LIGHT = [p.name for p in PROBES if not p.framework]
FRAMEWORK = [p.name for p in PROBES if p.framework]
TIMEOUTS = {p.name: 60 for p in PROBES}


def stand_in(tmp_path: Path, body: str, name: str = "python3") -> str:
    """An interpreter that misbehaves the way a real one can (a shell script)."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture(params=[sys.executable, str(PYTHON36)], ids=["this-python", "python3.6"])
def isolated_python(request, tmp_path) -> str:
    """-S -I: no site-packages, no user paths; the probes must work with the stdlib alone
    (the launcher starts the probe processes with the same options)."""
    if request.param == str(PYTHON36):
        required("3.6.15")
    return stand_in(tmp_path, f'exec {request.param} -S -I "$@"')


@pytest.mark.parametrize("name", LIGHT)
def test_each_light_probe_returns_an_object(isolated_python, name):
    result = run_probe(LocalTarget(isolated_python), name, timeout=60)
    assert result.ok, (result.error, result.stderr)
    assert isinstance(result.data, dict)


def test_framework_probes_share_one_process(isolated_python, tmp_path):
    """One probe process for all of them: none installed here, each still reports."""
    results = run_probes(LocalTarget(isolated_python), FRAMEWORK, TIMEOUTS)
    assert {name: r.error for name, r in results.items()} == dict.fromkeys(FRAMEWORK)
    assert results["torch"].data["torch"] == {"installed": False}
    assert results["tensorrt_bindings"].data["imported"] is False
    assert results["smoke"].data["skipped"].startswith("torch is not importable")
    assert probe_processes(isolated_python, FRAMEWORK, tmp_path) == (1, [])


def test_a_doctor_run_starts_one_process_per_light_probe_and_one_for_the_frameworks(
    isolated_python, tmp_path
):
    names = [p.name for p in PROBES]
    assert probe_processes(isolated_python, names, tmp_path) == (len(LIGHT) + 1, [])


def probe_processes(python: str, names: list[str], tmp_path: Path) -> tuple[int, list[str]]:
    """probe_all in a child of this interpreter under `strace -f`: how many probe processes
    the launcher started (executions of the target's real interpreter running BOOTSTRAP, the
    launcher's own left out), and the probes that did not answer."""
    log = tmp_path / "execve.log"
    code = (
        "import json, sys\n"
        "from jetson_env.probing import probe_all\n"
        "from jetson_env.targets import LocalTarget\n"
        "results = probe_all(LocalTarget(sys.argv[1]), sys.argv[2].split(','), timeout=60)\n"
        "print(json.dumps([name for name, r in results.items() if not r.ok]))\n"
    )
    done = subprocess.run(
        ["strace", "-f", "-qq", "-s", "64", "-e", "trace=execve", "-o", str(log),
         sys.executable, "-c", code, python, ",".join(names)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    interpreter = Path(python).read_text().split("exec ")[1].split()[0]  # the real one
    first_line = json.dumps(BOOTSTRAP.splitlines()[0])[1:-1]
    runs = [
        line for line in log.read_text().splitlines()
        # concurrent calls are printed "<unfinished ...>": only failed ones say "= -1"
        if f'execve("{interpreter}", ' in line and first_line in line and "= -1" not in line
    ]  # fmt: skip
    return len(runs) - 1, json.loads(done.stdout)


def test_python_2_is_named_with_what_is_needed():
    required("2.7.18")
    with pytest.raises(Unusable) as caught:
        run_probe(LocalTarget(str(PYTHON27)), "platform", timeout=30)
    assert str(caught.value) == f"{PYTHON27} is Python 2.7.18: the probes need Python 3.6 or newer"
    assert "--python" in caught.value.remedy


def test_a_crash_in_the_shared_process_is_that_probes_and_the_rest_still_run(tmp_path):
    """torch's import segfaults: torch is the crash, the probes after it run in a fresh process."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("import os, signal\nos.kill(os.getpid(), 11)\n")
    python = stand_in(tmp_path, f'PYTHONPATH={site} exec {sys.executable} "$@"')

    results = run_probes(LocalTarget(python), FRAMEWORK, TIMEOUTS)

    assert results["torch"].error == "probe 'torch' was killed by SIGSEGV"
    assert results["pycuda"].ok and results["torch2trt"].ok
    assert results["smoke"].error == "probe 'smoke' was killed by SIGSEGV"  # imports torch too


def test_a_hang_is_that_probes_timeout(tmp_path):
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    python = stand_in(tmp_path, f'PYTHONPATH={site} exec {sys.executable} "$@"')

    results = run_probes(LocalTarget(python), ["pycuda", "torch", "torch2trt"],
                         {"pycuda": 30, "torch": 1, "torch2trt": 30})  # fmt: skip

    assert results["torch"].error == "probe 'torch' timed out after 1s"
    assert results["pycuda"].ok and results["torch2trt"].ok


def test_a_probe_that_raises_is_reported_with_its_traceback(tmp_path, monkeypatch):
    source = probing.source

    def broken(name):
        raising = "def collect():\n    raise RuntimeError('boom')\n"
        return raising if name == "cudnn" else source(name)

    monkeypatch.setattr(probing, "source", broken)
    result = run_probe(LocalTarget(sys.executable), "cudnn", timeout=30)
    assert result.error == "probe 'cudnn' raised RuntimeError: boom"
    assert "Traceback" in result.stderr


@pytest.mark.parametrize("users, seen", [(None, "LAZY"), ("EAGER", "EAGER")])
def test_cuda_module_loading_is_lazy_before_the_first_probe_unless_the_user_chose(
    monkeypatch, users, seen
):
    """The prelude sets it before any probe runs (warm_cuda and pycuda's probe call cuInit:
    the driver reads the variable then). A stand-in for pycuda's reports what it sees."""
    source = probing.source
    reporting = (
        "import os\n"
        "def collect():\n"
        "    return {'installed': False, 'loading': os.environ.get('CUDA_MODULE_LOADING')}\n"
    )
    monkeypatch.setattr(
        probing, "source", lambda name: reporting if name == "pycuda" else source(name)
    )
    env = {name: value for name, value in os.environ.items() if name != "CUDA_MODULE_LOADING"}
    if users:
        env["CUDA_MODULE_LOADING"] = users
    results = run_probes(LocalTarget(sys.executable, env=env), FRAMEWORK, TIMEOUTS)
    assert results["pycuda"].data["loading"] == seen


def test_the_result_is_found_after_an_import_banner(tmp_path):
    """A sitecustomize that prints on stdout (and bytes that are not UTF-8) at startup."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nsys.stdout.write('Welcome! {\"x\": 1}')\nsys.stdout.flush()\n"
        "sys.stdout.buffer.write(b'\\xff\\xfe\\n')\nsys.stderr.buffer.write(b'\\xff\\n')\n"
    )
    python = stand_in(tmp_path, f'PYTHONPATH={site} exec {sys.executable} "$@"')
    result = run_probe(LocalTarget(python), "platform", timeout=30)
    assert result.ok, result.error
    assert result.data["python"]["executable"] == sys.executable


@pytest.mark.parametrize(
    "body, message",
    [
        ("exit 0", "did not run the probes: it exited 0, printing nothing"),
        ("echo '{\"x\": 1}'", 'did not run the probes: it exited 0: {"x": 1}'),
        ("exec yes", "printed more than 4 MiB without running the probes"),
        ("kill -SEGV $$", "did not run the probes: it was killed by SIGSEGV"),
    ],
)
def test_an_interpreter_that_does_not_run_the_probes_is_unusable(tmp_path, body, message):
    python = stand_in(tmp_path, body)
    with pytest.raises(Unusable) as caught:
        run_probe(LocalTarget(python), "platform", timeout=30)
    assert message in str(caught.value)


def test_an_interpreter_that_hangs_is_unusable_after_the_startup_limit(tmp_path):
    python = stand_in(tmp_path, "exec sleep 60")
    with pytest.raises(Unusable) as caught:
        run_probe(LocalTarget(python), "platform", timeout=1)
    assert str(caught.value) == f"{python} did not start within 1s"


def test_a_missing_interpreter_is_unusable(tmp_path):
    with pytest.raises(Unusable) as caught:
        run_probe(LocalTarget(str(tmp_path / "nope")), "platform", timeout=10)
    assert str(caught.value) == f"cannot start {tmp_path / 'nope'}: No such file or directory"


def test_the_platform_probe_reports_what_hides_a_gpu_from_the_targets_environment(tmp_path):
    """The variables as the target's session has them (here: set empty and void) and the
    device nodes, read whether or not torch is installed (a stdlib-only 3.6 here)."""
    required("3.6.15")
    python = stand_in(tmp_path, f'exec {PYTHON36} -S -I "$@"')
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void"}
    result = run_probe(LocalTarget(python, env=env), "platform", timeout=60)

    seen = result.data["visibility"]
    assert seen["cuda_visible_devices"] == "" and seen["nvidia_visible_devices"] == "void"
    assert seen["device_nodes"] == sorted(str(p) for p in Path("/dev").glob("nvidia*"))
    assert seen["container"] == any(Path(p).exists() for p in ("/.dockerenv", "/run/.containerenv"))


@pytest.mark.parametrize("failing", [False, True], ids=["prints", "fails"])
def test_a_command_printing_utf8_to_python_3_6_in_the_c_locale_is_read(tmp_path, failing):
    """JetPack 4's Python 3.6 in the C locale (an SSH session without LANG) decodes a
    command's output as ASCII: a STAND-IN nvidia-smi that names its GPU, or its failure, with
    a "™" crashed the platform probe (UnicodeDecodeError); the probes' one way to run a
    command reads it as UTF-8."""
    required("3.6.15")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    said = "NVIDIA GeForce RTX\u2122 4090, 8.9" if not failing else "RTX\u2122: no driver"
    stand_in(bin_dir, f"printf '%s\\n' '{said}' >&{2 if failing else 1}\nexit {int(failing)}",
             name="nvidia-smi")  # fmt: skip
    python = stand_in(tmp_path, f'exec {PYTHON36} -S -I "$@"')
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LC_ALL": "C", "LANG": "C"}
    result = run_probe(LocalTarget(python, env=env), "platform", timeout=60)

    assert result.ok, (result.error, result.stderr)
    if failing:
        assert result.data["gpus"] == []
        assert result.data["unknown"]["gpus"] == "nvidia-smi exited 1: RTX\u2122: no driver"
    else:
        assert result.data["gpus"] == [
            {"name": "NVIDIA GeForce RTX\u2122 4090", "compute_capability": "8.9"}
        ]
