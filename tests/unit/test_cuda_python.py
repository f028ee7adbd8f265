"""cuda-python as a checked and provisioned part: the check's findings from captured probe facts,
the matrix's rule for which cuda-python a host gets, and what a bundle carries for it."""

import pytest
from support.local_play import COLLECTION, run_on_localhost

from jetson_env.bundle import needs, targets
from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult

MATRIX = load()
PY = "/opt/venv/bin/python3"
CUDA = {"version": "13.0", "root": "/usr/local/cuda"}
SAMPLES = [{"path": "/usr/src/tensorrt/samples/python/common_runtime.py", "uses": ["cuda-python"]}]
WORKING = {
    "installed": True, "bindings": True, "importable": True, "version": "13.4.4",
    "cuda_python": "13.4.4", "driver_version": 13000, "runtime_version": 13040,
    "device_count": 1, "context": "created", "round_trip": True, "gpu_work": True,
    "error": None, "samples": SAMPLES,
}  # fmt: skip


def facts(
    python: str, cuda_python: dict, cuda: dict = CUDA, visibility: dict | None = None
) -> Facts:
    platform = {
        "visibility": visibility or {"device_nodes": ["/dev/nvidia0"]},
        "is_jetson": False, "machine": "x86_64", "l4t": None, "soc": None, "uid": 0,
        "gpus": [{"name": "NVIDIA H100", "compute_capability": "9.0"}], "unknown": {},
        "python": {"version": python, "executable": PY},
    }  # fmt: skip
    results = {
        "platform": ProbeResult("platform", platform, None, 0.1),
        "cuda_python": ProbeResult("cuda_python", cuda_python, None, 0.1),
        "cuda": ProbeResult("cuda", cuda, None, 0.1),
    }
    described = {**platform, "compute_capability": "9.0", "jetpack": None, "supported": True}
    return Facts(results, MATRIX, described)


def one(found: Facts):
    (finding,) = BY_NAME["cuda-python"].run(found)
    return finding


@pytest.mark.parametrize(
    ("python", "probe", "status", "summary"),
    [
        ("3.12.3", WORKING, "ok",
         "cuda.bindings 13.4.4 (driver CUDA 13.0, runtime CUDA 13.4): context and float32"
         " host<->device round trip"),
        ("3.12.3", {**WORKING, "gpu_work": False, "context": None, "round_trip": None}, "ok",
         "cuda.bindings 13.4.4 (driver CUDA 13.0, runtime CUDA 13.4) sees 1 device(s); its"
         " context and round trip run with the smoke"),
        ("3.12.3", {**WORKING, "round_trip": None, "error": "RuntimeError: CUDA_ERROR"},
         "fail", "cuda.bindings 13.4.4 (driver CUDA 13.0, runtime CUDA 13.4): context or round"
         " trip failed"),
        ("3.12.3", {**WORKING, "device_count": None, "error": "DynamicLibNotFoundError: cuda"},
         "warn", "cuda.bindings 13.4.4 imports but the CUDA driver does not initialise"),
        ("3.12.3", {**WORKING, "bindings": False, "importable": False, "version": None,
                    "cuda_python": "12.4.0"},
         "fail", "cuda-python 12.4.0 has no cuda.bindings (before 12.6 it was `from cuda import"
         " cuda, cudart`): TensorRT's samples import cuda.bindings"),
        ("3.12.3", {"installed": False, "samples": SAMPLES}, "warn",
         f"cuda-python is not installed for {PY} (NVIDIA's TensorRT samples use it from TensorRT"
         " 10.14 on)"),
        ("3.8.10", {"installed": False, "samples": [
            {"path": "/usr/src/tensorrt/samples/python/common.py", "uses": ["pycuda"]}]},
         "skip", f"cuda-python needs Python >=3.9; {PY} is 3.8.10: pycuda runs engines here"),
    ],
    ids=["round-trip", "without-smoke", "round-trip-failed", "no-driver", "before-12.6",
         "missing", "jetpack-5"],
)  # fmt: skip
def test_cuda_python_findings(python, probe, status, summary):
    finding = one(facts(python, probe))
    assert (finding.status, finding.summary) == (status, summary)
    uses = " and ".join(probe["samples"][0]["uses"])
    assert f"this host's TensorRT samples need {uses} ({probe['samples'][0]['path']})" in (
        finding.details
    )


def test_the_doctors_fix_on_python_3_10_with_cuda_13_names_the_last_line_for_3_10():
    """cuda-bindings 13.5.0 requires Python >=3.11: an Ubuntu 22.04 host with CUDA 13 gets 13.4."""
    finding = one(facts("3.10.12", {"installed": False, "samples": []}))
    assert finding.remedy.shell == f"{PY} -m pip install 'cuda-python==13.4.*'"


def test_missing_cuda_python_is_installed_by_the_pycuda_role_for_the_cuda_major():
    finding = one(facts("3.12.3", {"installed": False, "samples": []}))
    assert finding.remedy.shell == f"{PY} -m pip install 'cuda-python==13.*'"
    assert finding.remedy.role == "pycuda"
    assert "no TensorRT Python samples on this host" in finding.details[0]


@pytest.mark.parametrize(
    ("python", "cuda", "wanted"),
    [("3.12.3", "13.0", "cuda-python==13.*"), ("3.10.12", "12.6", "cuda-python==12.*"),
     ("3.11.9", "13.2", "cuda-python==13.*"), ("3.10.12", "13.0", "cuda-python==13.4.*"),
     ("3.9.18", "13.0", "cuda-python==13.0.*"),
     ("3.9.0", "12.2", "cuda-python==12.*"), ("3.8.10", "11.4", None), ("3.6.9", "10.2", None),
     ("3.12.3", None, None)],
)  # fmt: skip
def test_the_matrix_rule_for_cuda_python(python, cuda, wanted):
    assert MATRIX.cuda_python_for(python, cuda) == wanted


