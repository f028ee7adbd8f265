"""Which TensorRT a host may have and which converters work with it, as the doctor judges them:
captured probe facts in, findings out (x86 on Python 3.12 and 3.14, Jetson rows R39.2.0/2)."""

import pytest

from jetson_env.bundle import needs, targets
from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult

MATRIX = load()
VENV = "/opt/venv/bin/python3"


def x86(python: str, **data) -> Facts:
    platform = {
        "is_jetson": False, "machine": "x86_64", "l4t": None, "soc": None, "uid": 0,
        "gpus": [{"name": "NVIDIA H100", "compute_capability": "9.0"}], "unknown": {},
        "python": {"version": python, "executable": VENV},
    }  # fmt: skip
    results = {"platform": ProbeResult("platform", platform, None, 0.1)}
    results |= {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}
    described = {**platform, "compute_capability": "9.0", "jetpack": None, "supported": True}
    return Facts(results, MATRIX, described)


def jetson(l4t: str, soc: str, **data) -> Facts:
    platform = {
        "is_jetson": True, "machine": "aarch64", "l4t": l4t, "soc": soc, "uid": 0,
        "gpus": [], "unknown": {},
        "python": {"version": "3.12.3", "executable": "/usr/bin/python3"},
    }  # fmt: skip
    results = {"platform": ProbeResult("platform", platform, None, 0.1)}
    results |= {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}
    described = {**platform, "compute_capability": MATRIX.compute_capability(soc),
                 "jetpack": MATRIX.releases[l4t].jetpack, "supported": True}  # fmt: skip
    return Facts(results, MATRIX, described)


def loaded(version: str, directory: str = "/usr/lib/aarch64-linux-gnu") -> dict:
    major = version.split(".")[0]
    return {"files": [{"path": f"{directory}/libnvinfer.so.{major}", "dir": directory,
                       "kind": "system", "version": version, "major": int(major),
                       "in_ldconfig_cache": True}],
            "loaded": {"name": f"libnvinfer.so.{major}", "version": version},
            "headers": []}  # fmt: skip


def torch(version: str) -> dict:
    return {"torch": {"installed": True, "version": version}}


TORCH2TRT = {"installed": True, "importable": True, "version": "0.5.0", "plugin_files": [],
             "registry_creators": []}  # fmt: skip


@pytest.mark.parametrize(
    ("python", "tensorrt", "details"),
    [
        ("3.12.3", "11.1.0.106", (
            "way out 1: TensorRT 10.16.1.11 (the matrix's, below 11), the remedy below",
            "way out 2: keep TensorRT 11.1.0.106 and convert with ONNX export + TensorRT's"
            " OnnxParser, Torch-TensorRT 2.14.0 instead (the smoke runs each one that is"
            " installed)")),
        ("3.12.3", "11.0.0.114", (
            "way out 1: TensorRT 10.16.1.11 (the matrix's, below 11), the remedy below",
            "way out 2: keep TensorRT 11.0.0.114 and convert with ONNX export + TensorRT's"
            " OnnxParser instead (the smoke runs each one that is installed)")),
        ("3.14.0", "11.1.0.106", (
            "way out 1: keep TensorRT 11.1.0.106 and convert with ONNX export + TensorRT's"
            " OnnxParser, Torch-TensorRT 2.14.0 instead (the smoke runs each one that is"
            " installed)",
            "Python 3.14.0: the matrix's TensorRT for it is 11.1.0.106, as no TensorRT below 11"
            " has bindings for it")),
    ],
    ids=["torch-2.14-trt-11.1", "torch-2.14-trt-11.0-no-release", "python-3.14"],
)  # fmt: skip
def test_tensorrt_11_ways_out_name_only_converters_a_real_release_fits(python, tensorrt, details):
    """Torch-TensorRT 2.14.0 requires torch 2.14 and TensorRT 11.1; 2.13.0 TensorRT 11.0 with
    torch 2.13: keeping 11.0 with torch 2.14.1 leaves ONNX alone. On Python 3.14 no TensorRT 10
    installs, so going back is no way out."""
    found = x86(python, torch2trt=TORCH2TRT, torch=torch("2.14.1+cu130"),
                tensorrt=loaded(tensorrt, "/opt/venv/lib/site-packages/tensorrt_libs"))  # fmt: skip
    (finding,) = BY_NAME["torch2trt"].run(found)
    assert finding.status == "fail"
    assert finding.details == details
    if python.startswith("3.14"):
        assert finding.remedy is None


