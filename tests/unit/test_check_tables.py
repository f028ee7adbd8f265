"""Checks in-process, as tables: captured probe facts in, findings out."""

import itertools

import pytest

from jetson_env import doctor, fixing
from jetson_env.checks import BY_NAME, docker, packages, tensorrt_python
from jetson_env.checks.context import Facts
from jetson_env.findings import SEVERITY, Finding
from jetson_env.fleet import page as fleet_page
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult

MATRIX = load()
X86_PLATFORM = {
    "is_jetson": False, "machine": "x86_64", "l4t": None, "l4t_source": None, "board": None,
    "model": None, "soc": None, "gpus": [{"name": "NVIDIA H100", "compute_capability": "9.0"}],
    "os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04"},
    "python": {"version": "3.12.3", "executable": "/opt/venv/bin/python3"}, "uid": 0,
    "unknown": {},
}  # fmt: skip


def facts(**data) -> Facts:
    results = {"platform": ProbeResult("platform", X86_PLATFORM, None, 0.1)}
    results |= {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}
    platform = {**X86_PLATFORM, "compute_capability": "9.0", "jetpack": None, "supported": True}
    return Facts(results, MATRIX, platform)


@pytest.mark.parametrize(
    "manager, start, restart",
    [
        ("systemd", "systemctl start docker", "systemctl restart docker"),
        ("service", "service docker start", "service docker restart"),
        (None, "sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'",
         "sh -c 'kill $(cat /var/run/docker.pid); sleep 3; nohup dockerd >/var/log/dockerd.log"
         " 2>&1 &'"),
    ],
    ids=["systemd", "init-script", "no-service-manager"],
)  # fmt: skip
def test_docker_remedies_use_the_service_manager_that_runs_there(manager, start, restart):
    down = {"cli": "/usr/bin/docker", "engine": {"reachable": False, "error": "no socket"},
            "csv_lists": [], "service_manager": manager}  # fmt: skip
    engine, daemon_json = docker.run(facts(docker=down))
    assert engine.remedy.shell == start
    assert "restart" not in daemon_json.remedy.shell  # the engine reads it when it starts
    no_runtime = {**down, "engine": {"reachable": True, "runtimes": ["runc"]}}
    engine, daemon_json = docker.run(facts(docker=no_runtime))
    assert engine.remedy.shell.endswith(daemon_json.remedy.shell)  # after installing the runtime
    assert engine.remedy.shell.endswith(f" && {restart}")


@pytest.mark.parametrize(
    "library, cuda, requirement",
    [
        ("8.5.3", "11.4", "'tensorrt==8.5.3.*'"),
        ("10.3.0", "12.6", "'tensorrt-cu12==10.3.0.*'"),
        ("10.13.2", "13.0", "'tensorrt-cu13==10.13.2.*'"),
    ],
)
def test_tensorrt_bindings_remedy_is_pinned_to_libnvinfer(library, cuda, requirement):
    loaded = {"name": "libnvinfer.so", "version": library} if library else None
    found = facts(
        tensorrt={"files": [], "loaded": loaded},
        tensorrt_bindings={"imported": True, "version": "8.6.1", "file": "/x/tensorrt"},
        cuda={"version": cuda, "root": "/usr/local/cuda"},
    )
    assert tensorrt_python.install_remedy(found) == (
        f"/opt/venv/bin/python3 -m pip install {requirement}"
    )
    if library == "8.5.3":
        (finding,) = tensorrt_python.run(found)
        assert finding.summary.startswith("tensorrt 8.6.1 imports, but libnvinfer is 8.5.3")


def test_an_x86_host_without_tensorrt_gets_one_remedy_the_matrix_pin_from_pip():
    """libnvinfer and the bindings used to disagree: a login-walled tarball for one, an
    unpinned `pip install tensorrt-cu13` (TensorRT 11, which torch2trt cannot use) for the
    other. The fix asks the tensorrt role for TensorRT itself, not its onnx set."""
    found = facts(
        tensorrt={"files": [], "loaded": None, "headers": []},
        tensorrt_bindings={"imported": False,
                           "error": "ModuleNotFoundError: No module named 'tensorrt'"},
        cuda={"version": "13.0", "root": "/usr/local/cuda"},
    )  # fmt: skip
    (library,) = BY_NAME["libnvinfer"].run(found)
    (bindings,) = BY_NAME["tensorrt-python"].run(found)
    assert library.remedy == bindings.remedy
    assert library.remedy.shell == (
        "/opt/venv/bin/python3 -m pip install tensorrt-cu13==10.16.1.11 && /opt/venv/bin/python3"
        " -c 'import os; import tensorrt_libs; print(os.path.dirname(tensorrt_libs.__file__))'"
        " | tee /etc/ld.so.conf.d/jetson-env-tensorrt.conf && ldconfig"
    )
    assert library.as_dict()["playbook"] == {
        "role": "tensorrt", "tags": ["tensorrt"],
        "vars": {"jetson_facts_python": "/opt/venv/bin/python3", "tensorrt_sets": ["tensorrt"]},
    }  # fmt: skip


