"""Running playbooks/jetson.yml for real against dedicated Docker test hosts.

The playbook tests change their hosts a lot (torch, TensorRT, daemon.json), so they
use their own containers (jetson-env-test-playbook-<name>) started from the shared
host images, instead of the session hosts other tests expect unprovisioned.
"""

import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml
from support.ansible_envs import AnsibleEnd
from support.hosts import (
    DEVICE_TREE_DIR,
    FIXTURES,
    HOSTS,
    REPO_ROOT,
    TESTS_CACHE,
    Host,
    HostImage,
    HostSpec,
    ProvisionExtraImage,
    _file_lock,
)
from support.local_play import JSON_CALLBACK, task_deprecations

from jetson_env import collection

PLAYBOOK = REPO_ROOT / "playbooks" / "jetson.yml"
# The roles' folder: the collection's (jetson_env/collection.py), wherever it moves.
ROLES_DIR = collection.PATH / "roles"
TORCH_WHEEL_X86 = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
WHEELS = TESTS_CACHE / "wheels"
TORCHVISION_FIXTURE = REPO_ROOT / "tests" / "fixtures" / "torchvision-like"
PLAYBOOK_TIMEOUT_S = 1800
# What a playbook test's provisioned state depends on in the checkout beside its own module
# (tests/support/provisioned.py keys the state by these files' paths and contents).
SHARED_PROVISION_INPUTS = (
    "ansible_collections/jetson_env/jetson",
    "jetson_env",
    "playbooks/jetson.yml",
    "ansible.cfg",
    "tests/integration/playbook_support.py",
    "tests/support",
)


def provision_inputs(module: str, *more: str) -> tuple[str, ...]:
    """The inputs of a provisioned state of the test module `module` (its __file__): the shared
    ones, the module and `more`, tests/fixtures when none (a module may name only the fixtures
    its hosts are made of)."""
    return (*SHARED_PROVISION_INPUTS, Path(module).relative_to(REPO_ROOT).as_posix(),
            *(more or ("tests/fixtures",)))  # fmt: skip


# A host with no network provisioned from a bundle: off, what needs apt (a bundle carries no
# .debs) or a CUDA toolkit (pycuda) the hosts do not have.
OFFLINE_VARS = {
    "python_base_matrix_apt_packages": False,
    "jetpack_apt_enabled": False,
    "docker_runtime_enabled": False,
    "tensorrt_enabled": False,
    "torch2trt_enabled": False,
    "torchvision_enabled": False,
    "pycuda_enabled": False,
}


def from_an_unrelated_folder(*argv: str) -> list[str]:
    """`argv` as a user types it on a host, from a folder of no checkout, bundle or config."""
    return ["sh", "-c", "mkdir -p /var/tmp/unrelated && cd /var/tmp/unrelated && "
            + shlex.join(argv)]  # fmt: skip


def install_bundle_controller(host: Host, line: str, bundle: Path, on_host: str, venv: str) -> str:
    """jetson-env and its ansible-core from a bundle's controller/, copied to `on_host`, into a
    new venv on `host` with no index: the install line `bundle --json` prints (`line`, naming
    `bundle`), as typed there. That venv's jetson-env."""
    host.exec(["python3", "-m", "venv", venv])
    install = shlex.split(line.replace(str(bundle), on_host))[1:]
    host.exec([f"{venv}/bin/pip", "--isolated", "--quiet", *install])
    return f"{venv}/bin/jetson-env"


def start_host(
    image_of: str,
    name: str,
    image: str | None = None,
    env: dict[str, str] | None = None,
    network: str = "host",
) -> Host:
    """A fresh container `jetson-env-test-<name>` from the image of host `image_of`, or from
    `image`, one derived from it, with `env` in its environment (what `docker exec`, and so
    Ansible, sees); `network` "none" cuts it off from every network."""
    image = image or HostImage(HOSTS[image_of]).ensure()
    spec = HostSpec(name, HOSTS[image_of].debian_arch)
    env_args = [arg for key, value in (env or {}).items() for arg in ("--env", f"{key}={value}")]
    subprocess.run(["docker", "rm", "--force", spec.container], capture_output=True, check=False)
    subprocess.run(
        ["docker", "run", "--detach", "--network", network, "--name", spec.container, *env_args,
         image, "sleep", "infinity"],
        check=True, capture_output=True,
    )  # fmt: skip
    return Host(spec)


