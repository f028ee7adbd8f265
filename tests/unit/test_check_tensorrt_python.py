"""The TensorRT bindings check on a Jetson whose Python is a venv: JetPack's bindings are the
system Python's, and the remedy says which way the venv gets them."""

from jetson_env import roles
from jetson_env.checks import tensorrt_python
from jetson_env.checks.context import Facts
from jetson_env.matrix import load
from jetson_env.probing import ProbeResult

MATRIX = load()
VENV = "/home/u/venv/bin/python"
SITE = "/home/u/venv/lib/python3.10/site-packages"
MISSING = {"imported": False, "error": "ModuleNotFoundError: No module named 'tensorrt'"}


def orin_venv(base_prefix: str) -> Facts:
    raw = {"is_jetson": True, "machine": "aarch64", "l4t": "36.4.3", "gpus": [], "uid": 1000,
           "os": {"pretty_name": "Ubuntu 22.04.5 LTS"}, "unknown": {},
           "python": {"version": "3.10.12", "executable": VENV}}  # fmt: skip
    python = {"executable": VENV, "in_venv": True, "base_prefix": base_prefix,
              "site_packages": SITE, "site_packages_writable": True}  # fmt: skip
    results = {
        "platform": ProbeResult("platform", raw, None, 0.1),
        "pymodules": ProbeResult("pymodules", {"python": python, "modules": {}}, None, 0.1),
        "tensorrt": ProbeResult("tensorrt", {"loaded": None, "files": []}, None, 0.1),
        "tensorrt_bindings": ProbeResult("tensorrt_bindings", MISSING, None, 0.1),
    }
    described = {**raw, "compute_capability": "8.7", "jetpack": "6.2", "supported": True}
    return Facts(results, MATRIX, described)


def test_a_venv_of_the_system_python_gets_jetpacks_bindings_through_a_pth():
    (finding,) = tensorrt_python.run(orin_venv("/usr"))

    links = roles.default("tensorrt", "venv_links_dir")
    pth = f"{SITE}/{roles.default('tensorrt', 'venv_pth')}"
    assert finding.status == "fail" and finding.remedy.role == "tensorrt"
    shell = finding.remedy.shell
    assert shell.startswith("sudo apt-get install -y python3-libnvinfer && ")
    assert f'sudo ln -sfn "$p"/tensorrt "$p"/tensorrt-*-info {links}/' in shell
    assert shell.endswith(f"echo {links} | tee {pth}")  # the venv is this user's
    assert "--system-site-packages" not in shell
    assert any(f"lists {links} (links to tensorrt alone), not --system-site-packages" in line
               for line in finding.details), finding.details  # fmt: skip


def test_a_venv_of_another_python_is_told_to_make_one_of_the_system_python():
    (finding,) = tensorrt_python.run(orin_venv("/home/u/.pyenv/versions/3.11.7"))

    assert finding.remedy.role is None
    assert finding.remedy.shell.startswith("/usr/bin/python3 -m venv VENV && ")
    assert finding.remedy.shell.count(":") == 0  # only the command: the why is its note
    assert "is a venv of /home/u/.pyenv/versions/3.11.7's" in finding.remedy.note
