"""The platform and torch checks on a Jetson, in-process: captured facts in, findings out."""

import pytest

from jetson_env import device_code, installed
from jetson_env.checks import kernels, platform, torch
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, WARN
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult

MATRIX = load()
CUSPARSELT_ERROR = (
    "OSError: libcusparseLt.so.0: cannot open shared object file: No such file or directory"
)


def orin(l4t: str, uid: int = 1000, **probes) -> Facts:
    raw = {
        "is_jetson": True, "machine": "aarch64", "l4t": l4t, "l4t_source": "nv_tegra_release",
        "board": "t186ref", "model": "NVIDIA Jetson AGX Orin", "soc": "tegra234", "gpus": [],
        "os": {"pretty_name": "Ubuntu 22.04.5 LTS"}, "uid": uid, "unknown": {},
        "python": {"version": "3.10.12", "executable": "/usr/bin/python3"},
    }  # fmt: skip
    results = {"platform": ProbeResult("platform", raw, None, 0.1)}
    results |= {name: ProbeResult(name, data, None, 0.1) for name, data in probes.items()}
    described = {**raw, "compute_capability": "8.7", "jetpack": None, "supported": True}
    return Facts(results, MATRIX, described)


def test_an_unseen_point_release_is_checked_against_its_lines_newest_row():
    newest = MATRIX.newest_of_line("36.4.99")
    (finding,) = platform.run(orin("36.4.99"))

    assert finding.status == WARN
    assert f"L4T R36.4.99 has no row in the matrix; checked against R{newest.l4t}'s" in (
        finding.summary
    )
    # the words apart: the command upgrades jetson-env from where it was installed
    assert finding.remedy.shell == installed.install_line("--upgrade", installed.requirement(None))
    assert "jetson_facts_allow_newer_point_release=true" in finding.remedy.note
    assert orin("36.4.99").release == newest  # what every other check reads


def test_an_unknown_line_still_fails():
    (finding,) = platform.run(orin("99.1.0"))
    assert finding.status == FAIL and "is not supported" in finding.summary


@pytest.mark.parametrize("uid, sudo", [(1000, "sudo "), (0, "")], ids=["user", "root"])
def test_torch_missing_cusparselt_names_it_and_installs_it_as_the_role_does(uid, sudo):
    broken = {"torch": {"installed": True, "importable": False, "version": "2.5.0a0+872d972e41",
                        "error": CUSPARSELT_ERROR}}  # fmt: skip
    (finding,) = torch.run(orin("36.4.3", uid=uid, torch=broken))

    assert finding.status == FAIL
    assert finding.summary.endswith("does not import: libcusparseLt.so.0 is missing")
    cusparselt = MATRIX.release("36.4.3").cusparselt
    folder = f"/opt/nvidia/cusparselt-{cusparselt.version}"
    remedy = finding.remedy
    assert remedy.shell.startswith(f"curl -fsSLO {cusparselt.url} && {sudo}mkdir -p {folder}")
    assert f"echo {folder}/lib | {sudo}tee /etc/ld.so.conf.d/jetson-env-cusparselt.conf" in (
        remedy.shell
    )
    assert remedy.shell.endswith(f"{sudo}ldconfig")
    assert remedy.role == "torch"


def test_a_missing_cuda_library_points_at_jetpacks_packages():
    broken = {
        "torch": {
            "installed": True,
            "importable": False,
            "version": "2.5.0",
            "error": "ImportError: libcudnn.so.9: cannot open shared object file",
        }
    }
    (finding,) = torch.run(orin("36.4.3", uid=0, torch=broken))  # fmt: skip
    assert "libcudnn.so.9 is missing" in finding.summary
    assert finding.remedy.shell == "apt-get update && apt-get install -y " + " ".join(
        MATRIX.release("36.4.3").jetpack_packages["build"]
    )


PYPI_AARCH64 = ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120"]  # torch 2.14.1/2.15.0's list


