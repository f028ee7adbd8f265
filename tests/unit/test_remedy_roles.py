"""Every check declares the role that fixes it: captured facts in, findings out, and each
warn/fail whose fix a role performs names that role in the finding, in `--json`
(`playbook`) and in --fix's plan; a remedy no role applies says why."""

import pytest

from jetson_env import collection, doctor, fixing, platform_in_matrix
from jetson_env.checks import BY_NAME, CHECKS
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, WARN
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult

MATRIX = load()
PYTHON = "/opt/venv/bin/python3"
X86 = {
    "is_jetson": False, "machine": "x86_64", "l4t": None, "l4t_source": None, "board": None,
    "model": None, "soc": None, "gpus": [{"name": "NVIDIA H100", "compute_capability": "9.0"}],
    "os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04"},
    "python": {"version": "3.12.3", "executable": PYTHON}, "uid": 0, "unknown": {},
}  # fmt: skip
ORIN = {
    **X86, "is_jetson": True, "machine": "aarch64", "l4t": "36.4.3", "l4t_source": "file",
    "board": "p3737-0000", "model": "NVIDIA Jetson AGX Orin", "soc": "tegra234", "gpus": [],
    "python": {"version": "3.10.12", "executable": PYTHON},
}  # fmt: skip
NO_CUDA = {"version": None, "root": None, "unknown": {"version": "no nvcc, no version.json"}}
CUDA = {"version": "12.6", "root": "/usr/local/cuda-12.6", "nvcc_on_path": True,
        "cuda_h_reachable": True, "profile_d": {"PATH": ["/etc/profile.d/cuda.sh"],
        "LD_LIBRARY_PATH": ["/etc/profile.d/cuda.sh"]},
        "cudart": {"library": "libcudart.so.12", "version": "12.6"},
        "compiler": "/usr/bin/cc"}  # fmt: skip
TORCH = {"installed": True, "importable": True, "version": "2.5.0a0+872d972e41.nv24.08",
         "cuda_build": "12.6", "cuda_available": True, "device_count": 1,
         "devices": [{"name": "Orin", "capability": "8.7"}], "arch_list": ["sm_87"],
         "error": None}  # fmt: skip
NOT_INSTALLED = {"installed": False}


def facts(platform: dict, **data) -> Facts:
    results = {"platform": ProbeResult("platform", platform, None, 0.1)}
    results |= {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}
    described = platform_in_matrix.describe(platform, data.get("cuda", {}), MATRIX)
    return Facts(results, MATRIX, described)


# (check, platform, probe data, the role that applies the fix; None: none, and it says why)
CASES = {
    "pycuda-missing": ("pycuda", ORIN, {"pycuda": NOT_INSTALLED, "cuda": CUDA}, "pycuda"),
    "pycuda-missing-x86": ("pycuda", X86, {"pycuda": NOT_INSTALLED, "cuda": CUDA}, "pycuda"),
    # The pycuda role builds only against a CUDA toolkit.
    "pycuda-missing-no-cuda": ("pycuda", X86, {"pycuda": NOT_INSTALLED, "cuda": NO_CUDA}, None),
    "pycuda-no-context": ("pycuda", X86, {"pycuda": {
        "installed": True, "importable": True, "version": "2025.1.3", "device_count": 1,
        "gpu_work": True, "without_context": "explicit_context_dependent failed",
        "context": {"ok": False, "error": "invalid device context"}, "round_trip": None},
        "cuda": CUDA}, None),
    "torch-missing": ("torch", ORIN, {"torch": {"torch": NOT_INSTALLED}, "cuda": CUDA},
                      "torch"),
    "torch-cpu-build": ("torch", X86, {"torch": {"torch": {
        **TORCH, "version": "2.11.0+cpu", "cuda_build": None}}}, "torch"),
    # Without a GPU a CPU torch is kept by the torch role: no role fixes the warning.
    "torch-cpu-build-no-gpu": ("torch", {**X86, "gpus": []}, {"torch": {"torch": {
        **TORCH, "version": "2.11.0+cpu", "cuda_build": None}}}, None),
    "torch-cuda-libraries-missing": ("torch", ORIN, {"torch": {"torch": {
        **TORCH, "importable": False,
        "error": "ImportError: libcublas.so.12: cannot open shared object file"}},
        "cuda": CUDA}, "jetpack_apt"),
    "torch-no-device": ("torch", ORIN, {"torch": {"torch": {
        **TORCH, "cuda_available": False}}, "cuda": CUDA}, None),
    "torchvision-missing": ("torchvision", ORIN, {"torch": {
        "torch": TORCH, "torchvision": NOT_INSTALLED}, "cuda": CUDA}, "torchvision"),
    "torchvision-unpaired": ("torchvision", X86, {"torch": {
        "torch": {**TORCH, "version": "2.11.0+cu130"},
        "torchvision": {"installed": True, "importable": True, "version": "0.25.0"}}},
        "torchvision"),
    "torchvision-torch-without-pair": ("torchvision", X86, {"torch": {
        "torch": {**TORCH, "version": "2.16.0+cu132"}, "torchvision": NOT_INSTALLED}},
        "torch"),
    "torch2trt-missing": ("torch2trt", ORIN, {"torch2trt": NOT_INSTALLED, "tensorrt": {
        "files": [], "loaded": {"name": "libnvinfer.so.10", "version": "10.3.0"}}},
        "torch2trt"),
    "tensorrt-bindings-missing": ("tensorrt-python", ORIN, {
        "tensorrt": {"files": [], "loaded": {"name": "libnvinfer.so.10", "version": "10.3.0"}},
        "tensorrt_bindings": {"imported": False,
                              "error": "ModuleNotFoundError: No module named 'tensorrt'"}},
        "tensorrt"),
    "libnvinfer-missing": ("libnvinfer", ORIN, {"tensorrt": {"files": [], "loaded": None}},
                           "tensorrt"),
    "libnvinfer-missing-x86": ("libnvinfer", X86, {"tensorrt": {"files": [], "loaded": None},
                                                   "cuda": CUDA}, "tensorrt"),
    "cuda-missing-jetson": ("cuda", ORIN, {"cuda": NO_CUDA}, "jetpack_apt"),
    "cuda-missing-x86": ("cuda", X86, {"cuda": NO_CUDA}, None),
    "cuda-not-in-login-shells": ("cuda", X86, {"cuda": {**CUDA, "profile_d": {}}}, "cuda_env"),
    "cudnn-missing-jetson": ("cudnn", ORIN, {"cudnn": {"version": None, "errors": {
        "libcudnn.so.9": "cannot open shared object file"}}}, "jetpack_apt"),
    "cudnn-missing-x86": ("cudnn", X86, {"cudnn": {"version": None, "errors": {}}}, None),
    "termcolor-missing": ("termcolor", X86, {"pymodules": {"python": {}, "modules": {
        "termcolor": {"importable": False}}}}, "python_base"),
    "docker-missing-jetson": ("docker", ORIN, {"docker": {
        "cli": None, "engine": None, "daemon_json": {"exists": False}, "csv_lists": [],
        "service_manager": "systemd"}}, "docker_runtime"),
    "docker-stopped": ("docker", X86, {"docker": {
        "cli": "/usr/bin/docker", "engine": {"reachable": False, "error": "no socket"},
        "daemon_json": {"exists": True, "config": {"runtimes": {"nvidia": {"path": "x"}}}},
        "nvidia_container_runtime": "/usr/bin/nvidia-container-runtime",
        "csv_lists": [], "service_manager": "systemd"}}, None),
    "no-gpu-driver": ("platform", {**X86, "gpus": []}, {}, None),
}  # fmt: skip


