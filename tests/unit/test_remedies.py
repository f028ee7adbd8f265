"""Remedies as data: the role (tag) that applies the same fix, and shell text rendered
from that role's defaults, so the doctor and the playbook write the same files."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from jetson_env import collection, roles
from jetson_env.checks import cuda, docker, libnvinfer, termcolor
from jetson_env.checks.context import Facts
from jetson_env.matrix import load
from jetson_env.probes import cuda as cuda_probe
from jetson_env.probes import docker as docker_probe
from jetson_env.probing import ProbeResult

REPO = Path(__file__).parents[2]
PLAYBOOK = REPO / "ansible_collections" / "jetson_env" / "jetson" / "playbooks" / "provision.yml"
MATRIX = load()
SYSTEM_PYTHON = "/usr/bin/python3"
DAEMON_JSON = roles.default("docker_runtime", "daemon_json")


def facts(uid: int = 1000, python: str = SYSTEM_PYTHON, **data) -> Facts:
    raw = {
        "is_jetson": False, "machine": "x86_64", "l4t": None, "gpus": [], "uid": uid,
        "os": {"pretty_name": "Debian 12"}, "unknown": {},
        "python": {"version": "3.11.2", "executable": python},
    }  # fmt: skip
    results = {"platform": ProbeResult("platform", raw, None, 0.1)}
    results |= {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}
    platform = {**raw, "compute_capability": None, "jetpack": None, "supported": True}
    return Facts(results, MATRIX, platform)


CUDA_NOT_ON_PATHS = {
    "root": "/usr/local/cuda-12.6", "version": "12.6", "version_source": "version.json",
    "nvcc_on_path": None, "cuda_h_reachable": False, "profile_d": {}, "cudart": None,
    "cudart_files": ["/usr/local/cuda-12.6/targets/x86_64-linux/lib/libcudart.so.12"],
    "cudart_dir_listed_in": None,
}  # fmt: skip
NO_TERMCOLOR = {
    "python": {"executable": SYSTEM_PYTHON, "in_venv": False, "externally_managed": True},
    "modules": {"termcolor": {"importable": False, "error": "No module named 'termcolor'"}},
}
TRT_DIR = "/opt/TensorRT-10.3.0/lib"
TRT_NOT_LISTED = {
    "loaded": None,
    "files": [{"path": f"{TRT_DIR}/libnvinfer.so.10", "dir": TRT_DIR, "kind": "tarball",
               "version": "10.3.0", "major": "10", "in_ldconfig_cache": False}],
}  # fmt: skip


def tagged_roles() -> dict[str, list[str]]:
    plays = yaml.safe_load(PLAYBOOK.read_text())
    return {
        entry["role"].removeprefix("jetson_env.jetson."): entry.get("tags", [])
        for play in plays
        for entry in play["roles"]
    }


def test_every_role_has_its_own_tag_and_the_facts_always_run():
    tags = tagged_roles()
    assert tags.pop("jetson_facts") == ["always"]
    assert tags == {role: [role] for role in tags}


def test_cuda_remedies_write_the_cuda_env_roles_files():
    findings = cuda.run(facts(cuda=CUDA_NOT_ON_PATHS))
    remedies = [f.remedy for f in findings if f.remedy]
    assert len(remedies) == 4  # nvcc on PATH, login shells, cuda.h, libcudart
    assert {r.role for r in remedies} == {"cuda_env"}
    profile = roles.default("cuda_env", "profile_file")
    ldconfig = roles.default("cuda_env", "ldconfig_file")
    # One file, one remedy: nvcc's PATH, the login shells and cuda.h's CPATH share the
    # command that writes the role's whole script (never appends to it).
    assert remedies[0] == remedies[1] == remedies[2]
    assert f"| sudo tee {profile} >/dev/null && . {profile}" in remedies[0].shell
    assert "tee -a" not in remedies[0].shell
    assert f"sudo tee {ldconfig}" in remedies[3].shell
    # libcudart's folder is not <root>/lib64: the role lists it as an extra dir.
    assert dict(remedies[3].variables) == {
        "cuda_env_root": "/usr/local/cuda-12.6",
        "cuda_env_extra_lib_dirs": ["/usr/local/cuda-12.6/targets/x86_64-linux/lib"],
    }


def test_termcolor_is_installed_with_pip_as_python_base_does():
    (finding,) = termcolor.run(facts(pymodules=NO_TERMCOLOR))
    assert finding.remedy.shell == (
        f"sudo {SYSTEM_PYTHON} -m pip install --break-system-packages termcolor"
    )
    # The role installs into the Python the doctor probed, not Ansible's interpreter, and
    # only termcolor's set: no numpy pin, no onnx (and its protobuf) with it.
    assert finding.as_dict()["playbook"] == {
        "role": "python_base", "tags": ["python_base"],
        "vars": {"jetson_facts_python": SYSTEM_PYTHON, "python_base_sets": ["packages"],
                 "python_base_pip_packages": ["termcolor"]},
    }  # fmt: skip


def test_a_tarball_tensorrt_is_listed_in_the_tensorrt_roles_file():
    (finding,) = libnvinfer.run(facts(uid=0, tensorrt=TRT_NOT_LISTED))
    assert finding.remedy.shell == (
        f"echo {TRT_DIR} | tee {roles.default('tensorrt', 'ldconfig_file')} && ldconfig"
    )
    assert finding.remedy.role == "tensorrt"


def test_a_tensorrt_in_a_home_folder_has_no_role():
    home = {"loaded": None, "files": [{**TRT_NOT_LISTED["files"][0], "dir": "/home/u/trt/lib"}]}
    (finding,) = libnvinfer.run(facts(tensorrt=home))
    assert finding.remedy.role is None
    assert finding.as_dict()["playbook"] is None


def test_the_nvidia_runtime_is_docker_runtimes():
    no_runtime = {"cli": "/usr/bin/docker", "csv_lists": [], "service_manager": "systemd",
                  "engine": {"reachable": True, "runtimes": ["runc"]}}  # fmt: skip
    for finding in docker.run(facts(docker=no_runtime)):  # the engine's, daemon.json's
        assert finding.remedy.role == "docker_runtime"
        assert "nvidia-ctk" not in finding.remedy.shell
        # No runtime binary: the role installs it only with its packages on.
        assert dict(finding.remedy.variables) == {
            "docker_runtime_install_packages": True,
            "docker_runtime_packages": [TOOLKIT],
        }
        assert finding.remedy.shell.startswith("sudo apt-get install -y nvidia-container-toolkit")


TOOLKIT = "nvidia-container-toolkit"  # x86's package of nvidia-container-runtime
REGISTERED = {"exists": True, "config": {"runtimes": {"nvidia": {
    "path": "nvidia-container-runtime", "runtimeArgs": []}}}}  # fmt: skip


@pytest.mark.parametrize(
    "engine", [{"reachable": True, "server_version": "20.10.24", "runtimes": ["nvidia", "runc"],
                "default_runtime": "runc"}, None], ids=["engine-lists-it", "no-engine"],
)  # fmt: skip
def test_a_registered_runtime_without_its_binary_is_not_ok(engine):
    """daemon.json (and the engine's `docker info`) name the nvidia runtime, but
    nvidia-container-runtime is not installed: `docker run --runtime nvidia` fails there."""
    registered = {"cli": "/usr/bin/docker", "csv_lists": [], "service_manager": "systemd",
                  "engine": engine, "daemon_json": REGISTERED,
                  "nvidia_container_runtime": None}  # fmt: skip

    findings = docker.run(facts(docker=registered))

    runtime = [f for f in findings if "nvidia-container-runtime is not installed" in f.summary]
    assert len(runtime) == (2 if engine else 1), findings
    assert [f.status for f in runtime] == ["warn"] * len(runtime)
    assert "ok" not in {f.status for f in findings if f.summary.startswith(DAEMON_JSON)}
    for finding in runtime:
        assert finding.remedy.shell == "sudo apt-get install -y nvidia-container-toolkit"
        assert finding.remedy.as_dict()["vars"] == {
            "docker_runtime_install_packages": True,
            "docker_runtime_packages": [TOOLKIT],
        }
    installed = docker.run(facts(docker={**registered, "nvidia_container_runtime":
                                         "/usr/bin/nvidia-container-runtime"}))  # fmt: skip
    assert {f.status for f in installed} == ({"ok"} if engine else {"ok", "warn"})


def test_the_login_script_remedy_gives_a_login_shell_cuda(tmp_path: Path):
    """The cuda_env remedy's shell, run for real into a scratch profile.d, then read by the
    cuda probe's login_settings and by a login shell."""
    no_login = {**CUDA_NOT_ON_PATHS, "login": {"PATH": [], "LD_LIBRARY_PATH": []}}
    cuda_facts = facts(uid=0, cuda=no_login)
    (login,) = [f for f in cuda.run(cuda_facts) if f.summary.startswith("login shells")]
    assert login.status == "warn" and login.remedy.role == "cuda_env"
    script = tmp_path / "jetson-env-cuda.sh"
    shell = login.remedy.shell.replace(roles.default("cuda_env", "profile_file"), str(script))
    subprocess.run(["sh", "-c", shell], check=True, capture_output=True)

    found = cuda_probe.login_settings("/usr/local/cuda-12.6", [str(script)])

    assert found == {"PATH": [str(script)], "LD_LIBRARY_PATH": [str(script)]}
    # Read twice (a login shell, then a sub-shell that reads it again): each folder once.
    login_shell = f'. {script}; . {script}; echo "$PATH"; echo "$LD_LIBRARY_PATH"; echo "$CPATH"'
    printed = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "sh", "-c", login_shell],
                             capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert printed == ["/usr/local/cuda-12.6/bin:/usr/bin:/bin", "/usr/local/cuda-12.6/lib64",
                       "/usr/local/cuda-12.6/include"]  # fmt: skip


