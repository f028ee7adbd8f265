"""The smoke conversion for real: only where TensorRT can build an engine on a GPU.

The interpreter is $JETSON_ENV_SMOKE_PYTHON (default: this one). Elsewhere the test is
skipped with the reason; no result here is ever claimed without a conversion.
"""

import json
import os
import subprocess
import sys

import pytest

PYTHON = os.environ.get("JETSON_ENV_SMOKE_PYTHON", sys.executable)
CAN_BUILD = """
import tensorrt as trt, torch, torch2trt
assert torch.cuda.is_available(), "torch sees no CUDA device"
builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
print(trt.__version__)
"""


def tensorrt_problem() -> str | None:
    proc = subprocess.run([PYTHON, "-c", CAN_BUILD], capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return None
    lines = proc.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def test_smoke_converts_runs_and_reloads():
    problem = tensorrt_problem()
    if problem:
        pytest.skip(f"TensorRT cannot build an engine with {PYTHON}: {problem}")
    proc = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "doctor", "--json", "--check", "smoke",
         "--python", PYTHON],
        capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    smoke = json.loads(proc.stdout)["smoke"]
    assert smoke["skipped"] is None
    fp32 = smoke["conversions"][0]
    assert fp32["precision"] == "fp32" and fp32["converted"] and fp32["error"] is None
    assert fp32["within_tolerance"], fp32
    assert smoke["reload"]["done"] and smoke["reload"]["same_output"]
    if smoke["fp16"]["supported"]:
        assert smoke["conversions"][1]["within_tolerance"]
    onnx = smoke["onnx"]
    assert onnx["exported"] and onnx["converted"] and onnx["error"] is None, onnx
    assert onnx["within_tolerance"] and onnx["engine"]["reloaded"], onnx
    assert onnx["engine"]["sidecar"]["tensorrt"] == smoke["tensorrt"]
    assert onnx["strongly_typed"] == smoke["tensorrt"].startswith("11.")
    assert proc.returncode == 0, proc.stdout