def test_a_failing_tensorrt_import_is_reinstalled_as_the_tensorrt_role_installs_tensorrt():
    """`import tensorrt` fails for a reason of its own: see the whole error, then reinstall
    the matrix's pin as the tensorrt role does, asking it for TensorRT itself (not its onnx
    set). Its plain-text reinstall used to become a Remedy with neither a role nor a reason,
    which raised."""
    found = facts(
        tensorrt=trt("tarball", "/opt/TensorRT-10.16.1.11/lib"),
        tensorrt_bindings={"imported": False,
                           "error": "ImportError: libcublas.so.13: undefined symbol: cublasLtX"},
        cuda={"version": "13.0", "root": "/usr/local/cuda"},
    )  # fmt: skip
    (finding,) = BY_NAME["tensorrt-python"].run(found)
    assert finding.summary == "import tensorrt fails"
    assert finding.remedy.shell == (
        "run /opt/venv/bin/python3 -c 'import tensorrt' to see the whole error; reinstall: "
        "/opt/venv/bin/python3 -m pip install 'tensorrt-cu13==10.16.1.*'"
    )
    assert finding.as_dict()["playbook"] == {
        "role": "tensorrt", "tags": ["tensorrt"], "vars": {"tensorrt_sets": ["tensorrt"]},
    }  # fmt: skip


def test_quick_packages_pairs_torch_and_torchvision_from_metadata():
    metadata = {"packages": {
        "torch": {"installed": True, "version": "2.11.0"},
        "torchvision": {"installed": True, "version": "0.25.0"},
        "tensorrt": {"installed": True, "version": "10.3.0"},
        "torch2trt": {"installed": False, "version": None},
        "pycuda": {"installed": True, "version": None},
    }}  # fmt: skip
    found = facts(packages=metadata, tensorrt={"files": [], "loaded": {"version": "10.3.0"}},
                  cuda={"version": "13.0", "root": "/usr/local/cuda"})  # fmt: skip
    rows = [(f.status, f.summary) for f in packages.run(found)]
    assert rows == [
        ("ok", "torch 2.11.0 (package metadata; not imported (--quick))"),
        ("fail", "torchvision 0.25.0 does not pair with torch 2.11.0 "
                 "(torch 2.11.0 needs torchvision 0.26.x)"),
        ("ok", "tensorrt 10.3.0 (package metadata; not imported (--quick))"),
        ("fail", "torch2trt is not installed for /opt/venv/bin/python3"),
        ("ok", "pycuda (version unknown) (package metadata; not imported (--quick))"),
    ]  # fmt: skip


def test_quick_packages_says_torch2trt_cannot_use_tensorrt_11():
    metadata = {"packages": {
        "torch": {"installed": True, "version": "2.14.1"},
        "torchvision": {"installed": True, "version": "0.29.1"},
        "tensorrt": {"installed": True, "version": "11.4.0.106"},
        "torch2trt": {"installed": True, "version": "0.5.0"},
        "pycuda": {"installed": True, "version": "2025.1.3"},
    }}  # fmt: skip
    found = facts(packages=metadata, tensorrt={"files": [], "loaded": {"version": "11.4.0.106"}},
                  cuda={"version": "13.0", "root": "/usr/local/cuda"})  # fmt: skip
    torch2trt = packages.run(found)[3]
    assert torch2trt.status == "fail"
    assert torch2trt.summary.startswith("torch2trt cannot convert with TensorRT 11.4.0.106: ")
    assert "tensorrt-cu13==10.16.1.11" in torch2trt.remedy.shell


def test_a_failed_probe_shared_by_checks_is_one_crash():
    found = facts()
    found.results["torch"] = ProbeResult("torch", None, "probe 'torch' was killed by SIGSEGV", 1)
    rows = [(f.check, f.status, f.summary) for f in
            doctor.run_checks([BY_NAME["torch"], BY_NAME["torchvision"]], found)]  # fmt: skip
    assert rows == [
        ("torch", "crash", "probe 'torch' was killed by SIGSEGV"),
        ("torchvision", "skip", "not checked: see torch (probe 'torch')"),
    ]


def test_fixes_are_each_remedy_once_in_order():
    found = facts(pymodules={"python": {}, "modules": {"termcolor": {"importable": False}}})
    findings = doctor.run_checks([BY_NAME["termcolor"]], found)
    twice = [*findings, findings[0]]
    report = doctor.Report("local", None, twice, found.results).as_dict()
    assert report["fixes"] == [
        {"number": 1, "checks": ["termcolor"],
         "command": "/opt/venv/bin/python3 -m pip install termcolor", "words": False,
         "note": None},
    ]  # fmt: skip