def test_a_setting_the_login_script_gives_new_shells_is_ok_in_a_shell_that_predates_it(
    tmp_path: Path,
):
    """After provisioning, the shell the doctor runs in was started before the role wrote its
    script: nvcc off PATH and cuda.h not found are this shell's, not the host's. The script
    (the remedy's, written for real into a scratch profile.d) read by the cuda probe's own
    functions makes them ok, each with a note naming the script."""
    profile_d = tmp_path / "profile.d"
    profile_d.mkdir()
    script = profile_d / "jetson-env-cuda.sh"
    (remedy,) = {f.remedy for f in cuda.run(facts(uid=0, cuda=CUDA_NOT_ON_PATHS))[1:4]}
    shell = remedy.shell.replace(roles.default("cuda_env", "profile_file"), str(script))
    subprocess.run(["sh", "-c", shell], check=True, capture_output=True)
    provisioned = {
        **CUDA_NOT_ON_PATHS,
        "cudart": {"library": "libcudart.so.12", "version": "12.6"},
        "nvcc_in_root": "/usr/local/cuda-12.6/bin/nvcc",
        "login": cuda_probe.login_settings("/usr/local/cuda-12.6", [str(script)]),
        "profile_d": {v: cuda_probe.profile_scripts_setting(v, str(profile_d))
                      for v in ("PATH", "CPATH")},
    }  # fmt: skip

    findings = cuda.run(facts(uid=0, cuda=provisioned))

    assert [f.status for f in findings] == ["ok"] * 5, findings
    assert findings[1].summary == (
        f"nvcc is not on PATH in this shell (/usr/local/cuda-12.6/bin), which predates {script}:"
        f" new login shells get it (`. {script}` gives it to this one)"
    )
    assert findings[3].summary.startswith(
        "the C compiler does not find cuda.h in this shell (CPATH: /usr/local/cuda-12.6/include)"
        f", which predates {script}"
    )
    # A toolkit without its nvcc: the script cannot give new shells one.
    (_, nvcc, *_) = cuda.run(facts(uid=0, cuda={**provisioned, "nvcc_in_root": None}))
    assert nvcc.status == "warn" and "has none (/usr/local/cuda-12.6/bin/nvcc)" in nvcc.summary


