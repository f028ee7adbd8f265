"""Running probes in a real interpreter: results, and every way a probe can go wrong."""

import json
import subprocess
import sys

import pytest

from jetson_env import targets
from jetson_env.targets import LocalTarget, run_probe

PROBES = [
    "platform",
    "cuda",
    "tensorrt",
    "cudnn",
    "pymodules",
    "pycuda",
    "torch",
    "torch2trt",
    "docker",
    "smoke",
]


@pytest.mark.parametrize("name", PROBES)
def test_probe_runs_with_the_standard_library_only(name):
    """-S -I: no site-packages, no user paths; the probe must still print its JSON."""
    proc = subprocess.run(
        [sys.executable, "-S", "-I", "-"],
        input=targets.probe_source(name),
        capture_output=True,
        text=True,
        check=True,
    )
    assert isinstance(json.loads(proc.stdout), dict)


def test_platform_probe_through_a_local_target():
    result = run_probe(LocalTarget(sys.executable), "platform", timeout=30)
    assert result.ok, result.error
    assert result.data["python"]["executable"] == sys.executable
    assert result.data["machine"]


def make_interpreter(tmp_path, body):
    """A stand-in interpreter: a shell script that misbehaves the way a real one can."""
    path = tmp_path / "python3"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_hanging_probe_becomes_a_timeout(tmp_path):
    python = make_interpreter(tmp_path, "exec sleep 30")
    result = run_probe(LocalTarget(python), "platform", timeout=1)
    assert not result.ok
    assert result.error == "probe 'platform' timed out after 1s"


def test_segfaulting_interpreter_is_reported(tmp_path):
    python = make_interpreter(tmp_path, "cat >/dev/null; kill -SEGV $$")
    result = run_probe(LocalTarget(python), "platform", timeout=10)
    assert result.error == "probe 'platform' was killed by SIGSEGV"


def test_traceback_is_reduced_to_its_last_line(tmp_path):
    python = make_interpreter(
        tmp_path, "cat >/dev/null; echo 'Traceback ...' >&2; echo 'ImportError: boom' >&2; exit 1"
    )
    result = run_probe(LocalTarget(python), "cuda", timeout=10)
    assert result.error == "probe 'cuda' exited 1: ImportError: boom"
    assert "Traceback" in result.stderr


def test_garbage_output_is_reported(tmp_path):
    python = make_interpreter(tmp_path, "cat >/dev/null; echo not json")
    result = run_probe(LocalTarget(python), "cuda", timeout=10)
    assert result.error.startswith("probe 'cuda' printed no JSON")


def test_missing_interpreter_is_reported(tmp_path):
    result = run_probe(LocalTarget(str(tmp_path / "nope")), "platform", timeout=10)
    assert result.error.startswith("probe 'platform' exited 127: cannot start")