def test_without_the_smoke_pycuda_is_checked_without_a_context():
    no_gpu_work = {"installed": True, "importable": True, "version": "2026.1",
                   "driver_version": 13000, "device_count": 1, "without_context": None,
                   "context": None, "round_trip": None, "gpu_work": False,
                   "error": None}  # fmt: skip
    (finding,) = BY_NAME["pycuda"].run(facts(pycuda=no_gpu_work, cuda={}))
    assert finding.status == "ok"
    assert "context and round trip run with the smoke" in finding.summary
    (failed,) = BY_NAME["pycuda"].run(facts(pycuda={**no_gpu_work, "gpu_work": True}, cuda={}))
    assert failed.status == "fail"  # with GPU work, a round trip that did not run is a failure


@pytest.mark.parametrize(
    "nms_cuda, status, summary",
    [
        ({"ok": True, "error": None, "result": None, "ran": False}, "ok",
         "ops.nms works on CPU (CUDA kernel registered)"),
        ({"ok": True, "error": None, "result": [0]}, "ok", "ops.nms works on CPU and CUDA"),
        ({"ok": False, "error": "torchvision::nms has no CUDA kernel: built without CUDA",
          "result": None, "ran": False}, "fail", "torchvision.ops.nms fails on CUDA"),
    ],
    ids=["registered-not-run", "ran", "not-registered"],
)  # fmt: skip
def test_torchvision_nms_on_cuda_ran_or_only_registered(nms_cuda, status, summary):
    torch = {"installed": True, "importable": True, "version": "2.11.0", "cuda_build": "13.0",
             "cuda_available": True, "device_count": 1, "devices": [], "arch_list": [],
             "error": None}  # fmt: skip
    vision = {"installed": True, "importable": True, "version": "0.26.0", "cuda_build": "13.0",
              "import_warnings": [], "nms_cpu": {"ok": True, "error": None, "result": [0]},
              "nms_cuda": nms_cuda, "error": None}  # fmt: skip
    (finding,) = BY_NAME["torchvision"].run(facts(torch={"torch": torch, "torchvision": vision}))
    assert finding.status == status
    assert summary in finding.summary


TORCH_215 = {"installed": True, "importable": True, "version": "2.15.0+cu132",
             "cuda_build": "13.2", "cuda_available": True, "device_count": 1, "devices": [],
             "arch_list": ["sm_90"], "error": None}  # fmt: skip
TORCH_216 = {**TORCH_215, "version": "2.16.0+cu132"}
NMS_OK = {"installed": True, "importable": True, "cuda_build": "13.2", "import_warnings": [],
          "nms_cpu": {"ok": True, "error": None, "result": [0]},
          "nms_cuda": {"ok": True, "error": None, "result": [0]}, "error": None}  # fmt: skip


@pytest.mark.parametrize(
    "vision",
    [
        {"installed": False},
        {"installed": True, "importable": False, "version": "0.29.2",
         "error": "operator torchvision::nms does not exist"},
    ],
    ids=["missing", "ops-broken"],
)  # fmt: skip
def test_torchvision_remedy_for_a_torch_without_a_known_pair_never_pins_a_stale_one(vision):
    """A torch newer than every pair the matrix knows: the remedy says so and installs the
    matrix's torch, whose pair is known, instead of falling back to a pin."""
    (finding,) = BY_NAME["torchvision"].run(
        facts(torch={"torch": TORCH_216, "torchvision": vision})
    )
    remedy = finding.remedy.shell
    assert finding.status == "fail"
    assert remedy.startswith("no torchvision release is known to pair with torch 2.16.0+cu132")
    x86 = MATRIX.x86
    assert f"install the matrix's torch {x86.torch.version}, which pairs with torchvision" in remedy
    assert remedy.endswith(f"/opt/venv/bin/python3 -m pip install torch=={x86.torch.version}")
    assert "torchvision==" not in remedy