def start_x86_with_files_of(
    jetson: str, name: str, network: str = "host", provision_extra: bool = False
) -> Host:
    """An x86 test host with the release files of the Jetson `jetson` (tests/fixtures/hosts/)
    and its device tree: a Jetson to the probes and the roles, without qemu's 5-20x, for a
    test whose subject is no aarch64 binary (tests/README.md, "Test hosts"). With
    `provision_extra`, its /opt/jetson-env has the `provision` extra's ansible-core (from the
    image, ProvisionExtraImage): the host runs `jetson-env provision` or `doctor --fix` itself."""
    image = ProvisionExtraImage("x86-debian12").ensure() if provision_extra else None
    host = start_host("x86-debian12", name, image=image,
                      env={"JETSON_ENV_DEVICE_TREE": DEVICE_TREE_DIR}, network=network)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="jetson-env-files-") as folder:
        tree = Path(folder) / jetson
        shutil.copytree(FIXTURES / jetson, tree, symlinks=True,
                        ignore=shutil.ignore_patterns(".gitkeep"))  # fmt: skip
        host.copy_in(f"{tree}/.", "/")
    return host


def remove_host(host: Host) -> None:
    """The container gone: renamed at once (its name is free for the next start), then removed
    in the background. Removing a provisioned host's layer (torch and a build's files) took
    up to 45 s that the next test waited for (the newcomer's, measured on 2 cores)."""
    if os.environ.get("JETSON_ENV_KEEP_HOSTS") == "1":
        return
    removed = f"{host.container}-removed-{os.getpid()}-{time.monotonic_ns()}"
    renamed = subprocess.run(["docker", "rename", host.container, removed],
                             capture_output=True, check=False)  # fmt: skip
    if renamed.returncode != 0:  # not there, or the engine refused: remove it as it is
        subprocess.run(["docker", "rm", "--force", host.container], capture_output=True,
                       check=False)  # fmt: skip
        return
    subprocess.run(["sh", "-c", f"docker rm --force {shlex.quote(removed)} >/dev/null 2>&1 &"],
                   check=True)  # fmt: skip


def downloaded_wheel(name: str, version: str, platform: str, python_version: str = "3.11") -> Path:
    """PyPI's wheel of name==version for a platform, in WHEELS (downloaded once)."""
    machine = next(m for m in ("x86_64", "aarch64") if platform.endswith(m))
    pattern = f"{name}-{version}-*{machine}.whl"
    with _file_lock(f"wheel-{name}-{version}-{machine}"):  # pytest-xdist workers share it
        found = sorted(WHEELS.glob(pattern))
        if found:
            return found[-1]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--platform", platform, "--python-version", python_version,
             "--dest", str(WHEELS), f"{name}=={version}"],
            check=True, capture_output=True, timeout=PLAYBOOK_TIMEOUT_S,
        )  # fmt: skip
        return sorted(WHEELS.glob(pattern))[-1]


def pip_version(host: Host, name: str) -> str | None:
    """The version of a distribution installed for the host's /usr/bin/python3, else None."""
    result = host.exec(
        ["python3", "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
        check=False,
    )
    return result.stdout.strip() if result.returncode == 0 else None


def paths_changed_since(host: Host, marker: str, user: str | None = None) -> set[str]:
    """Paths on the host's root file system modified after `marker` was touched.

    Ansible's own temporary folders (/root/.ansible, /tmp) are left out: every task
    creates and removes one there. With `user` (Ansible's remote user, becoming root), that
    user's ~/.ansible, pip's cache of root and sudo's log are left out too.
    """
    prune = ["/proc", "/root/.ansible", "/tmp"]
    ignored = {"/root", "/tmp"}
    if user:
        prune += [f"/home/{user}/.ansible", "/root/.cache"]
        ignored |= {f"/home/{user}", "/var/log", "/var/log/sudo.log"}
    pruned = [arg for path in prune for arg in ("-o", "-path", path)][1:]
    result = host.exec(["find", "/", "-xdev", "(", *pruned, ")", "-prune", "-o", "-newer", marker,
                        "-print"])  # fmt: skip
    return set(result.stdout.splitlines()) - ignored


def source_archive(source: Path, top: str, dest: Path) -> Path:
    """A tar.gz of a source tree under one top folder, like a release archive."""
    archive = dest / f"{top}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname=top)
    return archive


def write_inventory(path: Path, hosts: dict[str, dict], common: dict) -> Path:
    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "community.docker.docker",
                "ansible_python_interpreter": "/usr/bin/python3",
                # The containers run as root and have no sudo.
                "ansible_become": False,
                **common,
            },
            "hosts": hosts,
        }
    }
    path.write_text(yaml.safe_dump(inventory))
    return path


