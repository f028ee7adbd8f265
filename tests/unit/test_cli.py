"""The CLI end to end, as a user runs it: a real process, real probes."""

import ast
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.schemas import fix_schema_validator
from test_image_tags import EXPECTED as IMAGE_FOR_RELEASE  # one table of host L4T -> image

from jetson_env import collection
from jetson_env import matrix as matrix_mod

REPO_ROOT = Path(__file__).resolve().parents[2]


def jetson_env(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *args],
        capture_output=True,
        text=True,
        env=env,
    )


def test_version():
    proc = jetson_env("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip().startswith("jetson-env 0.")


def test_matrix_json_lists_every_release():
    proc = jetson_env("matrix", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == 1
    assert [r["l4t"] for r in data["releases"]] == list(matrix_mod.load().releases)
    assert data["x86"]["torch"]["version"]
    assert data["x86"]["tensorrt_pip"] == {
        "package": "tensorrt-cu13", "version": "10.16.1.11", "supported": "<11,>=10.13.2"
    }  # fmt: skip
    # No Torch-TensorRT release requires torch 2.14 with TensorRT 10.16 (2.12.1: torch < 2.13).
    assert data["x86"]["converters"] == ["torch2trt", "onnx"]
    assert [(o["python"], o["version"]) for o in data["x86"]["tensorrt_options"]] == [
        ("3.10", "10.16.1.11"), ("3.12", "10.16.1.11"), ("3.14", "11.1.0.106")
    ]  # fmt: skip
    nano = data["releases"][0]
    assert nano == {
        "l4t": "32.4.3",
        "jetpack": "4.4",
        "family": "r32",
        "ubuntu": "18.04",
        "cuda": "10.2",
        "cudnn": "8.0",
        "tensorrt": "7.1.3",
        "python": "3.6",
        "torch": {
            "version": "1.6.0",
            "url": "https://nvidia.box.com/shared/static/9eptse6jyly1ggt9axbja2yrmj6pbarc.whl",
            "index": None,
            "sha256": None,
            "filename": "torch-1.6.0-cp36-cp36m-linux_aarch64.whl",
            "cuda": "10.2",
        },
        "torchvision": "0.7.0",
        "cusparselt": None,
        "jetpack_packages": {
            "build": ["cuda-toolkit-10-2", "libcudnn8-dev"],
            "runtime": ["cuda-libraries-10-2", "libcudnn8"],
        },
        "prerequisites": {
            "apt": ["python3-pip", "libopenblas-base", "libopenmpi-dev", "libomp-dev"],
            "pip": ["Cython<3"],
            "numpy": "numpy<1.20",
        },
        "torch_cuda_arch_list": "5.3;6.2;7.2",
        "compute_capabilities": {"tegra210": "5.3", "tegra186": "6.2", "tegra194": "7.2"},
        "pycuda": "2022.1",
        "torch2trt": {
            "git": "https://github.com/NVIDIA-AI-IOT/torch2trt.git",
            "ref": "4e820ae31b4e35d59685935223b05b2e11d47b03",
        },
        "converters": ["torch2trt", "onnx"],
        "torch_tensorrt": None,
        "onnx_export_packages": [],
        "tensorrt_options": [
            {
                "version": "7.1.3",
                "from": "JetPack's apt packages",
                "converters": ["torch2trt", "onnx"],
            }
        ],
        "tensorrt_pip": None,
        "assumed_from": None,
        "sources": [
            "https://developer.nvidia.com/embedded/jetpack-archive",
            "https://forums.developer.nvidia.com/t/pytorch-for-jetson/72048",
        ],
    }
    orin = next(r for r in data["releases"] if r["l4t"] == "36.4.3")
    assert orin["cusparselt"]["version"] == "0.5.2.1"
    assert data["x86"]["jetpack_packages"] is None and data["x86"]["torch"]["cuda"] == "13.0"
    left_out = {entry["l4t"]: entry for entry in data["unsupported"]}
    assert set(left_out) == set(matrix_mod.load().unsupported)
    assert left_out["38.1.0"]["jetpack"] == "7.0 EA" and left_out["38.1.0"]["reason"]
    assert all(entry["sources"] for entry in data["unsupported"])


def test_matrix_unsupported_lists_the_releases_left_out_and_why():
    proc = jetson_env("matrix", "--unsupported", "--json")
    assert proc.returncode == 0, proc.stderr
    entries = json.loads(proc.stdout)["unsupported"]
    assert [e["l4t"] for e in entries] == list(matrix_mod.load().raw["unsupported"])
    table = jetson_env("--no-color", "matrix", "--unsupported")
    assert table.returncode == 0 and "R39.0.0" in table.stdout and "7.2 EA" in table.stdout


def test_matrix_for_an_unlisted_point_release_names_the_row_that_applies():
    newest = matrix_mod.load().newest_of_line("36.4.99").l4t
    proc = jetson_env("matrix", "--l4t", "R36.4.99", "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["releases"]
    assert (row["l4t"], row["assumed_from"]) == (newest, newest)
    text = jetson_env("--no-color", "matrix", "--l4t", "R36.4.99")
    assert f"R36.4.99 has no row of its own: R{newest}'s" in " ".join(text.stdout.split())


def test_matrix_one_release_table():
    proc = jetson_env("matrix", "--l4t", "R36.4.3")
    assert proc.returncode == 0
    assert "R36.4.3" in proc.stdout and "R35.4.1" not in proc.stdout
    assert "torch source: https://developer.download.nvidia.com/" in proc.stdout
    # onnx is the ONNX converter's (the tensorrt role's), not a python_base prerequisite.
    assert "prerequisites: apt python3-pip libopenblas-dev, pip numpy==1.26.1\n" in proc.stdout
    assert "ONNX export (the tensorrt role's, for the ONNX converter): pip onnx" in proc.stdout


@pytest.mark.parametrize("fmt", [[], ["--json"]])
def test_unknown_release_is_a_usage_error_naming_supported_ones(fmt):
    proc = jetson_env("matrix", "--l4t", "31.1.0", *fmt)
    assert proc.returncode == 2
    if fmt:  # --json: one document, also on failure (docs/json.md)
        data = json.loads(proc.stdout)
        assert data["exit_code"] == 2 and "R31.1.0 is not supported" in data["error"]
    else:
        assert proc.stdout == ""
    assert "R31.1.0 is not supported" in proc.stderr
    assert "R36.4.3" in proc.stderr


def test_info_json_on_this_machine():
    proc = jetson_env("info", "--json", "--python", sys.executable)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    platform = data["platform"]
    assert data["errors"] == {}
    assert set(platform) == {
        "is_jetson", "machine", "l4t", "l4t_source", "board", "jetpack", "model", "soc",
        "compute_capability", "gpus", "os", "python", "cuda", "supported", "matrix_row",
        "assumed_from", "unknown",
    }  # fmt: skip
    assert platform["python"]["executable"] == sys.executable


def test_info_reports_a_broken_interpreter(tmp_path):
    proc = jetson_env("info", "--python", str(tmp_path / "missing-python"))
    assert proc.returncode == 3
    assert "cannot start" in proc.stderr
    assert "-m jetson_env.probes" not in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("l4t", sorted(IMAGE_FOR_RELEASE))
def test_images_tag_for_each_release(l4t):
    proc = jetson_env("--no-color", "images", "tag", "--l4t", f"R{l4t}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"jetson-env:{IMAGE_FOR_RELEASE[l4t]}\n"

    as_json = jetson_env(
        "images", "--repository", "ghcr.io/o/jetson-env", "tag", "--l4t", l4t, "--json"
    )
    image = json.loads(as_json.stdout)["image"]
    assert image["tag"] == f"ghcr.io/o/jetson-env:{IMAGE_FOR_RELEASE[l4t]}"
    assert image["platform"] == "linux/arm64"


@pytest.mark.parametrize("l4t", ["R33.1.0", "R36.1.0", "R40.0.0"])
def test_images_tag_for_an_unsupported_l4t(l4t):
    proc = jetson_env("--no-color", "images", "tag", "--l4t", l4t)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"L4T {l4t} is not supported; supported releases: R32.4.3, " in proc.stderr
    assert "R38.2.0" in proc.stderr


@pytest.mark.parametrize("l4t", ["34.1.0", "39.0.0", "38.1.0", "32.3.1"])
def test_images_tag_for_an_l4t_left_out_on_purpose_says_why(l4t):
    proc = jetson_env("--no-color", "images", "tag", "--l4t", f"R{l4t}")
    assert proc.returncode == 2
    message = " ".join(proc.stderr.split())  # the terminal wraps long lines
    reason = matrix_mod.load().unsupported[l4t]
    assert f"L4T R{l4t} is not supported ({reason}); supported releases: R32.4.3, " in message


def test_images_tag_for_an_unlisted_point_release_names_the_row_it_assumes():
    proc = jetson_env("--no-color", "images", "tag", "--l4t", "R36.4.99")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "jetson-env:r36.4.0\n"
    newest = matrix_mod.load().newest_of_line("36.4.99").l4t
    assert f"R36.4.99 has no row of its own: R{newest}'s" in " ".join(proc.stderr.split())


def test_images_tag_on_this_x86_machine():
    proc = jetson_env("--no-color", "images", "tag")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "jetson-env:x86_64\n"


def test_images_list_json():
    proc = jetson_env("images", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == 1
    names = [image["name"] for image in data["images"]]
    assert names == [*sorted(set(IMAGE_FOR_RELEASE.values())), "x86_64"]
    orin = next(image for image in data["images"] if image["name"] == "r36.4.0")
    assert orin == {
        "name": "r36.4.0",
        "tag": "jetson-env:r36.4.0",
        "base": "ubuntu:22.04",
        "hosts": "<37,>=36.4",
        "l4t": "36.4.0",
        "jetpack": "6.1",
        "cuda": "12.6",
        "image_cuda": "12.6",
        "cuda_from": "apt",
        "tensorrt": "10.3",
        "python": "3.10",
        "torch": "2.5.0",
        "torchvision": "0.20.0",
        "platform": "linux/arm64",
        "dockerfile": "images/Dockerfile",
        "build_args": {
            "BASE_IMAGE": "ubuntu:22.04",
            "JETSON_ENV_IMAGE": "r36.4.0",
            "TORCH_VERSION": "2.5.0",
            "TORCHVISION_VERSION": "0.20.0",
            "CUDA_FROM": "apt",
            "L4T": "36.4.0",
            "TORCH_CUDA_ARCH_LIST": "8.7",
        },
        "cannot_build": None,
    }
    x86 = data["images"][-1]
    assert x86["platform"] == "linux/amd64"
    assert x86["hosts"] == "x86_64"
    assert "L4T" not in x86["build_args"]


def test_jetpack_4_images_from_nvidias_bases_are_refused_with_the_reason():
    """Issue 44: an r32 base has Python 3.6 alone, where neither jetson-env[provision] (Ansible's
    controller side in the build) nor uv (which installs a Python for it) installs. The tag and
    the list say so, and the build refuses before any Docker call (the engine is out of reach
    here); with --base (a base with a Python 3.10+ beside it) it builds (test_images.py)."""
    listed = json.loads(jetson_env("images", "list", "--json").stdout)["images"]
    refused = {image["name"]: image["cannot_build"] for image in listed if image["cannot_build"]}
    assert sorted(refused) == ["r32.4.3", "r32.4.4", "r32.5.0", "r32.6.1", "r32.7.1"]
    no_engine = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    for name, reason in refused.items():
        assert reason == (
            f"{name} cannot be built from nvcr.io/nvidia/l4t-base:{name}: its only Python is 3.6"
            f" (Ubuntu 18.04's, L4T R{name[1:]}'s), Ansible's controller side"
            " (jetson-env[provision]) needs Python >=3.10, and uv, which installs one where the"
            " base has none, needs Python 3.8 or newer"
        )
        tag = jetson_env("--no-color", "images", "tag", "--l4t", f"R{name[1:]}")
        assert tag.stdout == f"jetson-env:{name}\n"
        assert reason in " ".join(tag.stderr.split())
        build = jetson_env("--no-color", "images", "build", name, env=no_engine)
        assert build.returncode == 2, build.stderr
        said = " ".join(build.stderr.split())
        assert reason in said and f"jetson-env images build {name} --base IMAGE" in said, said


def test_images_build_rejects_bad_playbook_vars():
    proc = jetson_env("--no-color", "images", "build", "x86_64", "--playbook-vars", "{nope")
    assert proc.returncode == 2
    assert "--playbook-vars is not JSON" in proc.stderr


def test_playbook_vars_nested_past_what_ansible_is_handed_are_bad_input():
    """900 levels parse as JSON but writing them for Ansible (YAML) ran out of stack
    (RecursionError) once a role ran; refused before any probe, as any bad --playbook-vars."""
    deep = '{"a": ' * 900 + "1" + "}" * 900
    for command in (["doctor", "--fix", "--python", "/nonexistent/py"],
                    ["images", "build", "x86_64"]):  # fmt: skip
        proc = jetson_env("--no-color", *command, "--playbook-vars", deep)
        assert proc.returncode == 2, proc.stderr
        assert "--playbook-vars nests deeper than 64 levels" in proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
    shallow = '{"a": ' * 64 + "1" + "}" * 64  # as deep as it may be, and Ansible is handed it
    assert collection.extra_vars(collection.playbook_vars(shallow)).count("{") == 64


def test_fix_with_an_unknown_role_is_a_usage_error_before_any_probe():
    proc = jetson_env("doctor", "--fix", "cuda_env,no_such_role", "--python", "/nonexistent/py")
    assert proc.returncode == 2, proc.stderr
    assert "no role no_such_role in jetson_env.jetson.provision" in proc.stderr
    assert "cuda_env, python_base" in proc.stderr  # the playbook's roles, listed
    assert proc.stdout == ""  # no report: the (missing) interpreter was never started


def test_fix_json_is_one_document_on_stdout_even_when_nothing_runs():
    proc = jetson_env("doctor", "--fix", "--json", "--python", "/nonexistent/py")
    assert proc.returncode == 3, proc.stderr
    document = json.loads(proc.stdout)
    fix_schema_validator().validate(document)
    assert document["kind"] == "fix" and document["exit_code"] == 3
    assert document["plan"] is None and document["applied"] is False
    assert document["before"]["findings"][0]["check"] == "interpreter"


def test_fix_without_ansible_says_how_to_install_it(tmp_path):
    """An interpreter whose environment has no ansible-playbook, and none on PATH."""
    bare = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    site = sysconfig.get_path("purelib")  # this environment's packages, ansible's beside them
    proc = subprocess.run(
        [str(bare / "bin" / "python"), "-m", "jetson_env.cli", "doctor", "--fix"],
        capture_output=True, text=True, env={"PATH": "/nonexistent", "PYTHONPATH": site},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "needs Ansible" in proc.stderr
    # jetson-env is on no index: the line adds its provision extra's requirements, as the
    # project declares them, to the environment jetson-env runs in (issue 50, item 1).
    declared = re.search(r"^provision = (\[.*\])$", (REPO_ROOT / "pyproject.toml").read_text(),
                         re.MULTILINE)  # fmt: skip
    extra = ast.literal_eval(declared.group(1))
    line = shlex.join([str(bare / "bin" / "python"), "-m", "pip", "install", *extra])
    assert line in proc.stderr.replace("\n", " "), proc.stderr
    assert "jetson-env[provision]" not in proc.stderr
    assert proc.stdout == ""


def test_doctor_trust_goes_with_fix_and_a_bundle():
    """--trust checks the bundle --fix installs from: alone it is bad input, before any probe."""
    proc = jetson_env("doctor", "--no-smoke", "--trust", "team.pub")
    assert proc.returncode == 2
    assert "--fix --bundle DIR" in proc.stderr and "termcolor" not in proc.stdout
