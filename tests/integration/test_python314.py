"""A Python 3.14 x86 host (Ubuntu 26.04 LTS ships 3.14; the test host is Debian sid's python3,
`x86-python3.14` in tests/support/hosts.py), provisioned and checked as users do it: the working
tree's wheel with its `provision` extra installed into a venv of the host's 3.14 (the controller
on 3.14 too, with the newest ansible-core pip gives it), then from an unrelated folder
`jetson-env provision --check` on the host before any run (it changes nothing), `jetson-env
provision` (no -i, no interpreter variable: Ansible discovers the Python), a second run, --check
after it (nothing it would change), `jetson-env doctor`, then a break (termcolor removed, as a
user would) that `jetson-env doctor --fix --yes` repairs.

TensorRT: the matrix gives 3.14 tensorrt-cu13==11.1.0.106 (no 10.x bindings have cp314 wheels).
pip installs it from the index as a user's pip does: NVIDIA's real tensorrt-cu13 sdist and the
REAL cp314 tensorrt_cu13_bindings wheel; only tensorrt_cu13_libs, which PyPI serves as a stub
that downloads from NVIDIA's index, is a STAND-IN (tests/support/standins.py), given through
tensorrt_pip_args' --find-links. So `import tensorrt` on 3.14 is NVIDIA's module loading the
stand-in libraries. CUDA is a STAND-IN 13.0 toolkit (no GPU here), so cuda-python 13.x comes
from the index's cp314 wheels.

torch and torchvision are off in the default tier: torch 2.14.1's cp314 wheel from the index is
the CUDA build, 554.6 MB, with its nvidia-* wheels 5.5 GB installed (measured 2026-11-27: 70 s
here, on a fast network), and no CPU build for 3.14 is on this machine (the bookworm hosts'
2.13.0+cpu wheel is cp311). The torch role on the same host, torch from the index, is the keyed
slow tier's (the last test). torch2trt needs torch, and cannot use TensorRT 11 anyway: off; the
doctor says it is not applicable here.
"""

import json
import shlex
import subprocess
from collections.abc import Iterator

import pytest
from playbook_support import paths_changed_since, pip_version, remove_host, start_host
from support.hosts import VENV, Host, project_wheel
from support.standins import (
    build_cuda_toolkit_archive,
    build_tensorrt_libs_wheel,
    stage_container_runtime,
)

from jetson_env import collection, matrix, roles

pytestmark = pytest.mark.hosts

PIN = matrix.load().x86_tensorrt_for("3.14")
CUDA_VERSION = "13.0.48"
LIBS_ON_HOST = "/tmp/tensorrt-libs"
MARKER = "/var/tmp/jetson-env-test-marker"
# Off: torch's cp314 wheel is the 554.6 MB CUDA build (the module's docstring) and what needs it;
# pycuda's build, which needs the toolkit's cuda.h and a compiler (cuda-python needs neither).
ROLES_OFF = ("torch", "torchvision", "torch2trt")
SETTINGS = {
    **{f"{role}_enabled": False for role in ROLES_OFF},
    "pycuda_build": False,
    "pycuda_cuda_python": True,
    # The index for everything but -libs, whose stand-in wheel pip prefers to the index's stub
    # sdist of the same version.
    "tensorrt_pip_args": ["--find-links", LIBS_ON_HOST],
    "docker_runtime_install_packages": False,
    "docker_runtime_container_build": True,
}


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    work = tmp_path_factory.mktemp("python314")
    host = start_host("x86-python3.14", "python3.14")
    host.copy_in(build_cuda_toolkit_archive(work, CUDA_VERSION), "/tmp/cuda.tar")
    release = ".".join(CUDA_VERSION.split(".")[:2])
    host.exec(["sh", "-c", f"tar -C /usr/local -xf /tmp/cuda.tar && ln -sfn cuda-{release} "
                           "/usr/local/cuda && rm /tmp/cuda.tar"])  # fmt: skip
    stage_container_runtime(host)
    libs = build_tensorrt_libs_wheel(PIN.version, PIN.package.removeprefix("tensorrt-cu"),
                                     work / "libs")  # fmt: skip
    host.exec(["mkdir", "-p", LIBS_ON_HOST, "/srv/elsewhere"])
    host.copy_in(libs, f"{LIBS_ON_HOST}/{libs.name}")
    yield host
    remove_host(host)