def test_the_daemon_json_remedy_is_the_roles_merge(tmp_path: Path):
    """daemon.json without the nvidia runtime, no engine: the remedy's shell, run for real on
    a copy, keeps the other keys and a backup, as docker_runtime's merge does."""
    written = {"exists": True, "error": None, "config": {"log-level": "warn"}}
    daemon = {"cli": None, "engine": None, "csv_lists": None, "service_manager": None,
              "daemon_json": written,
              "nvidia_container_runtime": "/usr/bin/nvidia-container-runtime"}  # fmt: skip
    (skip, finding) = docker.run(facts(uid=0, docker=daemon))
    assert skip.status == "skip" and finding.status == "warn"
    assert finding.remedy.role == "docker_runtime" and "restart" not in finding.remedy.shell
    path = tmp_path / "docker" / "daemon.json"
    path.parent.mkdir()
    path.write_text('{"log-level": "warn"}')
    shell = finding.remedy.shell.replace(roles.default("docker_runtime", "daemon_json"), str(path))
    shell = shell.replace("mkdir -p /etc/docker", f"mkdir -p {path.parent}")
    subprocess.run(["sh", "-c", shell], check=True, capture_output=True)

    assert json.loads(path.read_text()) == {
        "log-level": "warn",
        "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}},
    }
    backup = tmp_path / "docker" / "daemon.json.bak"
    assert json.loads(backup.read_text()) == {"log-level": "warn"}
    merged = {**daemon, "daemon_json": {**written, "config": json.loads(path.read_text())}}
    assert docker.run(facts(uid=0, docker=merged))[1].status == "ok"