@cache
def declared_task_names() -> frozenset[str]:
    """The name of every task (and block) in the playbook and its roles, as written."""
    names = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                if isinstance(child, dict) and isinstance(child.get("name"), str):
                    names.add(child["name"])
                walk(child)

    for path in [collection.playbook_file("provision"), *sorted(ROLES_DIR.glob("*/tasks/*.yml"))]:
        walk(yaml.safe_load(path.read_text()))
    return frozenset(names)


def _names_it(name: str, name_part: str) -> bool:
    """Whether a task declared as `name` shows up containing `name_part`: a part of its text,
    or a whole rendering of it (a Jinja expression in a name stands for any text)."""
    rendered = ".+".join(re.escape(part) for part in re.split(r"\{\{.*?\}\}", name))
    return name_part in name or re.search(rendered, name_part) is not None


def declared(name_part: str) -> str:
    """`name_part`, after checking that a task of the playbook or its roles is named with it:
    a test about a task that was renamed must fail, not find it absent."""
    assert any(_names_it(name, name_part) for name in declared_task_names()), (
        f"no task of {PLAYBOOK.name} or its roles is named with {name_part!r}: renamed?"
    )
    return name_part


def declared_tasks(*names: str) -> set[str]:
    """Task names as changed_tasks() gives them, each checked to be declared."""
    return {declared(name) for name in names}


@dataclass
class PlayResult:
    rc: int
    report: dict
    stderr: str
    wall_s: float

    @property
    def stats(self) -> dict:
        return self.report.get("stats", {})

    def changed(self, host: str) -> int:
        return self.stats[host]["changed"]

    def failed(self, host: str) -> int:
        return self.stats[host]["failures"]

    def tasks(self) -> list[dict]:
        return [task for play in self.report.get("plays", []) for task in play["tasks"]]

    def task_hosts(self, name_part: str, status: str = "ran") -> set[str]:
        """Hosts on which a task whose name contains `name_part` ran (not skipped); the
        name must be one the playbook or its roles declare."""
        declared(name_part)
        found = set()
        for task in self.tasks():
            if name_part not in task["task"]["name"]:
                continue
            for host, result in task["hosts"].items():
                if not result.get("skipped"):
                    found.add(host)
        return found

    def task_result(self, name_part: str, host: str) -> dict:
        """The result for `host` of the one task whose name contains `name_part`."""
        declared(name_part)
        (result,) = [
            task["hosts"][host]
            for task in self.tasks()
            if name_part in task["task"]["name"] and host in task["hosts"]
        ]
        return result

    def changed_tasks(self, host: str) -> set[str]:
        """Names (without the role's prefix) of the tasks that reported a change for `host`."""
        return {
            task["task"]["name"].split(" : ", 1)[-1]
            for task in self.tasks()
            if task["hosts"].get(host, {}).get("changed")
        }

    def failures(self, host: str | None = None) -> list[tuple[str, str]]:
        """(task name, message) of every failure (on `host`): a loop's items one by one, in
        place of the loop's own summary ("One or more items failed")."""
        out = []
        for task in self.tasks():
            for name, result in task["hosts"].items():
                if host not in (None, name):
                    continue
                for item in result.get("results") or [result]:
                    # ansible-core 2.21 leaves `failed` out of a failed loop item of
                    # validate_argument_spec; its `exception` is still there.
                    if item.get("failed") or "exception" in item:
                        out.append((task["task"]["name"], str(item.get("msg", ""))))
        return out

    def messages(self) -> str:
        """Every failure message, after its task's name: what a user would read."""
        return "\n".join(f"{task}: {message}" for task, message in self.failures())


# Where a playbook test runs in the Ansible range (tests/conftest.py's `ansible_ends`, which
# deselects it at the other end): the end matters for syntax, module arguments and JetPack
# 4's Python 3.6, so those run at both ends (or the oldest); the rest at the newest only.
MODULE_ARGUMENTS = pytest.mark.ansible_ends(
    "both", why="module arguments: a full run, every task of its roles, at each end"
)
CHANGE_REPORTING = pytest.mark.ansible_ends(
    "both", why="changed=0 is the modules' own change reporting, which each end has"
)
ENGINE = pytest.mark.ansible_ends(
    "both", why="ansible-core's engine decides (argument specs, block/rescue), at each end"
)
JETPACK_4 = pytest.mark.ansible_ends(
    "oldest", why="JetPack 4: its Python 3.6 is driven by ansible-core 2.16 alone"
)
ROLE_RULE = pytest.mark.ansible_ends(
    "newest", why="the roles' own rule (a filter, a fail task): the same at every end"
)
CHECK_MODE = pytest.mark.ansible_ends(
    "newest", why="--check: the roles' when/check_mode logic; the modules ran in a full run"
)
NO_PLAYBOOK = pytest.mark.ansible_ends("newest", why="no playbook runs: the end does not matter")

