"""Smoke test: a tiny model made in code, a PyTorch reference, then every converter present.

Runs in the TARGET interpreter (Python 3.6+); stdlib only at import time, then torch,
tensorrt, torch2trt, onnx and torch_tensorrt if they are there. collect() returns a dict;
progress goes to stderr as "@@stage <text>" lines, one per stage, for the doctor to show.

Everything that can run does (the PyTorch reference runs without TensorRT); a stage
that cannot run is reported with the reason and never as done. The converters, each with its
time and max error against PyTorch:

- torch2trt: fp32, and fp16 where the device has fast fp16 (TensorRT's builder says so, or by
  compute capability). The engine is saved (TRTModule.state_dict) to a temporary file, loaded
  into a new TRTModule and must give the same output.
- ONNX: torch.onnx.export, then TensorRT's own OnnxParser (a strongly typed network from
  TensorRT 11 on, explicit batch before 10), the serialized engine written to a file with a
  sidecar `<engine>.json` saying which TensorRT and compute capability built it, read back,
  deserialized and run; then run once more as NVIDIA's samples run an engine, host buffers
  through cuda-python's driver API where cuda.bindings imports, else pycuda's.
- Torch-TensorRT (torch_tensorrt.compile), when it is installed.

Temporary files are removed. TensorRT attributes that some releases lack are read with
getattr(..., None); tests/unit/test_tensorrt_api.py checks every other one against PyPI's
real bindings of each TensorRT the matrix names.
"""