@pytest.mark.parametrize(
    "torch_version, vision_version, status, summary, source, requirement",
    [
        # torchvision 0.29.1 and 0.29.2 declare torch>=2.14.0: a 2.15 user keeps torch.
        ("2.15.0+cu132", "0.29.2", "ok", "torchvision 0.29.2 (pairs with torch 2.15.0+cu132)",
         "torchvision 0.29.1's Requires-Dist: torch>=2.14.0", "'torchvision==0.29.*,>=0.29.1'"),
        # 0.29.0 pins torch==2.14.0.
        ("2.15.0+cu132", "0.29.0", "fail", "torchvision 0.29.0 does not pair with torch "
         "2.15.0+cu132 (torch 2.15.0+cu132 needs torchvision 0.29.x from 0.29.1)",
         "torchvision 0.29.1's Requires-Dist: torch>=2.14.0", "'torchvision==0.29.*,>=0.29.1'"),
        ("2.14.0", "0.29.0+cu130", "ok", "torchvision 0.29.0+cu130 (pairs with torch 2.14.0)",
         "torchvision 0.29.0's Requires-Dist: torch==2.14.0", "'torchvision==0.29.*'"),
        # A local label on either side is the same release (the GPU server's pair).
        ("2.11.0+cu130", "0.26.0+cu130", "ok",
         "torchvision 0.26.0+cu130 (pairs with torch 2.11.0+cu130)",
         "torchvision 0.26.0's Requires-Dist: torch==2.11.0", "'torchvision==0.26.*'"),
        ("2.11.0+cu130", "0.25.0+cu130", "fail", "torchvision 0.25.0+cu130 does not pair with "
         "torch 2.11.0+cu130 (torch 2.11.0+cu130 needs torchvision 0.26.x)",
         "torchvision 0.26.0's Requires-Dist: torch==2.11.0", "'torchvision==0.26.*'"),
        # Patch pins: each wheel requires one torch release exactly.
        ("2.9.0", "0.24.1", "fail", "torchvision 0.24.1 does not pair with torch 2.9.0 (torch "
         "2.9.0 needs torchvision 0.24.x, not 0.24.1)",
         "torchvision 0.24.0's Requires-Dist: torch==2.9.0", "'torchvision==0.24.*,!=0.24.1'"),
        ("2.9.1", "0.24.0", "fail", "torchvision 0.24.0 does not pair with torch 2.9.1 (torch "
         "2.9.1 needs torchvision 0.24.x from 0.24.1)",
         "torchvision 0.24.1's Requires-Dist: torch==2.9.1", "'torchvision==0.24.*,>=0.24.1'"),
        ("2.12.1", "0.27.0", "fail", "torchvision 0.27.0 does not pair with torch 2.12.1 (torch "
         "2.12.1 needs torchvision 0.27.x from 0.27.1)",
         "torchvision 0.27.1's Requires-Dist: torch==2.12.1", "'torchvision==0.27.*,>=0.27.1'"),
        ("2.5.1", "0.20.0", "fail", "torchvision 0.20.0 does not pair with torch 2.5.1 (torch "
         "2.5.1 needs torchvision 0.20.x from 0.20.1)",
         "torchvision 0.20.1's Requires-Dist: torch==2.5.1", "'torchvision==0.20.*,>=0.20.1'"),
    ],
    ids=["2.15-0.29.2", "2.15-0.29.0", "2.14.0-0.29.0", "local-labels", "local-labels-unpaired",
         "2.9.0-0.24.1", "2.9.1-0.24.0", "2.12.1-0.27.0", "2.5.1-0.20.0"],
)  # fmt: skip
def test_torchvision_pairing_says_where_the_pair_comes_from(
    torch_version, vision_version, status, summary, source, requirement
):
    torch = {**TORCH_215, "version": torch_version}
    vision = {**NMS_OK, "version": vision_version}
    (finding,) = BY_NAME["torchvision"].run(facts(torch={"torch": torch, "torchvision": vision}))
    assert (finding.status, finding.summary.split("; ops.nms")[0]) == (status, summary)
    assert f"pair: {source}" in finding.details
    missing = facts(torch={"torch": torch, "torchvision": {"installed": False}})
    (to_install,) = BY_NAME["torchvision"].run(missing)
    assert to_install.remedy.shell == (
        f"/opt/venv/bin/python3 -m pip install --no-deps {requirement}"
    )
    quick = packages.run(
        facts(
            packages={"packages": {"torch": {"installed": True, "version": torch_version},
                                   "torchvision": {"installed": True, "version": vision_version}}},
            tensorrt={"files": [], "loaded": None}, cuda={},
        )
    )  # fmt: skip
    quick_vision = next(f for f in quick if "torchvision" in f.summary)
    assert quick_vision.status == status
    if status == "fail":
        assert quick_vision.summary == summary
        assert quick_vision.details == (f"pair: {source}",)


def test_torchvision_remedy_pins_the_pair_of_the_torch_installed():
    torch = {**TORCH_215, "version": "2.14.1"}
    (finding,) = BY_NAME["torchvision"].run(
        facts(torch={"torch": torch, "torchvision": {"installed": False}})
    )
    assert (
        finding.remedy.shell
        == "/opt/venv/bin/python3 -m pip install --no-deps 'torchvision==0.29.*,>=0.29.1'"
    )