@pytest.mark.parametrize(
    ("arch_list", "capability", "jetson_cuda", "kernel"),
    [
        # a desktop GPU (jetson_cuda None): a cubin runs on the same major's higher minors
        (PYPI_AARCH64, "8.7", None, "sm_80"),
        (PYPI_AARCH64, "11.0", None, "sm_110"),
        (["sm_87"], "8.7", None, "sm_87"),
        (["sm_80", "sm_86"], "8.7", None, "sm_86"),  # the nearest lower minor of the same major
        (["sm_86"], "8.0", None, None),  # a higher minor does not run on a lower one
        (["sm_75"], "8.7", None, None),  # another major never runs
        (["sm_90a"], "9.0", None, "sm_90a"),  # arch-specific SASS runs on 9.0 itself
        (["sm_90a"], "10.0", None, None),  # ... and nowhere else
        (["sm_75", "compute_75"], "8.7", None, "compute_75"),  # PTX is JIT-compiled forward
        (["sm_53", "sm_62", "sm_72"], "5.3", None, "sm_53"),
        # a Jetson before JetPack 7.2's CUDA 13.2 runs SASS of its exact capability only
        # (jax-ml/jax #40492: sm_80 "no kernel image" on a JetPack 6 Orin, compute_80 PTX ran)
        (PYPI_AARCH64, "8.7", "12.6", None),
        (["sm_80", "compute_80"], "8.7", "12.6", "compute_80"),
        (["sm_87"], "8.7", "12.6", "sm_87"),
        (["sm_53", "sm_62", "sm_72"], "7.2", "10.2", "sm_72"),
        # from CUDA 13.2 it runs SBSA binaries (pytorch/pytorch #186285)
        (PYPI_AARCH64, "8.7", "13.2", "sm_80"),
        (["sm_80", "compute_80"], "8.7", "13.2", "sm_80"),
    ],
)
def test_which_kernels_a_device_runs(arch_list, capability, jetson_cuda, kernel):
    verdict = torch.kernel_for(arch_list, capability, jetson_cuda is not None, jetson_cuda)
    assert verdict.image == kernel


def torch_on_orin(l4t: str, arch_list: list[str]) -> Facts:
    data = {"installed": True, "importable": True, "version": "2.14.1", "cuda_build": "13.0",
            "cuda_available": True, "device_count": 1, "arch_list": arch_list, "error": None,
            "devices": [{"name": "Orin", "compute_capability": "8.7"}]}  # fmt: skip
    return orin(l4t, torch={"torch": data})


@pytest.mark.parametrize(
    ("l4t", "arch_list", "status", "says"),
    [
        ("36.4.3", PYPI_AARCH64, FAIL, "but it has no kernel for compute capability 8.7"),
        ("36.4.3", ["sm_80", "compute_80"], WARN, "only after the driver compiles its PTX"),
        ("36.4.3", ["sm_87"], OK, "runs on Orin (sm_87)"),
        ("39.2.0", PYPI_AARCH64, OK, "runs on Orin (sm_80)"),
        ("39.2.0", ["sm_80", "compute_80"], OK, "runs on Orin (sm_80)"),
    ],
    ids=["jp6-sm80", "jp6-sm80-ptx80", "jp6-sm87", "jp7.2-sm80", "jp7.2-sm80-ptx80"],
)
def test_the_torch_check_judges_an_orin_as_the_kernels_check_does(l4t, arch_list, status, says):
    """PyPI's aarch64 torch (sm_80, no sm_87) on an Orin: no kernel on JetPack 6 (CUDA 12.6),
    runs on JetPack 7.2 (CUDA 13.2), as jetson_env.device_code judges the same list's files."""
    facts = torch_on_orin(l4t, arch_list)
    (finding,) = torch.run(facts)
    assert (finding.status, says in finding.summary) == (status, True), finding.summary
    sass = [a for a in arch_list if a.startswith("sm_")]
    ptx = [{"arch": a} for a in arch_list if a.startswith("compute_")]
    rule = device_code.judge(sass, ptx, "8.7", True, facts.release.cuda, None)
    assert finding.status == kernels.STATUS[rule.state]
    if status == FAIL:
        assert device_code.NO_KERNEL_ERROR in finding.summary
        assert "a Jetson runs only SASS of its exact compute capability" in finding.details[-1]
        assert finding.remedy.shell == torch.install_remedy(facts)