import json
import os
import shutil
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
        "onnx": None,
        "torch_tensorrt": None,
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
    stage("importing tensorrt")
    try:
        import tensorrt as trt
    except BaseException as exc:
        result["skipped"] = "tensorrt is not importable (%s)" % describe(exc)
        return result
    result["tensorrt"] = trt.__version__
    fp16, source = fast_fp16(trt, torch)
    result["fp16"] = {"supported": fp16, "source": source}
    try:
        from torch2trt import TRTModule, torch2trt
    except BaseException as exc:
        result["torch2trt"] = False
        result["torch2trt_error"] = describe(exc)
    else:
        result["torch2trt"] = True
        model_trt, output = convert(torch, torch2trt, model, x, reference, "fp32", result)
        if model_trt is not None:
            reload(torch, TRTModule, model_trt, x, output, result)
        if fp16:
            convert(torch, torch2trt, model, x, reference, "fp16", result)
    work = tempfile.mkdtemp(prefix="jetson-env-smoke-")
    try:
        onnx_engine(torch, trt, model, x, reference, result, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    torch_tensorrt_module(torch, model, x, reference, result)
    return result


def measured(torch, entry, function, x, reference, result, precision="fp32"):
    """Max error against PyTorch, tolerance, latency and speed-up of `function` on `x`."""
    with torch.no_grad():
        output = function(x)
    error = float((output.float() - reference).abs().max().item())
    entry["max_abs_error"] = error
    entry["tolerance"] = TOLERANCE[precision]
    entry["within_tolerance"] = error <= TOLERANCE[precision]
    entry["latency_ms"] = latency_ms(torch, function, x)
    entry["speedup"] = result["reference"]["latency_ms"] / entry["latency_ms"]
    return output


def export_onnx(torch, model, x, path, entry):
    """torch.onnx.export with the TorchScript-based exporter where torch has both (dynamo=False:
    the dynamo one needs onnxscript); torch before 2.5 has only that one."""
    stage("exporting the model to ONNX")
    kwargs = {"input_names": ["input"], "output_names": ["output"], "opset_version": 17}
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
        entry["exporter"] = "torchscript (dynamo=False)"
    except TypeError:  # torch < 2.5: no dynamo argument
        torch.onnx.export(model, (x,), path, **kwargs)
        entry["exporter"] = "torchscript"
    entry["onnx_bytes"] = os.path.getsize(path)


def network_flags(trt):
    """Strongly typed from TensorRT 11 (its only kind), explicit batch before 10 (the ONNX
    parser needs it there; 10 made it the only mode and 11 removed the flag)."""
    major = int(trt.__version__.split(".")[0])
    typed = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    explicit = getattr(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH", None)
    if major >= 11 and typed is not None:
        return 1 << int(typed), True
    if major < 10 and explicit is not None:
        return 1 << int(explicit), False
    return 0, major >= 11


def sidecar_for(trt, torch, converter):
    """What the project writes beside an engine file: who built it, for which TensorRT and
    compute capability, with which compatibility settings (an engine loads only on the same;
    jetson_env/engine_files.py). The smoke builds plain engines: no hardware compatibility
    level, not version-compatible (the builder's defaults, which it does not change)."""
    major, minor = torch.cuda.get_device_capability(0)
    return {
        "tensorrt": trt.__version__,
        "compute_capability": "%d.%d" % (major, minor),
        "hardware_compatibility": "none",
        "version_compatible": False,
        "device": torch.cuda.get_device_name(0),
        "built_by": "jetson-env smoke (%s)" % converter,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def engine_runner(torch, trt, engine):
    """A function x -> output running `engine` on torch's current stream (the tensor API,
    TensorRT 8.5 and newer; the bindings API before)."""
    context = engine.create_execution_context()
    if hasattr(context, "execute_async_v3"):
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        outputs = [n for n in names if engine.get_tensor_mode(n) != trt.TensorIOMode.INPUT]
        out = torch.empty(tuple(engine.get_tensor_shape(outputs[0])), device="cuda")

        def run(x):
            context.set_tensor_address(names[0], int(x.contiguous().data_ptr()))
            context.set_tensor_address(outputs[0], int(out.data_ptr()))
            context.execute_async_v3(torch.cuda.current_stream().cuda_stream)
            return out

        return run
    binding_shape = getattr(engine, "get_binding_shape", None)
    execute_v2 = getattr(context, "execute_async_v2", None)
    out = torch.empty(tuple(binding_shape(1)), device="cuda")

    def run_bindings(x):
        bindings = [int(x.contiguous().data_ptr()), int(out.data_ptr())]
        execute_v2(bindings, torch.cuda.current_stream().cuda_stream)
        return out

    return run_bindings


def onnx_engine(torch, trt, model, x, reference, result, work):
    entry = {"converter": "onnx", "precision": "fp32", "exported": False, "converted": False,
             "error": None, "strongly_typed": False, "engine": None}  # fmt: skip
    result["onnx"] = entry
    path = os.path.join(work, "tiny.onnx")
    try:
        export_onnx(torch, model, x, path, entry)
        entry["exported"] = True
    except Exception as exc:
        entry["error"] = "torch.onnx.export: " + describe(exc)
        return
    try:
        stage("building a TensorRT engine with TensorRT's OnnxParser")
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        flags, entry["strongly_typed"] = network_flags(trt)
        network = builder.create_network(flags)
        parser = trt.OnnxParser(network, logger)
        with open(path, "rb") as handle:
            parsed = parser.parse(handle.read())
        if not parsed:
            errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
            entry["error"] = "OnnxParser: " + "; ".join(errors)
            return
        config = builder.create_builder_config()
        start = time.perf_counter()
        serialized = builder.build_serialized_network(network, config)
        entry["build_seconds"] = round(time.perf_counter() - start, 3)
        if serialized is None:
            entry["error"] = "build_serialized_network returned None (see TensorRT's log)"
            return
        entry["converted"] = True
        engine_file = os.path.join(work, "tiny.engine")
        with open(engine_file, "wb") as handle:
            handle.write(bytes(serialized))
        sidecar = sidecar_for(trt, torch, "onnx")
        with open(engine_file + ".json", "w") as handle:
            json.dump(sidecar, handle)
        stage("reloading the engine file and running it")
        with open(engine_file, "rb") as handle:
            engine = trt.Runtime(logger).deserialize_cuda_engine(handle.read())
        with open(engine_file + ".json") as handle:
            entry["engine"] = {"bytes": os.path.getsize(engine_file), "sidecar": json.load(handle),
                               "reloaded": engine is not None}  # fmt: skip
        if engine is None:
            entry["error"] = "deserialize_cuda_engine returned None for the file just written"
            return
        measured(torch, entry, engine_runner(torch, trt, engine), x, reference, result)
        entry["host_runtime"] = host_runtime(trt, engine, x, reference)
    except Exception as exc:
        entry["error"] = describe(exc)


def host_runtime(trt, engine, x, reference):
    """The reloaded engine run as NVIDIA's TensorRT samples run one, without torch's memory:
    host buffers copied to device memory and back through cuda-python's driver API
    (cuda.bindings, the samples' from TensorRT 10.14 on) where it imports, else pycuda's."""
    stage("running the engine through the host's CUDA bindings")
    entry = {"bindings": None, "max_abs_error": None, "within_tolerance": None, "error": None}
    names = [engine.get_tensor_name(i) for i in range(getattr(engine, "num_io_tensors", 0))]
    context = engine.create_execution_context()
    if not names or not hasattr(context, "execute_async_v3"):
        entry["error"] = "this TensorRT has no tensor API (execute_async_v3): not run"
        return entry
    host_in = x.detach().cpu().float().numpy()  # randn: contiguous
    host_out = reference.detach().cpu().float().numpy().copy()
    host_out.fill(0)
    try:
        from cuda.bindings import driver  # noqa: F401 (cuda-python, Python 3.9+)

        entry["bindings"] = "cuda-python"
        run_engine = run_with_cuda_python
    except Exception:
        try:
            import pycuda.driver  # noqa: F401

            entry["bindings"] = "pycuda"
            run_engine = run_with_pycuda
        except Exception as exc:
            entry["error"] = "neither cuda-python nor pycuda imports (%s)" % describe(exc)
            return entry
    try:
        run_engine(context, names, host_in, host_out)
        error = float(abs(host_out - reference.detach().cpu().float().numpy()).max())
        entry["max_abs_error"] = error
        entry["tolerance"] = TOLERANCE["fp32"]
        entry["within_tolerance"] = error <= TOLERANCE["fp32"]
    except Exception as exc:
        entry["error"] = describe(exc)
    return entry


def run_with_cuda_python(context, names, host_in, host_out):
    """cuMemAlloc, cuMemcpyHtoDAsync, execute_async_v3 on a new stream, cuMemcpyDtoHAsync, in
    the device's primary context (torch's)."""
    from cuda.bindings import driver

    def checked(result):
        if int(getattr(result[0], "value", result[0])) != 0:
            raise RuntimeError(getattr(result[0], "name", str(result[0])))
        return result[1] if len(result) > 1 else None

    checked(driver.cuInit(0))
    device = checked(driver.cuDeviceGet(0))
    checked(driver.cuCtxSetCurrent(checked(driver.cuDevicePrimaryCtxRetain(device))))
    stream = checked(driver.cuStreamCreate(0))
    buffers = [checked(driver.cuMemAlloc(a.nbytes)) for a in (host_in, host_out)]
    try:
        checked(driver.cuMemcpyHtoDAsync(buffers[0], host_in.ctypes.data, host_in.nbytes, stream))
        context.set_tensor_address(names[0], int(buffers[0]))
        context.set_tensor_address(names[1], int(buffers[1]))
        if not context.execute_async_v3(int(stream)):
            raise RuntimeError("execute_async_v3 returned False")
        checked(driver.cuMemcpyDtoHAsync(host_out.ctypes.data, buffers[1], host_out.nbytes,
                                         stream))  # fmt: skip
        checked(driver.cuStreamSynchronize(stream))
    finally:
        for buffer in buffers:
            driver.cuMemFree(buffer)
        driver.cuStreamDestroy(stream)
        driver.cuDevicePrimaryCtxRelease(device)


def run_with_pycuda(context, names, host_in, host_out):
    """pycuda's mem_alloc, memcpy_htod_async, execute_async_v3 on a pycuda Stream and
    memcpy_dtoh_async, in the device's primary context (torch's)."""
    import pycuda.driver as cuda

    cuda.init()
    primary = cuda.Device(0).retain_primary_context()
    primary.push()
    try:
        stream = cuda.Stream()
        buffers = [cuda.mem_alloc(a.nbytes) for a in (host_in, host_out)]
        cuda.memcpy_htod_async(buffers[0], host_in, stream)
        context.set_tensor_address(names[0], int(buffers[0]))
        context.set_tensor_address(names[1], int(buffers[1]))
        if not context.execute_async_v3(stream.handle):
            raise RuntimeError("execute_async_v3 returned False")
        cuda.memcpy_dtoh_async(host_out, buffers[1], stream)
        stream.synchronize()
        for buffer in buffers:
            buffer.free()
    finally:
        primary.pop()


def torch_tensorrt_module(torch, model, x, reference, result):
    stage("importing torch_tensorrt")
    try:
        import torch_tensorrt
    except BaseException as exc:
        result["torch_tensorrt"] = {"installed": False, "error": describe(exc)}
        return
    entry = {"installed": True, "version": getattr(torch_tensorrt, "__version__", None),
             "precision": "fp32", "converted": False, "error": None}  # fmt: skip
    result["torch_tensorrt"] = entry
    try:
        stage("compiling with Torch-TensorRT")
        start = time.perf_counter()
        compiled = torch_tensorrt.compile(model, inputs=[x])
        entry["build_seconds"] = round(time.perf_counter() - start, 3)
        entry["converted"] = True
        measured(torch, entry, compiled, x, reference, result)
    except Exception as exc:
        entry["error"] = describe(exc)