def test_the_probes_read_the_docker_runtime_roles_paths():
    assert roles.default("docker_runtime", "daemon_json") == docker_probe.DAEMON_JSON
    assert roles.default("docker_runtime", "csv_dir") == docker_probe.CSV_DIR


@pytest.fixture
def renamed_roles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the collection's roles the test edits, read instead of the shipped ones."""
    shutil.copytree(collection.PATH / "roles", tmp_path / "roles")
    monkeypatch.setattr(collection, "PATH", tmp_path)
    roles.defaults.cache_clear()
    yield tmp_path
    roles.defaults.cache_clear()


def test_renaming_a_roles_file_renames_it_in_the_doctors_text(renamed_roles: Path):
    defaults = renamed_roles / "roles" / "tensorrt" / "defaults" / "main.yml"
    defaults.write_text(
        defaults.read_text().replace("jetson-env-tensorrt.conf", "site-tensorrt.conf")
    )
    (finding,) = libnvinfer.run(facts(uid=0, tensorrt=TRT_NOT_LISTED))
    assert "tee /etc/ld.so.conf.d/site-tensorrt.conf" in finding.remedy.shell


def test_the_defaults_read_are_the_collections_own():
    collection_roles = REPO / "ansible_collections" / "jetson_env" / "jetson" / "roles"
    for role in ("cuda_env", "docker_runtime", "python_base", "tensorrt", "torch"):
        path = collection_roles / role / "defaults" / "main.yml"
        assert roles.defaults(role) == yaml.safe_load(path.read_text())


def test_a_missing_csv_list_is_installed_by_docker_runtime_l4t_csv_is_not():
    """JetPack 4: the role's CSV lists by name; a missing list's package is the role's to
    install, only that package; l4t.csv comes with L4T and has no role."""
    raw = {"is_jetson": True, "machine": "aarch64", "l4t": "32.4.3", "gpus": [], "uid": 0,
           "os": {"pretty_name": "Ubuntu 18.04"}, "unknown": {},
           "python": {"version": "3.6.9", "executable": SYSTEM_PYTHON}}  # fmt: skip
    csv_dir = roles.default("docker_runtime", "csv_dir")
    present = [{"file": f"{csv_dir}/{name}", "error": None, "entries": 1, "missing": [], "bad": []}
               for name in ("cuda.csv", "tensorrt.csv")]  # fmt: skip
    no_daemon_json = {"exists": False, "error": "No such file or directory"}
    docker_facts = {"cli": None, "engine": None, "csv_lists": present, "service_manager": None,
                    "daemon_json": no_daemon_json}  # fmt: skip
    results = {"platform": ProbeResult("platform", raw, None, 0.1),
               "docker": ProbeResult("docker", docker_facts, None, 0.1)}  # fmt: skip
    platform = {**raw, "compute_capability": "5.3", "jetpack": "4.4", "supported": True}

    findings = docker.run(Facts(results, MATRIX, platform))

    cudnn, l4t = (f for f in findings if "missing in" in f.summary)
    assert cudnn.summary.startswith(f"JetPack 4: cudnn.csv missing in {csv_dir}")
    assert cudnn.remedy.shell == "apt-get install -y nvidia-container-csv-cudnn"
    assert cudnn.as_dict()["playbook"] == {
        "role": "docker_runtime", "tags": ["docker_runtime"],
        "vars": {"docker_runtime_install_packages": True,
                 "docker_runtime_packages": ["nvidia-container-csv-cudnn"]},
    }  # fmt: skip
    assert l4t.summary.startswith("JetPack 4: l4t.csv missing") and l4t.remedy.role is None