def h100(visibility: dict, gpus: int = 1, is_jetson: bool = False) -> Facts:
    """An x86 host whose nvidia-smi lists `gpus` H100s and whose torch (a CUDA build) sees none."""
    listed = [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}] * gpus
    raw = {
        "is_jetson": is_jetson,
        "machine": "x86_64",
        "l4t": None,
        "gpus": listed,
        "uid": 0,
        "os": {"pretty_name": "Ubuntu 24.04"},
        "unknown": {},
        "python": {"version": "3.12.3", "executable": "/opt/torch/.venv/bin/python3"},
        "visibility": visibility,
    }
    torch_facts = {"installed": True, "importable": True, "version": "2.11.0+cu130",
                   "cuda_build": "13.0", "cuda_available": False, "device_count": 0,
                   "devices": [], "arch_list": [], "error": None}  # fmt: skip
    results = {"platform": ProbeResult("platform", raw, None, 0.1),
               "torch": ProbeResult("torch", {"torch": torch_facts}, None, 0.1)}  # fmt: skip
    described = {**raw, "compute_capability": "9.0", "jetpack": None, "supported": True}
    return Facts(results, MATRIX, described)


NODES = ["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"]


@pytest.mark.parametrize(
    "visibility, gpus, names, remedy",
    [
        ({"cuda_visible_devices": "", "device_nodes": NODES}, 1,
         "CUDA_VISIBLE_DEVICES='' (set empty) hides every GPU", "unset CUDA_VISIBLE_DEVICES"),
        ({"cuda_visible_devices": "-1", "device_nodes": NODES}, 1,
         "CUDA_VISIBLE_DEVICES=-1 hides every GPU", "unset CUDA_VISIBLE_DEVICES"),
        ({"cuda_visible_devices": "2,0", "device_nodes": NODES}, 2,
         "CUDA_VISIBLE_DEVICES=2,0 names GPU 2, and this host has 2 (0 to 1)",
         "unset CUDA_VISIBLE_DEVICES"),
        ({"cuda_visible_devices": "gpu0", "device_nodes": NODES}, 1,
         "CUDA_VISIBLE_DEVICES=gpu0 names no GPU", "unset CUDA_VISIBLE_DEVICES"),
        ({"nvidia_visible_devices": "void", "device_nodes": [], "container": True}, 0,
         "NVIDIA_VISIBLE_DEVICES=void gives this container no GPU", "docker run --gpus all"),
        ({"nvidia_visible_devices": "none", "device_nodes": ["/dev/nvidiactl"],
          "container": True}, 0,
         "NVIDIA_VISIBLE_DEVICES=none gives this container no GPU", "docker run --gpus all"),
        ({"device_nodes": [], "container": True}, 0,
         "this container has no NVIDIA device nodes (/dev/nvidia0 ...)", "docker run --gpus all"),
    ],
    ids=["cuda-empty", "cuda-minus-one", "cuda-no-such-index", "cuda-not-an-index",
         "nvidia-void", "nvidia-none", "container-without-nodes"],
)  # fmt: skip
def test_what_hides_the_gpu_is_named_before_the_driver_is_blamed(visibility, gpus, names, remedy):
    (finding,) = torch.run(h100(visibility, gpus=gpus))

    assert finding.status == (FAIL if gpus else WARN)
    assert finding.summary == (
        f"torch 2.11.0+cu130, built with CUDA 13.0, but {names}: torch.cuda.is_available() is False"
    )
    assert remedy in finding.remedy.shell, finding.remedy.shell
    assert "driver" not in finding.remedy.shell and finding.remedy.role is None


@pytest.mark.parametrize(
    "visibility",
    [{"cuda_visible_devices": "0", "device_nodes": NODES},
     {"cuda_visible_devices": "GPU-8c0a4e1d", "device_nodes": NODES},
     {"nvidia_visible_devices": "all", "device_nodes": NODES, "container": True},
     {"device_nodes": [], "container": False}],
    ids=["a-present-index", "a-uuid", "nvidia-all", "no-nodes-outside-a-container"],
)  # fmt: skip
def test_a_gpu_nothing_hides_still_points_at_the_driver(visibility):
    (finding,) = torch.run(h100(visibility))
    assert finding.status == FAIL and finding.summary.endswith(
        "but torch.cuda.is_available() is False"
    )
    assert "check the driver" in finding.remedy.shell