# What no run may print: deprecations (they break on the next ansible-core), template
# errors (a task name or message that does not render: "'torch_verified_version' is
# undefined") and the warnings Ansible's YAML loader gives for merge keys.
FORBIDDEN_STDERR = ("[DEPRECATION WARNING]", "deprecat", "template error", "duplicate dict key")


def run_playbook(
    ansible: AnsibleEnd,
    inventory: Path,
    *args: str,
    extra_vars: dict | None = None,
    check: bool = False,
    env: dict | None = None,
    playbook: Path = PLAYBOOK,
) -> PlayResult:
    """ansible-playbook of `ansible` (one end of the supported range) on `playbook`
    (playbooks/jetson.yml)."""
    cmd = [str(ansible.bin("ansible-playbook")), "-i", str(inventory), str(playbook), *args]
    if extra_vars:
        cmd += ["--extra-vars", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    env = {
        **os.environ,
        "ANSIBLE_STDOUT_CALLBACK": JSON_CALLBACK,
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
        **(env or {}),
    }
    start = time.monotonic()
    result = subprocess.run(
        cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=PLAYBOOK_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    wall = time.monotonic() - start
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        report = {"unparsed": result.stdout}
    _log_slowest_tasks(report, wall)
    for forbidden in FORBIDDEN_STDERR:
        assert forbidden.lower() not in result.stderr.lower(), (
            f"{ansible.versions} printed {forbidden!r}:\n{result.stderr}"
        )
    assert task_deprecations(report) == [], f"{ansible.versions} deprecated"
    return PlayResult(result.returncode, report, result.stderr, wall)


TIMINGS_LOG = REPO_ROOT / ".cache" / "test-logs" / "playbook-timings.log"


def _log_slowest_tasks(report: dict, wall: float, count: int = 6) -> None:
    """Append the run's wall time and its slowest tasks (the json callback's durations) to
    TIMINGS_LOG: where the test run's time goes, for keeping it short."""
    durations = []
    for play in report.get("plays", []):
        for task in play["tasks"]:
            span = task["task"].get("duration", {})
            if "start" in span and "end" in span:
                seconds = (
                    datetime.datetime.fromisoformat(span["end"].rstrip("Z"))
                    - datetime.datetime.fromisoformat(span["start"].rstrip("Z"))
                ).total_seconds()
                durations.append((seconds, task["task"]["name"]))
    slowest = ", ".join(
        f"{name} {seconds:.0f}s" for seconds, name in sorted(durations)[-count:][::-1]
    )
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    TIMINGS_LOG.parent.mkdir(parents=True, exist_ok=True)
    with TIMINGS_LOG.open("a") as log:
        log.write(f"{wall:6.0f}s {test}: {slowest}\n")


def vars_for_test_hosts(work: Path, torch_wheel: Path = TORCH_WHEEL_X86) -> dict:
    """Variables that let the roles run on a Docker test host (Python 3.11).

    torch is a real CPU wheel from the controller (x86's by default); torchvision is built from the
    torchvision-like fixture, given as a source archive on the controller with its sha256 (the
    matrix pins only pytorch/vision's real release tarballs); there is no
    systemd or Docker daemon (container-build mode); the stand-in TensorRT cannot back a
    real torch2trt import, so torch2trt is off. NVIDIA's Jetson apt repository is not
    reachable: Jetson tests point jetpack_apt at tests/support/standin_apt.py or turn it off.
    """
    vision = source_archive(TORCHVISION_FIXTURE, "vision-0.28.0", work)
    return {
        "torch_wheel_file": str(torch_wheel),
        "torch_lock_file": str(work / "jetson-env.lock.yml"),
        "torch_controller_cache": str(work / "cache" / "torch"),
        "torchvision_source_archive": str(vision),
        "torchvision_source_sha256": hashlib.sha256(vision.read_bytes()).hexdigest(),
        "torchvision_wheel_cache": str(work / "cache" / "torchvision"),
        "torchvision_apt_packages": ["g++", "python3-dev"],
        "docker_runtime_install_packages": False,
        "docker_runtime_container_build": True,
        "torch2trt_enabled": False,
    }