@pytest.mark.parametrize(
    ("python", "uid", "expected"),
    [
        # A venv of one's own: its pip, as the user, no sudo, no --user, no PEP 668 flag.
        ({"executable": "/home/u/venv/bin/python", "in_venv": True, "externally_managed": True,
          "site_packages_writable": True}, 1000,
         "/home/u/venv/bin/python -m pip install termcolor"),
        # A venv root made (/opt): sudo, still no flag (PEP 668 never applies inside a venv).
        ({"executable": "/opt/venv/bin/python", "in_venv": True, "externally_managed": True,
          "site_packages_writable": False}, 1000,
         "sudo /opt/venv/bin/python -m pip install termcolor"),
        # The system Python without PEP 668's marker (JetPack 4-6): as root, never --user.
        ({"executable": SYSTEM_PYTHON, "in_venv": False, "externally_managed": False,
          "site_packages_writable": False}, 1000, f"sudo {SYSTEM_PYTHON} -m pip install termcolor"),
        # root on an externally managed system Python (JetPack 7, Debian 12): the flag only.
        ({"executable": SYSTEM_PYTHON, "in_venv": False, "externally_managed": True,
          "site_packages_writable": True}, 0,
         f"{SYSTEM_PYTHON} -m pip install --break-system-packages termcolor"),
    ],
)  # fmt: skip
def test_one_pip_policy_for_venvs_system_pythons_root_and_users(python, uid, expected):
    pymodules = {**NO_TERMCOLOR, "python": python}
    (finding,) = termcolor.run(facts(pymodules=pymodules, uid=uid, python=python["executable"]))
    assert finding.remedy.shell == expected
    assert "--user" not in finding.remedy.shell


# A "permission denied" from the engine: the user's docker group, then a new login.
NO_ACCESS = {"cli": "/usr/bin/docker", "csv_lists": [], "service_manager": "systemd",
             "engine": {"reachable": False, "error": "permission denied while trying to "
                        "connect to the Docker daemon socket"}}  # fmt: skip


def test_a_remedy_holds_only_what_can_be_pasted_its_words_are_its_note(capsys):
    """`sudo usermod -aG docker $USER` alone is the command; "then log in again" is the note,
    printed plain under it, and in --json beside it (fixes' note, findings' remedy_note)."""
    from jetson_env import doctor
    from jetson_env.terminal import Terminal

    finding = docker.run(facts(docker=NO_ACCESS))[0]
    assert finding.summary == "the Docker engine does not answer"
    assert finding.remedy.shell == "sudo usermod -aG docker $USER"
    assert finding.remedy.note.startswith("then log in again")
    jetpack = libnvinfer.reinstall_jetpack_remedy(facts(uid=0))
    assert jetpack.shell == "apt-get install --reinstall -y nvidia-tensorrt"
    assert jetpack.note == "reinstalls JetPack's TensorRT"

    report = doctor.Report("local", None, [finding], {}).as_dict()
    (fix,) = report["fixes"]
    assert (fix["command"], fix["note"]) == (finding.remedy.shell, finding.remedy.note)
    assert report["findings"][0]["remedy_note"] == finding.remedy.note
    Terminal().findings(report)  # not a terminal: plain
    lines = capsys.readouterr().out.splitlines()
    command = lines.index("sudo usermod -aG docker $USER")
    assert lines[command + 1] == f"   {finding.remedy.note}"
