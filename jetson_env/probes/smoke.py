"""Smoke test: a tiny model made in code, PyTorch reference, torch2trt conversion, inference.

Runs in the TARGET interpreter (Python 3.6+); stdlib only at import time, then torch,
tensorrt and torch2trt if they are there. collect() returns a dict; progress goes to stderr as
"@@stage <text>" lines, one per stage, for the doctor to show while it runs.

Everything that can run does (the PyTorch reference runs without TensorRT); a stage
that cannot run is reported with the reason and never as done. fp16 is converted
only where the device has fast fp16 (TensorRT's builder says so, or by compute
capability). The engine is saved (TRTModule.state_dict) to a temporary file, loaded
into a new TRTModule and must give the same output; the file is removed.
"""

import os
import sys
import tempfile
import time

TOLERANCE = {"fp32": 1e-3, "fp16": 5e-2}
WARMUP, ITERATIONS = 5, 50


def stage(text):
    sys.stderr.write("%s %s\n" % (STAGE, text))  # noqa: F821 (the prelude's)
    sys.stderr.flush()


def tiny_model(torch):
    nn = torch.nn

    class TinyNet(nn.Module):
        def __init__(self):
            super(TinyNet, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1),
                nn.BatchNorm2d(8),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(8, 16, 3, padding=1),
                nn.ReLU(),
                nn.AdaptiveAvgPool2d((1, 1)),
            )
            self.classifier = nn.Linear(16, 10)

        def forward(self, x):
            x = self.features(x)
            return self.classifier(x.view(x.shape[0], -1))

    return TinyNet()


def latency_ms(torch, function, x):
    """Median wall time of one call, synchronised with the GPU."""
    with torch.no_grad():
        for _ in range(WARMUP):
            function(x)
        if x.is_cuda:
            torch.cuda.synchronize()
        times = []
        for _ in range(ITERATIONS):
            start = time.perf_counter()
            function(x)
            if x.is_cuda:
                torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1000.0)
    times.sort()
    return times[len(times) // 2]


def fast_fp16(trt, torch):
    """TensorRT's own answer where the builder has it, else compute capability >= 5.3/6.0."""
    try:
        builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
        answer = getattr(builder, "platform_has_fast_fp16", None)
        if answer is not None:
            return bool(answer), "builder.platform_has_fast_fp16"
    except Exception:  # an old or partial TensorRT: fall back to the capability
        pass
    major, minor = torch.cuda.get_device_capability(0)
    tegra = os.path.exists("/etc/nv_tegra_release")
    return (major, minor) >= ((5, 3) if tegra else (6, 0)), "compute capability"


def convert(torch, torch2trt, model, x, reference, precision, result):
    stage("converting with torch2trt (%s)" % precision)
    entry = {"precision": precision, "converted": False, "error": None}
    result["conversions"].append(entry)
    try:
        start = time.perf_counter()
        model_trt = torch2trt(model, [x], fp16_mode=precision == "fp16")
        entry["build_seconds"] = round(time.perf_counter() - start, 3)
        entry["converted"] = True
        stage("running the TensorRT engine (%s)" % precision)
        with torch.no_grad():
            output = model_trt(x)
        error = float((output.float() - reference).abs().max().item())
        entry["max_abs_error"] = error
        entry["tolerance"] = TOLERANCE[precision]
        entry["within_tolerance"] = error <= TOLERANCE[precision]
        entry["latency_ms"] = latency_ms(torch, model_trt, x)
        entry["speedup"] = result["reference"]["latency_ms"] / entry["latency_ms"]
    except Exception as exc:
        entry["error"] = describe(exc)
        return None, None
    return model_trt, output


def load_own_file(torch, path):
    """torch.load of the file just written: torch >= 2.6 defaults to weights_only=True, which
    may refuse the engine's bytes; torch < 1.13 has no weights_only argument."""
    try:
        return torch.load(path, weights_only=False)
    except TypeError:
        return torch.load(path)


def reload(torch, TRTModule, model_trt, x, output, result):
    stage("saving and reloading the engine (TRTModule state_dict)")
    entry = {"done": False, "error": None}
    result["reload"] = entry
    handle, path = tempfile.mkstemp(prefix="jetson-env-smoke-", suffix=".pth")
    os.close(handle)
    try:
        torch.save(model_trt.state_dict(), path)
        entry["bytes"] = os.path.getsize(path)
        loaded = TRTModule()
        loaded.load_state_dict(load_own_file(torch, path))
        with torch.no_grad():
            again = loaded(x)
        entry["max_abs_difference"] = float((again - output).abs().max().item())
        entry["same_output"] = entry["max_abs_difference"] == 0.0
        entry["done"] = True
    except Exception as exc:
        entry["error"] = describe(exc)
    finally:
        os.remove(path)


def collect():
    result = {
        "torch": None,
        "device": None,
        "reference": None,
        "tensorrt": None,
        "torch2trt": None,
        "fp16": None,
        "conversions": [],
        "reload": None,
        "skipped": None,
    }
    stage("importing torch")
    try:
        import torch
    except BaseException as exc:
        result["skipped"] = "torch is not importable (%s)" % describe(exc)
        return result
    result["torch"] = torch.__version__
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    result["device"] = torch.cuda.get_device_name(0) if cuda else "cpu"
    stage("PyTorch reference on %s" % result["device"])
    torch.manual_seed(0)
    model = tiny_model(torch).eval().to(device)
    x = torch.randn(1, 3, 64, 64, device=device)
    with torch.no_grad():
        reference = model(x).float()
    result["reference"] = {
        "latency_ms": latency_ms(torch, model, x),
        "output_shape": list(reference.shape),
    }
    if not cuda:
        result["skipped"] = "no CUDA device is available to torch: TensorRT needs a GPU"
        return result
    stage("importing tensorrt and torch2trt")
    try:
        import tensorrt as trt
    except BaseException as exc:
        result["skipped"] = "tensorrt is not importable (%s)" % describe(exc)
        return result
    result["tensorrt"] = trt.__version__
    try:
        from torch2trt import TRTModule, torch2trt
    except BaseException as exc:
        result["skipped"] = "torch2trt is not importable (%s)" % describe(exc)
        return result
    result["torch2trt"] = True
    fp16, source = fast_fp16(trt, torch)
    result["fp16"] = {"supported": fp16, "source": source}
    model_trt, output = convert(torch, torch2trt, model, x, reference, "fp32", result)
    if model_trt is not None:
        reload(torch, TRTModule, model_trt, x, output, result)
    if fp16:
        convert(torch, torch2trt, model, x, reference, "fp16", result)
    return result