@pytest.mark.parametrize(
    ("python", "requirement"),
    [("3.10.12", "tensorrt-cu13==10.16.1.11"), ("3.12.3", "tensorrt-cu13==10.16.1.11"),
     ("3.14.0", "tensorrt-cu13==11.1.0.106")],
)  # fmt: skip
def test_x86_without_tensorrt_gets_the_pin_its_python_has_bindings_for(python, requirement):
    """tensorrt-cu13-bindings 10.x has wheels for cp38-cp313 only; cp314 starts at 11.1.0.106."""
    found = x86(python, tensorrt={"files": [], "loaded": None, "headers": []},
                cuda={"version": "13.0", "root": "/usr/local/cuda"})  # fmt: skip
    (library,) = BY_NAME["libnvinfer"].run(found)
    assert library.remedy.shell.startswith(f"{VENV} -m pip install {requirement} && ")


def test_tensorrt_11_5_on_jetpack_7_2_2_is_accepted_saying_nvidia_has_not_confirmed_it():
    """TensorRT 11.5's release notes name x86, SBSA and Windows, not JetPack."""
    found = jetson("39.2.2", "tegra234", tensorrt=loaded("11.5.0"), torch=torch("2.14.1"))
    (finding,) = BY_NAME["libnvinfer"].run(found)
    assert finding.status == "ok"
    assert "support on JetPack unconfirmed: TensorRT 11.5's release notes name x86" in (
        finding.summary
    )
    assert "TensorRT 11.5 on L4T R39.2.2 instead of JetPack's 10.16: its package installs" in (
        " ".join(finding.details)
    )
    option = MATRIX.tensorrt_options(MATRIX.releases["39.2.2"])[-1]
    assert (option["version"], "unconfirmed" in option["from"]) == ("11.5", True)
    # Only from R39.2.2 on: on R39.2.1 it is the release's TensorRT that is missing.
    earlier = jetson("39.2.1", "tegra234", tensorrt=loaded("11.5.0"), torch=torch("2.14.1"))
    (finding,) = BY_NAME["libnvinfer"].run(earlier)
    assert (finding.status, "but L4T R39.2.1 ships TensorRT 10.16" in finding.summary) == (
        "warn",
        True,
    )
    assert "unconfirmed" not in " ".join([finding.summary, *finding.details])


@pytest.mark.parametrize(
    ("l4t", "soc", "status", "words"),
    [
        ("39.2.2", "tegra264", "ok", "TensorRT 11.4.1 on L4T R39.2.2 instead of JetPack's 10.16:"
         " NVIDIA supports it on Jetson AGX Orin, Jetson Thor (NVIDIA's TensorRT SBSA package);"
         " it converts with ONNX export + TensorRT's OnnxParser"),
        ("39.2.2", "tegra234", "ok", "TensorRT 11.4.1 on L4T R39.2.2 instead of JetPack's 10.16"),
        ("39.2.0", "tegra264", "warn", "but L4T R39.2.0 ships TensorRT 10.16"),
    ],
    ids=["thor-7.2.2", "orin-7.2.2", "thor-7.2.0"],
)  # fmt: skip
def test_tensorrt_11_4_1_is_supported_on_jetpack_7_2_2_and_later(l4t, soc, status, words):
    """NVIDIA's 11.4.1 installation guide: JetPack 7.2.2 or later on Jetson AGX Orin and Thor."""
    found = jetson(l4t, soc, tensorrt=loaded("11.4.1"), torch=torch("2.14.1"))
    (finding,) = BY_NAME["libnvinfer"].run(found)
    assert finding.status == status
    assert words in " ".join([finding.summary, *finding.details])


