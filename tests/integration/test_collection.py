"""The collection as a team installs it: `ansible-galaxy collection build` makes the
tarball, `ansible-galaxy collection install` puts it into an empty collections path, and a
user's own small playbook, in a folder of its own with its own ansible.cfg, calls two
roles by their FQCN against a fresh x86 test host.

The checkout's copy cannot be what runs: the test venv's jetson-env is an editable
install (no `ansible_collections` folder on sys.path), the user's folder has no
playbooks/collections link, and the user's ansible.cfg names only the installed path.
"""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from playbook_support import remove_host, start_host
from support.hosts import REPO_ROOT
from support.standins import stage_container_runtime

pytestmark = pytest.mark.hosts

COLLECTION = REPO_ROOT / "ansible_collections" / "jetson_env" / "jetson"
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((COLLECTION / "galaxy.yml").read_text())
DAEMON_JSON = "/etc/docker/daemon.json"


def galaxy(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "ansible-galaxy"), "collection", *args], cwd=cwd,
                          capture_output=True, text=True, check=True, timeout=300)  # fmt: skip


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("galaxy-build")
    galaxy("build", str(COLLECTION), "--output-path", str(out), cwd=out)
    (built,) = out.glob("*.tar.gz")
    assert built.name == f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"
    return built


def test_the_tarball_has_the_roles_playbooks_and_the_probes_themselves(tarball: Path):
    with tarfile.open(tarball) as archive:
        members = {member.name: member for member in archive.getmembers()}
        for role in ("jetson_facts", "cuda_env", "torchvision", "docker_runtime"):
            assert f"roles/{role}/tasks/main.yml" in members
        assert "playbooks/provision.yml" in members and "meta/runtime.yml" in members
        # module_utils are links to jetson_env/probes in the checkout: the tarball must carry
        # the probe's text, or the modules cannot import it where the collection is installed.
        probe = members["plugins/module_utils/jetson_env_platform.py"]
        assert probe.isfile(), "a link out of the collection would dangle once installed"
        text = archive.extractfile(probe).read().decode()
        manifest = json.loads(archive.extractfile("MANIFEST.json").read())
    assert text == (REPO_ROOT / "jetson_env" / "probes" / "platform.py").read_text()
    assert manifest["collection_info"]["name"] == "jetson"


def test_a_users_playbook_calls_two_roles_of_the_installed_collection(
    tarball: Path, tmp_path: Path
):
    collections = tmp_path / "collections"
    collections.mkdir()
    galaxy("install", str(tarball), "-p", str(collections), cwd=tmp_path)
    installed = collections / "ansible_collections" / "jetson_env" / "jetson"
    assert (installed / "roles" / "python_base" / "tasks" / "main.yml").is_file()

    host = start_host("x86-debian12", "collection-user")
    try:
        stage_container_runtime(host)  # the nvidia runtime is registered where it is installed
        fleet = tmp_path / "fleet"
        fleet.mkdir()
        (fleet / "ansible.cfg").write_text(
            f"[defaults]\ncollections_path = {collections}\ninventory = hosts.yml\n"
            "retry_files_enabled = false\n"
        )
        (fleet / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"gpu-1": {
            "ansible_connection": "community.docker.docker",
            "ansible_host": host.container,
            "ansible_python_interpreter": "/usr/bin/python3",
        }}}}))  # fmt: skip
        (fleet / "site.yml").write_text(yaml.safe_dump([{
            "name": "Python packages and Docker's nvidia runtime",
            "hosts": "all",
            "gather_facts": False,
            "roles": [
                {"role": "jetson_env.jetson.python_base"},
                {"role": "jetson_env.jetson.docker_runtime",
                 "vars": {"docker_runtime_container_build": True,
                          "docker_runtime_install_packages": False}},
            ],
        }], sort_keys=False))  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        env["ANSIBLE_FORCE_COLOR"] = "0"
        before = set(os.listdir(fleet))

        run = subprocess.run(
            [str(BIN / "ansible-playbook"), "site.yml"], cwd=fleet, env=env,
            capture_output=True, text=True, timeout=1200, check=False,
        )  # fmt: skip

        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        # jetson_facts came in as the roles' dependency, once
        probes = "TASK [jetson_env.jetson.jetson_facts : Detect the platform, CUDA and Python with"
        assert run.stdout.count(probes) == 1
        assert "TASK [jetson_env.jetson.python_base" in run.stdout
        assert host.exec(["python3", "-c", "import termcolor"], check=False).returncode == 0
        daemon = json.loads(host.exec(["cat", DAEMON_JSON]).stdout)
        assert "nvidia" in daemon["runtimes"]
        # the user's folder got nothing: no lock file, no fact cache, no retry file
        assert set(os.listdir(fleet)) == before
    finally:
        remove_host(host)