def user_runs(host: Host, *args: str) -> subprocess.CompletedProcess:
    """`jetson-env ARGS` as the host's user runs it, from an unrelated folder."""
    command = shlex.join([f"{VENV}/bin/jetson-env", "--no-color", *args])
    return host.exec(["sh", "-c", f"cd /srv/elsewhere && {command}"], check=False, timeout=1800)


def test_provision_then_doctor_on_python_314_as_a_user_runs_them(host: Host):
    assert host.exec(["python3", "-c", "import sys; print(sys.version_info[:2])"]).stdout == (
        "(3, 14)\n"
    )
    host.install_project()
    wheel = project_wheel()
    host.exec([f"{VENV}/bin/pip", "install", "--quiet", f"/tmp/{wheel.name}[provision]"],
              timeout=900)  # fmt: skip

    # --check first, on a host never provisioned: it says what it would change, changes nothing.
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])
    check = user_runs(host, "provision", "--check", "--json", "-e", json.dumps(SETTINGS))
    assert check.returncode == 0, (check.stdout + check.stderr)[-4000:]
    would = json.loads(check.stdout)["hosts"]["localhost"]
    assert would["status"] == "changed" and would["error"] is None, would
    assert paths_changed_since(host, MARKER) == set()
    assert pip_version(host, "termcolor") is None

    first = user_runs(host, "provision", "-e", json.dumps(SETTINGS))
    output = first.stdout + first.stderr
    assert first.returncode == 0, output[-4000:]
    for forbidden in ("template error", "deprecat"):
        assert forbidden not in output.lower(), output[-4000:]
    assert "(/usr/bin/python3: the Python provisioned, an externally-managed" in output, output

    # TensorRT: the matrix's 3.14 pin, with PyPI's real cp314 bindings.
    assert pip_version(host, "tensorrt_cu13") == PIN.version == "11.1.0.106"
    assert pip_version(host, "tensorrt_cu13_bindings") == PIN.version
    wheel_tag = "import importlib.metadata as m; print(m.distribution({!r}).read_text('WHEEL'))"
    tag = host.exec(["python3", "-c", wheel_tag.format("tensorrt_cu13_bindings")])
    assert "Tag: cp314-none-manylinux_2_28_x86_64" in tag.stdout, tag.stdout
    imported = host.exec(["python3", "-c", "import tensorrt as t; "
                          "print(t.__version__, t.__file__, t.Builder.__module__)"])  # fmt: skip
    version, module_file, builder = imported.stdout.split()
    assert version == PIN.version
    assert module_file.startswith("/usr/local/lib/python3.14/dist-packages/tensorrt/")
    assert builder == "tensorrt_bindings.tensorrt"  # NVIDIA's compiled module
    conf = host.exec(["cat", roles.default("tensorrt", "ldconfig_file")]).stdout
    assert conf.splitlines()[-1] == "/usr/local/lib/python3.14/dist-packages/tensorrt_libs"
    # cuda-python of the stand-in toolkit's CUDA major, from the index's cp314 wheels.
    cuda = host.exec(["python3", "-c", "import cuda.bindings; print(cuda.bindings.__version__)"])
    assert cuda.stdout.startswith("13."), cuda.stdout
    assert (pip_version(host, "cuda-python") or "").startswith("13.")

    second = user_runs(host, "provision", "-e", json.dumps(SETTINGS))
    assert second.returncode == 0, (second.stdout + second.stderr)[-4000:]
    assert " changed=0 " in second.stdout, second.stdout[-3000:]
    # --check after it: nothing it would change, nothing changed.
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])
    check = user_runs(host, "provision", "--check", "--json", "-e", json.dumps(SETTINGS))
    assert check.returncode == 0, (check.stdout + check.stderr)[-4000:]
    nothing = json.loads(check.stdout)["hosts"]["localhost"]
    assert nothing["status"] == "ok" and nothing["stats"]["changed"] == 0, nothing
    assert paths_changed_since(host, MARKER) == set()

    report = json.loads(user_runs(host, "doctor", "--json", "--no-smoke").stdout)
    assert report["platform"]["python"]["executable"] == "/usr/bin/python3"
    assert report["platform"]["python"]["version"].startswith("3.14."), report["platform"]
    roles_on = set(collection.provision_roles()) - {*ROLES_OFF, "pycuda"}
    managed = [f for f in report["findings"]
               if f["playbook"] and f["playbook"]["role"] in roles_on]  # fmt: skip
    assert [f for f in managed if f["status"] != "ok"] == [], report
    found = {f["check"]: f for f in report["findings"] if f["check"] != "cuda"}
    for check in ("libnvinfer", "tensorrt-python", "termcolor"):
        assert found[check]["status"] == "ok", found[check]
    assert found["libnvinfer"]["summary"].startswith("libnvinfer 11.1.0 loads"), found
    assert found["tensorrt-python"]["summary"].startswith(f"tensorrt {PIN.version} imports")
    # Not applicable: no TensorRT torch2trt can use exists for 3.14 (not a failure).
    assert found["torch2trt"]["status"] == "skip", found["torch2trt"]
    assert "cannot use TensorRT 11.1" in found["torch2trt"]["summary"]
    # cuda.bindings imports; no GPU in a container without NVIDIA's device nodes.
    assert found["cuda-python"]["status"] == "warn", found["cuda-python"]
    assert found["cuda-python"]["summary"].startswith("cuda.bindings 13.")

    # A break, as a user would make it, then `doctor --fix`: the check is green again.
    host.exec(["python3", "-m", "pip", "uninstall", "--yes", "--quiet",
               "--break-system-packages", "termcolor"])  # fmt: skip
    fixed = user_runs(host, "doctor", "--fix", "--yes", "--no-smoke", "--check", "termcolor")
    said = fixed.stdout + fixed.stderr
    assert fixed.returncode == 0, said[-4000:]
    assert "termcolor: fail -> ok" in said, said[-4000:]
    for forbidden in ("template error", "deprecat"):
        assert forbidden not in said.lower(), said[-4000:]
    again = json.loads(user_runs(host, "doctor", "--json", "--no-smoke", "--check",
                                 "termcolor").stdout)  # fmt: skip
    assert [f["status"] for f in again["findings"]] == ["ok"], again