def problems(case: str):
    check, platform, data, _ = CASES[case]
    found = facts(platform, **data)
    findings = doctor.run_checks([BY_NAME[check]], found)
    return found, [f for f in findings if f.status in (WARN, FAIL)]


@pytest.mark.parametrize("case", CASES)
def test_a_warn_or_fail_names_the_role_that_fixes_it(case):
    role = CASES[case][3]
    _, found = problems(case)
    assert found, f"{case}: no warn or fail"
    for finding in found:
        remedy = finding.remedy
        assert remedy is not None, finding
        as_json = finding.as_dict()
        if role is None:
            assert remedy.role is None and remedy.why, finding
            assert as_json["playbook"] is None and as_json["manual"] == remedy.why
        else:
            assert remedy.role == role, (finding.summary, remedy)
            assert as_json["playbook"]["role"] == role and as_json["playbook"]["tags"] == [role]
            assert as_json["manual"] is None


@pytest.mark.parametrize("case", CASES)
def test_fix_plans_the_role_of_each_finding(case):
    role = CASES[case][3]
    _, found = problems(case)
    report = doctor.Report("local", None, found, {})
    the_plan = fixing.plan(report, collection.provision_roles())
    if role is None:
        assert the_plan.roles == [] and the_plan.manual == found
    else:
        assert the_plan.roles == [role] and the_plan.manual == []
        assert the_plan.fixed_by == {role: [found[0].check]}


def test_the_torch_without_a_pair_replaces_the_working_torch():
    _, (finding,) = problems("torchvision-torch-without-pair")
    assert dict(finding.remedy.variables) == {"torch_replace_working": True}


def test_docker_missing_on_a_jetson_installs_its_packages():
    _, (finding,) = problems("docker-missing-jetson")
    assert dict(finding.remedy.variables) == {"docker_runtime_install_packages": True}


def test_every_check_declares_its_role_and_every_role_is_the_playbooks():
    known = set(collection.provision_roles())
    for check in CHECKS:
        assert check.role or check.manual, check.name
        assert check.role is None or check.role in known, check.name
        assert check.as_dict()["role"] == check.role
    roles_in_cases = {case[3] for case in CASES.values()}
    declared = {check.role for check in CHECKS if check.role}
    assert declared <= roles_in_cases, declared - roles_in_cases


def test_quick_packages_carry_the_roles_of_the_checks_they_stand_in_for():
    nothing = {name: {"installed": False, "version": None}
               for name in ("torch", "torchvision", "tensorrt", "torch2trt", "pycuda")}  # fmt: skip
    found = facts(ORIN, packages={"packages": nothing}, cuda=CUDA,
                  tensorrt={"files": [], "loaded": None})  # fmt: skip
    findings = doctor.run_checks([BY_NAME["packages"]], found)
    assert [(f.summary.split()[0], f.remedy and f.remedy.role) for f in findings] == [
        ("torch", "torch"),
        ("torchvision", None),  # no torch to pair with: skipped, torch's fix is the one
        ("the", "tensorrt"),
        ("torch2trt", "torch2trt"),
        ("pycuda", "pycuda"),
    ]