# The smoke probe's result (docs/json.md) on a GPU with fast fp16, every stage passing; the
# rows below change one thing each. The skipped one is what an H100 without TensorRT gave
# (docs/gpu-verification.md).
SMOKE_PASSING = {
    "torch": "2.5.0", "device": "Orin", "skipped": None,
    "reference": {"latency_ms": 1.25, "output_shape": [1, 10]},
    "tensorrt": "10.3.0", "torch2trt": True,
    "fp16": {"supported": True, "source": "builder.platform_has_fast_fp16"},
    "conversions": [
        {"precision": "fp32", "converted": True, "error": None, "build_seconds": 14.2,
         "max_abs_error": 2.4e-06, "tolerance": 1e-3, "within_tolerance": True,
         "latency_ms": 0.5, "speedup": 2.5},
        {"precision": "fp16", "converted": True, "error": None, "build_seconds": 30.0,
         "max_abs_error": 1.2e-03, "tolerance": 5e-2, "within_tolerance": True,
         "latency_ms": 0.25, "speedup": 5.0},
    ],
    "reload": {"done": True, "error": None, "bytes": 81234, "max_abs_difference": 0.0,
               "same_output": True},
}  # fmt: skip
FP32, FP16 = SMOKE_PASSING["conversions"]
REFERENCE = ("ok", "PyTorch reference (torch 2.5.0) on Orin: 1.250 ms", ())
FP32_OK = ("ok", "torch2trt fp32 (TensorRT 10.3.0): max abs error 2.40e-06 (tolerance 0.001), "
           "0.500 ms, 2.5x PyTorch", ("engine built in 14.2 s",))  # fmt: skip
FP16_OK = ("ok", "torch2trt fp16 (TensorRT 10.3.0): max abs error 1.20e-03 (tolerance 0.05), "
           "0.250 ms, 5.0x PyTorch", ("engine built in 30.0 s",))  # fmt: skip
RELOADED = ("ok", "engine saved (81234 bytes) and reloaded: same output", ())


@pytest.mark.parametrize(
    "changed, expected",
    [
        ({}, [REFERENCE, FP32_OK, FP16_OK, RELOADED]),
        ({"conversions": [{**FP32, "max_abs_error": 2.5e-03, "within_tolerance": False}, FP16]},
         [REFERENCE,
          ("fail", "torch2trt fp32 (TensorRT 10.3.0): max abs error 2.50e-03 (tolerance 0.001), "
                   "0.500 ms, 2.5x PyTorch", ("engine built in 14.2 s",)),
          FP16_OK, RELOADED]),
        ({"reload": {**SMOKE_PASSING["reload"], "max_abs_difference": 0.5, "same_output": False}},
         [REFERENCE, FP32_OK, FP16_OK,
          ("fail", "engine save/reload (TRTModule state_dict) gave a different output",
           ("max difference 0.5",))]),
        ({"reload": {"done": False, "error": "RuntimeError: no engine in the state dict"}},
         [REFERENCE, FP32_OK, FP16_OK,
          ("fail", "engine save/reload (TRTModule state_dict) failed",
           ("RuntimeError: no engine in the state dict",))]),
        ({"fp16": {"supported": False, "source": "compute capability"}, "conversions": [FP32]},
         [REFERENCE, FP32_OK,
          ("skip", "fp16 not converted: no fast fp16 on this GPU (compute capability)", ()),
          RELOADED]),
        ({"conversions": [{"precision": "fp32", "converted": False,
                           "error": "AttributeError: 'Tensor' object has no attribute '_trt'"}],
          "reload": None, "fp16": {"supported": False, "source": "compute capability"}},
         [REFERENCE,
          ("fail", "torch2trt fp32: conversion failed",
           ("AttributeError: 'Tensor' object has no attribute '_trt'",)),
          ("skip", "fp16 not converted: no fast fp16 on this GPU (compute capability)", ())]),
        ({"conversions": [{**FP32, "error": "RuntimeError: CUDA error: an illegal memory access"},
                          FP16], "reload": None},
         [REFERENCE,
          ("fail", "torch2trt fp32: inference failed",
           ("RuntimeError: CUDA error: an illegal memory access",)),
          FP16_OK]),
        ({"torch": "2.11.0+cu130", "device": "NVIDIA H100 80GB HBM3",
          "reference": {"latency_ms": 0.197, "output_shape": [1, 10]}, "tensorrt": None,
          "torch2trt": None, "fp16": None, "conversions": [], "reload": None,
          "skipped": "tensorrt is not importable (ModuleNotFoundError: No module named "
                     "'tensorrt')"},
         [("ok", "PyTorch reference (torch 2.11.0+cu130) on NVIDIA H100 80GB HBM3: 0.197 ms",
           ()),
          ("skip", "conversion not run: tensorrt is not importable (ModuleNotFoundError: No "
                   "module named 'tensorrt')", ())]),
    ],
    ids=["passing", "fp32-beyond-tolerance", "reload-different-output", "reload-failed",
         "no-fast-fp16", "conversion-failed", "inference-failed", "h100-without-tensorrt"],
)  # fmt: skip
def test_smoke_judging(changed, expected):
    found = facts(smoke={**SMOKE_PASSING, **changed})
    findings = doctor.run_checks([BY_NAME["smoke"]], found)
    assert [(f.status, f.summary, f.details) for f in findings] == expected