def test_the_matrix_states_tensorrt_and_converters_per_row_and_per_x86_python():
    by_python = {
        o["python"]: (o["version"], o["converters"]) for o in MATRIX.x86_tensorrt_options()
    }
    assert by_python == {
        "3.10": ("10.16.1.11", ["torch2trt", "onnx"]),
        "3.12": ("10.16.1.11", ["torch2trt", "onnx"]),
        "3.14": ("11.1.0.106", ["onnx", "torch_tensorrt"]),
    }
    options = {l4t: [(o["version"], o["converters"])
                     for o in MATRIX.tensorrt_options(MATRIX.releases[l4t])]
               for l4t in ("32.7.1", "35.4.1", "36.4.3", "38.2.0", "39.2.0", "39.2.2")}  # fmt: skip
    assert options == {
        "32.7.1": [("8.2.1", ["torch2trt", "onnx"])],
        "35.4.1": [("8.5.2", ["torch2trt", "onnx"])],
        "36.4.3": [("10.3", ["torch2trt", "onnx", "torch_tensorrt"])],
        "38.2.0": [("10.13", ["torch2trt", "onnx", "torch_tensorrt"])],
        "39.2.0": [("10.16", ["torch2trt", "onnx"])],
        "39.2.2": [("10.16", ["torch2trt", "onnx"]), ("11.4.1", ["onnx"]), ("11.5", ["onnx"])],
    }


@pytest.mark.parametrize(
    ("python", "requirement"),
    [("3.12", "tensorrt-cu13==10.16.1.11"), ("3.14", "tensorrt-cu13==11.1.0.106")],
)
def test_an_x86_bundle_carries_the_tensorrt_its_python_installs(python, requirement):
    target = targets.BundleTarget("x86_64", python, "2.39")
    sets = needs.needs_for(MATRIX, target, ["tensorrt"], {}).pip
    (pip_set,) = [pip_set for pip_set in sets if pip_set.unresolved is not None]
    assert pip_set.requirements == [requirement]
    # Both TensorRTs offer the ONNX converter: the role's onnx set comes with them.
    assert [p.requirements for p in sets if p.unresolved is None] == [["numpy>=1.26,<3", "onnx"]]


@pytest.mark.parametrize(
    ("torch_version", "tensorrt", "jetson", "release"),
    [
        ("2.5.0a0+872d972e41.nv24.08.17622132", "10.3", True, None),  # 2.5.0a0 < 2.5.0
        ("2.5.0", "10.3.0", True, None),  # 2.5.0 names tensorrt-cu12, not JetPack's tensorrt
        ("2.5.0", "10.3.0", False, "2.5.0"),
        ("2.8.0", "10.3.0.30", True, "2.8.0"),  # 2.8.0's tegra marker names `tensorrt`
        ("2.9.0", "10.13.3.9", True, "2.9.0"),
        ("2.14.1+cu130", "11.1.0.106", False, "2.14.0"),
        ("2.4.0", "10.1.0.27", False, None),  # tensorrt==10.1.0 is PyPI's 10.1.0 exactly
    ],
)
def test_torch_tensorrt_releases_fit_under_pips_own_rules(torch_version, tensorrt, jetson,
                                                          release):  # fmt: skip
    fitting = MATRIX.converters.torch_tensorrt_for(torch_version, tensorrt, jetson)
    assert (fitting.version if fitting else None) == release


@pytest.mark.parametrize(
    ("l4t", "version", "branch"),
    [("36.2.0", None, None), ("36.3.0", None, None), ("36.4.0", "2.5", "release/2.5"),
     ("36.4.3", "2.5", "release/2.5"), ("36.5.2", "2.5", "release/2.5")],
)  # fmt: skip
def test_each_jetpack_6_row_says_which_torch_tensorrt_nvidia_supports_and_how(l4t, version,
                                                                            branch):  # fmt: skip
    """JetPack 6.1/6.2: built from source from release/2.5 (pytorch/TensorRT #3285), no PyPI
    release fits NVIDIA's torch 2.5.0a0; JetPack 6.0: none."""
    build = MATRIX.converters.jetson_build(l4t)
    assert (build.version, build.branch) == (version, branch)
    row = MATRIX.releases[l4t]
    assert MATRIX.converters.torch_tensorrt_for(row.torch.version, row.tensorrt, True) is None
    wanted = ["torch2trt", "onnx"] + (["torch_tensorrt"] if version else [])
    assert MATRIX.tensorrt_options(row)[0]["converters"] == wanted
    if version:
        cited = [MATRIX.source_url(name) for name in build.sources]
        assert "https://github.com/pytorch/TensorRT/pull/3285" in cited
        assert build.nvidia_newest == "2.8"