@pytest.mark.parametrize(
    ("l4t", "python", "wanted"),
    [("", "3.12", ["cuda-python==13.*"]), ("36.4.3", "3.10", ["cuda-python==12.*"]),
     ("", "3.10", ["cuda-python==13.4.*"]),
     ("35.4.1", "3.8", [])],
)  # fmt: skip
def test_a_bundle_carries_the_cuda_python_the_pycuda_role_installs(l4t, python, wanted):
    machine = "aarch64" if l4t else "x86_64"
    target = targets.BundleTarget(machine, python, "2.35", l4t)
    pip = needs.needs_for(MATRIX, target, ["pycuda"], {}).pip
    assert [r for s in pip if s.role == "pycuda" for r in s.requirements] == wanted


ONNX = {"converter": "onnx", "precision": "fp32", "exported": True, "converted": True,
        "error": None, "strongly_typed": False, "exporter": "torchscript (dynamo=False)",
        "build_seconds": 3.0, "max_abs_error": 1e-6, "tolerance": 1e-3, "within_tolerance": True,
        "latency_ms": 0.2, "speedup": 2.0,
        "engine": {"bytes": 1000, "sidecar": {}, "reloaded": True}}  # fmt: skip
SMOKE = {"torch": "2.14.1", "device": "NVIDIA H100", "skipped": None,
         "reference": {"latency_ms": 0.4, "output_shape": [1, 10]}, "tensorrt": "10.16.1",
         "torch2trt": None, "fp16": None, "conversions": [], "reload": None,
         "torch_tensorrt": None}  # fmt: skip


@pytest.mark.parametrize(
    ("host_runtime", "finding"),
    [
        ({"bindings": "cuda-python", "max_abs_error": 2e-6, "tolerance": 1e-3,
          "within_tolerance": True, "error": None},
         ("ok", "engine through cuda-python (host buffers, as TensorRT's samples run it): max abs"
          " error 2.00e-06 (tolerance 0.001)")),
        ({"bindings": "pycuda", "max_abs_error": 2e-6, "tolerance": 1e-3,
          "within_tolerance": True, "error": None},
         ("ok", "engine through pycuda (host buffers, as TensorRT's samples run it): max abs"
          " error 2.00e-06 (tolerance 0.001)")),
        ({"bindings": "cuda-python", "max_abs_error": None, "error": "RuntimeError: CUDA_ERROR"},
         ("fail", "engine through cuda-python: failed")),
        ({"bindings": None, "max_abs_error": None,
          "error": "neither cuda-python nor pycuda imports (ModuleNotFoundError: ...)"},
         ("skip", "engine through CUDA bindings: not run")),
    ],
    ids=["cuda-python", "pycuda", "failed", "no-bindings"],
)  # fmt: skip
def test_the_smoke_runs_its_engine_through_the_hosts_cuda_bindings(host_runtime, finding):
    found = facts("3.12.3", WORKING)
    smoke = {**SMOKE, "onnx": {**ONNX, "host_runtime": host_runtime}}
    found.results["smoke"] = ProbeResult("smoke", smoke, None, 0.1)
    findings = BY_NAME["smoke"].run(found)
    assert (findings[-1].status, findings[-1].summary) == finding


def test_what_hides_the_gpu_is_named_before_the_driver_is_blamed():
    """CUDA_VISIBLE_DEVICES set empty on an H100 (seen on the GPU machine, 2026-11-27: cuInit
    finds no device, and the check said "the CUDA driver does not initialise")."""
    hidden = {**WORKING, "device_count": None, "error": "CUDA_ERROR_NO_DEVICE"}
    finding = one(facts("3.12.3", hidden, visibility={"cuda_visible_devices": ""}))
    assert finding.status == "fail"
    assert finding.summary == (
        "cuda.bindings 13.4.4 imports, but CUDA_VISIBLE_DEVICES='' (set empty) hides every GPU:"
        " the CUDA driver sees no device"
    )
    assert finding.remedy.shell.startswith("unset CUDA_VISIBLE_DEVICES")
    assert finding.remedy.role is None


@pytest.mark.parametrize(
    ("python", "cuda", "wanted"),
    [("3.10.12", "13.0", "cuda-python==13.4.*"), ("3.12.3", "13.0", "cuda-python==13.*")],
)
def test_the_pycuda_role_installs_the_cuda_python_of_the_target_python(tmp_path, python, cuda,
                                                                       wanted):  # fmt: skip
    """The role's `_pycuda_cuda_python`, rendered by this venv's ansible-core through the
    collection's filter: the same pin as the doctor's fix and the bundle."""
    play = {"vars_files": [str(COLLECTION / "roles" / "pycuda" / "vars" / "main.yml")],
            "tasks": [{"ansible.builtin.debug": {"msg": "{{ _pycuda_cuda_python }}"}}]}  # fmt: skip
    variables = {
        "ansible_facts": {"jetson_env_python": {"version": python},
                          "jetson_env_cuda": {"version": cuda}},
        "jetson_facts_matrix_file": "",
    }  # fmt: skip
    rendered = run_on_localhost(tmp_path, play, variables)[0]["msg"]
    assert rendered.strip() == wanted