@pytest.mark.parametrize("worse, better", list(itertools.combinations(SEVERITY, 2)))
def test_one_severity_order_sums_up_a_check_a_host_and_a_run(worse, better):
    """A check's cell on the fleet page, its move in --fix's before -> after, and the run's
    status all take the worse of two findings (skip alone counts as ok for the run)."""
    both = [Finding("smoke", "smoke", better, "b"), Finding("smoke", "smoke", worse, "w")]
    page_host = {"report": {"findings": [f.as_dict() for f in both]}}
    assert fleet_page.cells(page_host)["smoke"][0] == worse
    before, after = (doctor.Report("local", None, found, {}) for found in (both[:1], both))
    assert fixing.before_after(before, after) == [("smoke", better, worse)]
    assert after.status == worse


def trt(kind, directory, version="10.16.1.11", headers=()):
    return {"files": [{"path": f"{directory}/libnvinfer.so.{version.split('.')[0]}",
                       "dir": directory, "kind": kind, "version": version,
                       "major": int(version.split(".")[0]), "in_ldconfig_cache": True}],
            "loaded": {"name": "libnvinfer.so.10", "version": version},
            "headers": list(headers)}  # fmt: skip


def test_torch2trt_with_tensorrt_11_says_what_fails_and_both_ways_out():
    found = facts(
        torch2trt={"installed": True, "importable": True, "version": "0.5.0",
                   "plugin_files": [], "registry_creators": []},
        tensorrt=trt("pip", "/opt/venv/lib/python3.12/site-packages/tensorrt_libs",
                     "11.4.0.106"),
    )  # fmt: skip
    (finding,) = BY_NAME["torch2trt"].run(found)
    assert finding.status == "fail"
    assert finding.summary.startswith("torch2trt cannot convert with TensorRT 11.4.0.106: ")
    assert "NetworkDefinitionCreationFlag.EXPLICIT_BATCH" in finding.summary
    assert "BuilderFlag.FP16" in finding.summary
    # No Torch-TensorRT release requires TensorRT 11.4 (2.14.0 requires 11.1): ONNX only.
    assert finding.details == (
        "way out 1: TensorRT 10.16.1.11 (the matrix's, below 11), the remedy below",
        "way out 2: keep TensorRT 11.4.0.106 and convert with ONNX export + TensorRT's "
        "OnnxParser instead (the smoke runs each one that is installed)",
    )
    assert finding.remedy.role == "tensorrt"
    assert "tensorrt-cu13==10.16.1.11" in finding.remedy.shell


CLONE = ("git clone https://github.com/NVIDIA-AI-IOT/torch2trt.git torch2trt-src && "
         "cd torch2trt-src && git checkout 4e820ae31b4e35d59685935223b05b2e11d47b03")  # fmt: skip
PY = "/opt/venv/bin/python3"


@pytest.mark.parametrize(
    "tensorrt, expected, variables",
    [
        (trt("system", "/usr/lib/x86_64-linux-gnu", headers=["/usr/include/x86_64-linux-gnu"]),
         f"{PY} -m pip install packaging setuptools wheel && {CLONE} && sed -i "
         "'s|\"/usr/include/aarch64-linux-gnu\"|\"/usr/include/x86_64-linux-gnu\"|;"
         "s|\"/usr/lib/aarch64-linux-gnu\"|\"/usr/lib/x86_64-linux-gnu\"|' setup.py && "
         "env CPATH=/usr/include/x86_64-linux-gnu:/usr/local/cuda/include "
         "LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64 "
         f"{PY} setup.py bdist_wheel --dist-dir dist --plugins && "
         f"{PY} -m pip install --no-deps --force-reinstall dist/torch2trt-*.whl && "
         "sed -i 's/set(CUDA_ARCHITECTURES [^)]*)/set(CUDA_ARCHITECTURES 90)/' CMakeLists.txt"
         " && cmake -B build . -DCMAKE_POLICY_VERSION_MINIMUM=3.5 && "
         "cmake --build build --target install && ldconfig",
         {"torch2trt_tensorrt_include_dir": "/usr/include/x86_64-linux-gnu",
          "torch2trt_tensorrt_lib_dir": "/usr/lib/x86_64-linux-gnu"}),
        (trt("tarball", "/opt/TensorRT-10.16.1.11/lib",
             headers=["/opt/TensorRT-10.16.1.11/include"]),
         "/opt/TensorRT-10.16.1.11/include:/usr/local/cuda/include",
         {"torch2trt_tensorrt_include_dir": "/opt/TensorRT-10.16.1.11/include",
          "torch2trt_tensorrt_lib_dir": "/opt/TensorRT-10.16.1.11/lib"}),
        (trt("pip", "/opt/venv/lib/python3.12/site-packages/tensorrt_libs"),
         f"{PY} -m pip install packaging setuptools wheel && {CLONE} && "
         f"{PY} setup.py bdist_wheel --dist-dir dist && "
         f"{PY} -m pip install --no-deps --force-reinstall dist/torch2trt-*.whl",
         {}),
    ],
    ids=["deb", "tarball", "pip-no-headers"],
)  # fmt: skip
def test_torch2trt_remedy_is_the_roles_steps_for_this_tensorrt_layout(tensorrt, expected,
                                                                     variables):  # fmt: skip
    found = facts(torch2trt={"installed": False}, tensorrt=tensorrt)
    (finding,) = BY_NAME["torch2trt"].run(found)
    assert finding.remedy.role == "torch2trt"
    assert dict(finding.remedy.variables) == {"jetson_facts_python": PY, **variables}
    if expected.startswith(PY):
        assert finding.remedy.shell == expected
    else:
        assert expected in finding.remedy.shell and "CMAKE_POLICY_VERSION_MINIMUM=3.5" in (
            finding.remedy.shell
        )
    if not variables:
        assert finding.details == (
            "TensorRT's headers (NvInfer.h) are not on this host (pip's tensorrt_libs has none):"
            " torch2trt installs without its plugins. For them, unpack the TensorRT tarball of"
            " the same release and give the role its include/ and lib/ (-e "
            "torch2trt_tensorrt_include_dir=DIR/include -e torch2trt_tensorrt_lib_dir=DIR/lib),"
            " or install NVIDIA's libnvinfer-dev deb",
        )