@pytest.mark.slow(keyed=True)
def test_the_torch_role_installs_pypis_torch_on_python_314(host: Host):
    """torch from the index, as the role fetches it for a user without a wheel of his own: the
    matrix's 2.14.1, PyPI's cp314 wheel (a CUDA 13.0 build whose name and metadata say 2.14.1
    and whose torch.__version__ says 2.14.1+cu130), the role's import check passes, and the
    doctor's torch finding is the GPU's absence, which no role manages. On the host the test
    before provisioned (its other roles stay off here)."""
    host.install_project()  # a no-op after the test before; here when it runs alone
    listed = host.exec([f"{VENV}/bin/pip", "list", "--format=freeze"]).stdout
    if "ansible-core==" not in listed:
        wheel = project_wheel()
        host.exec([f"{VENV}/bin/pip", "install", "--quiet", f"/tmp/{wheel.name}[provision]"],
                  timeout=900)  # fmt: skip
    only_torch = {f"{role}_enabled": False for role in collection.provision_roles()
                  if role != "torch"}  # fmt: skip

    run = user_runs(host, "provision", "-e", json.dumps(only_torch))

    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert pip_version(host, "torch") == matrix.load().x86.torch.version
    imported = host.exec(["python3", "-c", "import torch; print(torch.__version__)"]).stdout
    assert imported.startswith(f"{pip_version(host, 'torch')}+cu"), imported
    report = json.loads(user_runs(host, "doctor", "--json", "--no-smoke").stdout)
    (torch,) = [f for f in report["findings"] if f["check"] == "torch"]
    assert torch["status"] == "warn" and torch["playbook"] is None, torch