ONNX_PASSING = {
    "converter": "onnx", "precision": "fp32", "exported": True, "converted": True, "error": None,
    "exporter": "torchscript (dynamo=False)", "onnx_bytes": 2345, "strongly_typed": False,
    "build_seconds": 3.2, "max_abs_error": 1.9e-06, "tolerance": 1e-3, "within_tolerance": True,
    "latency_ms": 0.1, "speedup": 12.5,
    "engine": {"bytes": 40960, "reloaded": True,
               "sidecar": {"tensorrt": "11.4.0.106", "compute_capability": "9.0",
                           "device": "NVIDIA H100", "built_by": "jetson-env smoke (onnx)",
                           "built_at": "2026-11-25T18:00:00Z"}},
}  # fmt: skip
ON_11 = {"tensorrt": "11.4.0.106", "fp16": {"supported": True, "source": "compute capability"}}


@pytest.mark.parametrize(
    "changed, expected",
    [
        ({**ON_11, "torch2trt": False, "conversions": [], "reload": None,
          "torch2trt_error": "ModuleNotFoundError: No module named 'torch2trt'",
          "onnx": {**ONNX_PASSING, "strongly_typed": True},
          "torch_tensorrt": {"installed": False,
                             "error": "ModuleNotFoundError: No module named 'torch_tensorrt'"}},
         [REFERENCE,
          ("skip", "torch2trt not run: not importable (see the torch2trt finding)",
           ("ModuleNotFoundError: No module named 'torch2trt'",)),
          ("ok", "ONNX -> TensorRT 11.4.0.106 OnnxParser fp32, strongly typed: max abs error "
                 "1.90e-06 (tolerance 0.001), 0.100 ms, 12.5x PyTorch",
           ("engine built in 3.2 s", "exported with torch.onnx.export (torchscript (dynamo=False))",
            "engine file (40960 bytes) written with its sidecar, read back and run")),
          ("skip", "Torch-TensorRT not run: not installed",
           ("ModuleNotFoundError: No module named 'torch_tensorrt'",))]),
        ({**ON_11, "conversions": [{"precision": "fp32", "converted": False,
                                    "error": "AttributeError: type object 'tensorrt.tensorrt."
                                             "NetworkDefinitionCreationFlag' has no attribute "
                                             "'EXPLICIT_BATCH'"}],
          "reload": None, "onnx": {**ONNX_PASSING, "error": "OnnxParser: unsupported node",
                                   "converted": False, "engine": None}},
         [REFERENCE,
          ("fail", "torch2trt fp32: conversion failed (torch2trt cannot use TensorRT 11.4.0.106:"
                   " see the torch2trt finding)",
           ("AttributeError: type object 'tensorrt.tensorrt.NetworkDefinitionCreationFlag' has "
            "no attribute 'EXPLICIT_BATCH'",)),
          ("fail", "ONNX -> TensorRT 11.4.0.106 OnnxParser fp32: failed",
           ("OnnxParser: unsupported node",))]),
        ({"torch_tensorrt": {"installed": True, "version": "2.14.0", "precision": "fp32",
                             "converted": True, "error": None, "build_seconds": 9.0,
                             "max_abs_error": 0.2, "tolerance": 1e-3, "within_tolerance": False,
                             "latency_ms": 0.2, "speedup": 6.0}},
         [REFERENCE, FP32_OK, FP16_OK, RELOADED,
          ("fail", "Torch-TensorRT 2.14.0 fp32: max abs error 2.00e-01 (tolerance 0.001), "
                   "0.200 ms, 6.0x PyTorch", ("engine built in 9.0 s",))]),
    ],
    ids=["tensorrt-11-onnx-only", "torch2trt-on-11-and-onnx-failing", "torch-tensorrt-off"],
)  # fmt: skip
def test_smoke_judges_every_converter_on_its_own(changed, expected):
    found = facts(smoke={**SMOKE_PASSING, **changed})
    findings = doctor.run_checks([BY_NAME["smoke"]], found)
    assert [(f.status, f.summary, f.details) for f in findings] == expected


@pytest.mark.parametrize(
    "sidecar, problems",
    [
        ({"tensorrt": "10.16.1.11", "compute_capability": "9.0"}, []),
        ({"tensorrt": "10.16.1.7", "compute_capability": "9.0"}, []),
        ({"tensorrt": "10.3.0.30", "compute_capability": "8.7"},
         ["rebuild: built by TensorRT 10.3.0.30 for compute capability 8.7, this host has "
          "TensorRT 10.16.1.11 and compute capability 9.0"]),
        ({"compute_capability": "9.0"}, ["unknown: its TensorRT was not read"]),
    ],
    ids=["same", "another-build-of-the-release", "an-orin-engine-on-an-h100", "no-tensorrt"],
)  # fmt: skip
def test_an_engine_sidecar_says_why_the_file_will_not_load_here(sidecar, problems):
    found = facts(tensorrt={"files": [], "loaded": {"name": "libnvinfer.so.10",
                                                    "version": "10.16.1.11"}},
                  smoke={**SMOKE_PASSING, "onnx": {**ONNX_PASSING,
                                                   "engine": {**ONNX_PASSING["engine"],
                                                              "sidecar": sidecar}}})  # fmt: skip
    here, engine = BY_NAME["engine-portability"].run(found)
    assert here.status == "ok"
    assert engine.status == ("fail" if problems else "ok")
    assert all(problem in engine.summary for problem in problems)
    assert problems or "loads here" in engine.summary


def test_an_onnx_export_without_the_onnx_package_is_fixed_by_the_tensorrt_roles_onnx_set():
    """torch 2.13 (CPU) without onnx: torch.onnx.export(..., dynamo=False) raised this. onnx is
    the ONNX converter's (TensorRT's OnnxParser): the tensorrt role's `onnx` set alone, which
    leaves TensorRT itself as it is, not python_base's (termcolor's role)."""
    failed = {
        **ONNX_PASSING,
        "exported": False,
        "converted": False,
        "engine": None,
        "error": "torch.onnx.export: OnnxExporterError: Module onnx is not installed!",
    }
    for key in ("max_abs_error", "build_seconds"):
        failed.pop(key)  # fmt: skip
    found = facts(smoke={**SMOKE_PASSING, "onnx": failed})
    onnx = doctor.run_checks([BY_NAME["smoke"]], found)[-1]
    assert (onnx.status, onnx.summary) == (
        "fail",
        "ONNX -> TensorRT 10.3.0 OnnxParser fp32: failed",
    )
    assert onnx.remedy.shell == "/opt/venv/bin/python3 -m pip install onnx"
    assert onnx.as_dict()["playbook"] == {
        "role": "tensorrt", "tags": ["tensorrt"],
        "vars": {"jetson_facts_python": "/opt/venv/bin/python3", "tensorrt_sets": ["onnx"]},
    }  # fmt: skip


def test_torch2trt_on_a_python_314_host_is_left_out_unless_installed():
    """Python 3.14: the matrix's TensorRT is 11.1.0.106 (no 10.x has cp314 bindings), which
    torch2trt cannot use; the torch2trt role leaves it out there, so the doctor skips it with
    the converters that work (ONNX, and Torch-TensorRT 2.14.0, whose Requires-Dist admits torch
    2.14.1 and TensorRT 11.1). A torch2trt someone installed anyway still fails."""
    py314 = {**X86_PLATFORM, "python": {"version": "3.14.0", "executable": "/usr/bin/python3"}}
    tensorrt = trt("pip", "/usr/lib/python3/dist-packages/tensorrt_libs", "11.1.0.106")
    torch = {"torch": {"installed": True, "importable": True, "version": "2.14.1+cu130"}}

    def run(torch2trt: dict):
        results = {"platform": ProbeResult("platform", py314, None, 0.1)}
        found = {"torch2trt": torch2trt, "tensorrt": tensorrt, "torch": torch}
        results |= {name: ProbeResult(name, value, None, 0.1) for name, value in found.items()}
        described = {**py314, "compute_capability": "9.0", "jetpack": None, "supported": True}
        (finding,) = BY_NAME["torch2trt"].run(Facts(results, MATRIX, described))
        return finding

    left_out = run({"installed": False})
    assert left_out.status == "skip" and left_out.remedy is None
    assert left_out.summary == (
        "torch2trt is left out: it cannot use TensorRT 11.1.0.106, and this host has no TensorRT"
        " it can use"
    )
    assert any("convert with ONNX export" in line for line in left_out.details)
    installed = run({"installed": True, "importable": True, "version": "0.5.0"})
    assert installed.status == "fail"
