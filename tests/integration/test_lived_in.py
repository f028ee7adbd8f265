"""Provisioning and fixing a host as users have it (issue 24), not a pristine image.

The lived-in x86 host (tests/support/hosts.py, LivedInImage) has a non-root user with sudo,
PEP 668's marker on the system Python, a root-made venv with a working torch (2.13.0, CPU:
there is no GPU) that is the target interpreter, the user's own /usr/local/bin/nvcc wrapper,
the files NVIDIA's CUDA installer leaves, a daemon.json with other keys and no Docker
engine, no apt package lists, and its network cut (`--network none`): the controller's
files and the host's wheelhouse are the only sources. The matrix's x86 torch is another
(2.14.1, a CUDA build): the host's working torch is not the matrix's, as on a Jetson whose
user installed a newer working torch than NVIDIA's.

The playbook reaches it as Ansible users do: the docker connection as the user, become
(sudo), and the venv as ansible_python_interpreter (issue 24's case 3: apt's tasks must
still run with the system Python). Roles: jetson_facts, cuda_env, python_base, torch,
tensorrt (the stand-in tarball, a controller file), docker_runtime; torchvision, pycuda and
torch2trt are off (no compiler and no network to get one; test_playbook_x86.py builds them).
The first --check and the first run (with the second) are about the host never provisioned;
every later test gets a provisioned host of its own (tests/support/provisioned.py: a
container of the state the first run kept, else one it provisions itself), so any test id
alone, in any order or worker, gives the whole run's verdict: --check after the run, the
doctor, its --fix as the user (single host and fleet), issue 33's promise (jetson-env
provision and the doctor as the user runs them, then with pyenv's shims first on PATH), a
default bundle, and every pip remedy the doctor prints, run as printed.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from playbook_support import (
    TORCH_WHEEL_X86,
    paths_changed_since,
    provision_inputs,
    remove_host,
    run_playbook,
    write_inventory,
)
from support.ansible_envs import ANSIBLE_ENDS, AnsibleEnd
from support.hosts import (
    LIVED_IN_BUNDLE_ARGS,
    LIVED_IN_BUNDLE_LOCK,
    LIVED_IN_DAEMON_JSON,
    LIVED_IN_NVCC,
    LIVED_IN_USER,
    LIVED_IN_VENV,
    LIVED_IN_WHEELHOUSE,
    VENV,
    Host,
    LivedInImage,
    _file_lock,
    lived_in_cuda_tar,
    start_lived_in,
)
from support.provisioned import ProvisionedState
from support.schemas import fix_schema_validator
from support.standins import (
    build_standin_wheel,
    build_tensorrt_tarball,
    stage_container_runtime,
)

from jetson_env import collection, matrix, roles
from jetson_env.checks import BY_NAME

pytestmark = pytest.mark.hosts

HOST = "livedin"
SYSTEM_PYTHON = "/usr/bin/python3"
INSTALLED_TORCH = "2.13.0+cpu"
MARKER = "/var/tmp/before-run"
DAEMON_JSON = roles.default("docker_runtime", "daemon_json")
CUDA_PROFILE = roles.default("cuda_env", "profile_file")
# The host is offline: a role that needs apt's package lists fails at the first `apt-get
# update` instead of after five with growing waits between them (about a minute each time).
OFFLINE_APT = {"apt_packages_update_cache_retries": 1}
CHECKS = ("--check", "termcolor", "--check", "cuda", "--check", "torch", "--check", "docker",
          "--check", "libnvinfer", "--check", "tensorrt-python", "--no-smoke")  # fmt: skip


@dataclass(frozen=True)
class LivedIn:
    host: Host
    ansible: AnsibleEnd
    inventory: Path
    work: Path
    playbook_vars: dict


# What decides the provisioned state the tests after the first run start from.
PROVISION_INPUTS = provision_inputs(__file__, "tests/fixtures", "pyproject.toml")


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> LivedInImage:
    cuda_tar = lived_in_cuda_tar(tmp_path_factory.mktemp("lived-in-toolkit"))
    return LivedInImage("x86-debian12", cuda_tar, TORCH_WHEEL_X86)


def start_unprovisioned(image: LivedInImage, name: str) -> Host:
    """A lived-in host as its user has it, never provisioned."""
    host = start_lived_in(image, name)
    host.install_project()
    # The GPU server's user has NVIDIA's container runtime: docker_runtime registers it.
    stage_container_runtime(host)
    return host


def play_vars(work: Path) -> dict:
    """The play's variables, its files (the TensorRT tarball, the lock file) under `work`."""
    tarball = build_tensorrt_tarball("10.3.0", "cp311", work / "trt")
    return {
        "jetson_facts_python": f"{LIVED_IN_VENV}/bin/python",
        "torch_lock_file": str(work / "jetson-env.lock.yml"),
        "torch_controller_cache": str(work / "cache" / "torch"),
        "tensorrt_tarball": str(tarball),
        "torchvision_enabled": False,
        "pycuda_enabled": False,
        "torch2trt_enabled": False,
    }


def lived_in_at(host: Host, work: Path, playbook_vars: dict) -> LivedIn:
    inventory = write_inventory(work / "inventory.yml", {HOST: {
        "ansible_host": host.container, "ansible_user": LIVED_IN_USER, "ansible_become": True,
        # The venv as Ansible's interpreter, as users point the roles at their torch.
        "ansible_python_interpreter": f"{LIVED_IN_VENV}/bin/python"}}, playbook_vars)  # fmt: skip
    return LivedIn(host, ANSIBLE_ENDS["newest"].ensure(), inventory, work, playbook_vars)


def provision(lived_in: LivedIn) -> None:
    """The first run, as test_the_run_converges_and_keeps_what_the_user_has makes it."""
    result = run_playbook(lived_in.ansible, lived_in.inventory)
    assert result.rc == 0, result.messages() or result.stderr[-3000:]


@pytest.fixture(scope="module")
def state(image: LivedInImage) -> ProvisionedState:
    """The provisioned lived-in host the tests after the first run start from."""
    return ProvisionedState("x86-debian12-lived-in", "newest", PROVISION_INPUTS,
                            base=image.ensure())  # fmt: skip


@pytest.fixture
def unprovisioned(tmp_path: Path, image: LivedInImage) -> Iterator[LivedIn]:
    """The host before any run, of this test's own (the first --check and the first run are
    about it): the run's test does not leave --check's a provisioned host when a selection
    names them in the other order."""
    work = tmp_path / "controller"
    work.mkdir()
    host = start_unprovisioned(image, HOST)
    try:
        yield lived_in_at(host, work, play_vars(work))
    finally:
        remove_host(host)


@pytest.fixture
def lived_in(tmp_path: Path, image: LivedInImage, state: ProvisionedState) -> Iterator[LivedIn]:
    """A provisioned lived-in host of this test's own: a container of the kept state (the
    first run's test keeps it), else one provisioned here as that test does (and kept)."""
    name = f"{HOST}-provisioned"

    def start(derived: str | None) -> Host:
        return start_lived_in(image, name, derived) if derived else start_unprovisioned(image, name)

    def provisioned(host: Host, work: Path) -> dict:
        playbook_vars = play_vars(work)
        provision(lived_in_at(host, work, playbook_vars))
        return playbook_vars

    work = tmp_path / "controller"
    work.mkdir()
    host, playbook_vars = state.host(work, start, provisioned)
    try:
        yield lived_in_at(host, work, playbook_vars)
    finally:
        remove_host(host)


def touch_marker(host: Host) -> None:
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])


def file_text(host: Host, path: str) -> str:
    return host.exec(["cat", path]).stdout


def python_has(host: Host, python: str, module: str) -> bool:
    return host.exec([python, "-c", f"import {module}"], check=False).returncode == 0


def test_check_changes_nothing_and_says_what_it_would_do(unprovisioned: LivedIn):
    lived_in = unprovisioned
    assert matrix.load().x86.torch.version != INSTALLED_TORCH.split("+")[0]
    touch_marker(lived_in.host)

    result = run_playbook(lived_in.ansible, lived_in.inventory, check=True)

    assert result.rc == 0, result.messages() or result.stderr[-3000:]
    messages = json.dumps(result.report)
    assert "/usr/local/bin/nvcc is not the role's link" in messages  # case 1
    assert f"torch {INSTALLED_TORCH}" in messages and "kept (torch_replace_working" in messages
    assert not result.task_hosts("Download the torch wheel")  # case 4: nothing fetched
    assert not result.task_hosts("Fetch the apt package lists")  # case 3: apt left alone
    assert paths_changed_since(lived_in.host, MARKER, LIVED_IN_USER) == set()


def test_the_run_converges_and_keeps_what_the_user_has(
    unprovisioned: LivedIn, state: ProvisionedState
):
    lived_in = unprovisioned
    host = lived_in.host
    touch_marker(host)

    result = run_playbook(lived_in.ansible, lived_in.inventory)

    assert result.rc == 0, result.messages() or result.stderr[-3000:]
    assert file_text(host, "/usr/local/bin/nvcc") == LIVED_IN_NVCC  # the user's wrapper
    assert host.exec(["ls", "/usr/local/bin"]).stdout.split() == ["nvcc"]  # no backup: no opt-in
    torch = host.exec(
        [f"{LIVED_IN_VENV}/bin/python", "-c", "import torch; print(torch.__version__)"]
    )
    assert torch.stdout.strip() == INSTALLED_TORCH
    daemon = json.loads(file_text(host, DAEMON_JSON))
    assert daemon["log-level"] == "warn" and daemon["data-root"] == "/srv/docker"
    assert "nvidia" in daemon["runtimes"]
    backups = host.exec(["sh", "-c", f"ls {DAEMON_JSON}.*~"]).stdout.split()
    assert [file_text(host, b) for b in backups] == [LIVED_IN_DAEMON_JSON]
    # The stack went into the venv, not the system Python, and apt was never run.
    assert python_has(host, f"{LIVED_IN_VENV}/bin/python", "termcolor")
    assert not python_has(host, SYSTEM_PYTHON, "termcolor")
    assert host.exec(["find", "/var/lib/apt/lists", "-name", "*_Packages*"]).stdout == ""
    changed = paths_changed_since(host, MARKER, LIVED_IN_USER)
    assert "/usr/local/bin/nvcc" not in changed and "/usr/local/cuda" not in changed
    assert "/etc/ld.so.conf.d/cuda-12-6.conf" not in changed  # NVIDIA's file stays
    assert CUDA_PROFILE in changed

    again = run_playbook(lived_in.ansible, lived_in.inventory)
    assert again.rc == 0 and again.changed(HOST) == 0, again.changed_tasks(HOST)
    state.keep(host, lived_in.work, lived_in.playbook_vars)  # the later tests start from it


def test_check_after_the_run_changes_nothing_and_would_change_nothing(lived_in: LivedIn):
    """--check on the provisioned host: nothing written, nothing it would change."""
    touch_marker(lived_in.host)

    result = run_playbook(lived_in.ansible, lived_in.inventory, check=True)

    assert result.rc == 0, result.messages() or result.stderr[-3000:]
    assert result.changed(HOST) == 0, result.changed_tasks(HOST)
    assert paths_changed_since(lived_in.host, MARKER, LIVED_IN_USER) == set()


def test_replacing_the_users_nvcc_needs_the_opt_in_and_keeps_a_backup(lived_in: LivedIn):
    host = lived_in.host
    result = run_playbook(lived_in.ansible, lived_in.inventory, "--tags", "cuda_env",
                          extra_vars={"cuda_env_replace_nvcc": True})  # fmt: skip

    assert result.rc == 0, result.messages()
    link = host.exec(["readlink", "/usr/local/bin/nvcc"]).stdout.strip()
    assert link.endswith("/bin/nvcc") and link.startswith("/usr/local/cuda")
    assert file_text(host, "/usr/local/bin/nvcc.jetson-env-backup") == LIVED_IN_NVCC


def doctor(host: Host, *args: str, python: str = f"{LIVED_IN_VENV}/bin/python"):
    """The host's own jetson-env, as the non-root user, from their home."""
    return host.exec([f"{VENV}/bin/jetson-env", "--no-color", "doctor", "--python", python,
                      *args], check=False, timeout=900, user=LIVED_IN_USER)  # fmt: skip


def worst(report: dict) -> dict[str, str]:
    order = ("crash", "fail", "warn", "ok", "skip")
    statuses: dict[str, str] = {}
    for finding in report["findings"]:
        current = statuses.get(finding["check"])
        if current is None or order.index(finding["status"]) < order.index(current):
            statuses[finding["check"]] = finding["status"]
    return statuses


def test_the_doctor_agrees_afterwards(lived_in: LivedIn):
    proc = doctor(lived_in.host, "--json", *CHECKS)
    report = json.loads(proc.stdout)
    statuses = worst(report)
    assert statuses["termcolor"] == "ok"
    assert statuses["torch"] in ("ok", "warn")  # a CPU torch where there is no GPU: kept
    assert statuses["libnvinfer"] == "ok" and statuses["tensorrt-python"] == "ok", report
    assert statuses["cuda"] in ("ok", "warn"), report
    assert statuses["docker"] != "fail", report


def break_termcolor(host: Host) -> None:
    host.exec([f"{LIVED_IN_VENV}/bin/python", "-m", "pip", "uninstall", "-y", "-q", "termcolor"])


def test_fix_repairs_the_venv_it_probed_as_the_user(lived_in: LivedIn):
    """Issue 28's first bug: --python VENV --fix must install into that venv."""
    host = lived_in.host
    break_termcolor(host)

    proc = doctor(host, "--fix", "--yes", "--json", *CHECKS)

    document = json.loads(proc.stdout)
    fix_schema_validator().validate(document)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "python_base" in document["plan"]["roles"]
    assert {"check": "termcolor", "before": "fail", "after": "ok"} in document["moved"]
    (row,) = [r for r in document["findings"] if r["check"] == "termcolor"]
    assert row["verdict"] == "fixed" and row["role"] == "python_base"
    assert python_has(host, f"{LIVED_IN_VENV}/bin/python", "termcolor")
    assert not python_has(host, SYSTEM_PYTHON, "termcolor")
    assert "ansible_python_interpreter" not in proc.stderr  # Ansible keeps its own


def test_fix_role_by_role_summary_per_finding(lived_in: LivedIn):
    """Issue 24's case 5: a role whose plan fails is reported, the others still apply; a
    role left out by --fix ROLE is said to be left out, not "no automatic fix"."""
    host = lived_in.host
    break_termcolor(host)
    host.exec(["rm", "-f", CUDA_PROFILE])

    only_cuda = doctor(host, "--fix", "cuda_env", "--yes", *CHECKS)

    assert "termcolor: left out (python_base)" in only_cuda.stdout, only_cuda.stdout
    assert "cuda: fixed (cuda_env)" in only_cuda.stdout
    assert "no automatic fix for termcolor" not in only_cuda.stdout
    host.exec(["rm", CUDA_PROFILE])

    # python_base's plan fails (a wanted apt package, no package lists, no network): the user's
    # variables ask for the role's apt set beside termcolor's (the fix alone asks for its own).
    failing = json.dumps({"python_base_apt_packages": ["libopenblas-dev"],
                          "python_base_sets": ["apt", "packages"], **OFFLINE_APT})  # fmt: skip
    both = doctor(host, "--fix", "--yes", "--json", "--playbook-vars", failing, *CHECKS)

    document = json.loads(both.stdout)
    runs = {run["role"]: run for run in document["roles"]}
    assert runs["python_base"]["plan_error"] and not runs["python_base"]["applied"]
    assert runs["cuda_env"]["applied"] and runs["cuda_env"]["error"] is None
    # A check can have several findings (cuda: also "no C compiler", which no role fixes).
    verdicts = {(row["check"], row["role"]): row for row in document["findings"]}
    assert verdicts[("cuda", "cuda_env")]["verdict"] == "fixed"
    assert verdicts[("termcolor", "python_base")]["verdict"] == "failed"
    why = verdicts[("termcolor", "python_base")]["why"]
    assert "the plan of role python_base" in why and "lacks the apt packages libopenblas-dev" in why
    assert both.returncode == 1  # termcolor still fails
    assert host.exec(["test", "-e", CUDA_PROFILE], check=False).returncode == 0


def test_fleet_fix_keeps_the_users_ansible_cfg_and_the_venv(lived_in: LivedIn, tmp_path: Path):
    """Issue 28's bugs on a fleet: the user's ansible.cfg (remote_user) applies to --fix as to
    the doctor, and the roles install into the inventory interpreter's venv."""
    host = lived_in.host
    break_termcolor(host)
    host.exec(["truncate", "-s", "0", "/var/log/sudo.log"])
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\nremote_user = {LIVED_IN_USER}\n")
    inventory = yaml.safe_load(lived_in.inventory.read_text())
    del inventory["all"]["hosts"][HOST]["ansible_user"]  # from ansible.cfg only
    del inventory["all"]["vars"]["jetson_facts_python"]  # --fix derives it from the probes
    (tmp_path / "fleet.yml").write_text(yaml.safe_dump(inventory))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    cli = Path(sys.executable).parent / "jetson-env"

    proc = subprocess.run(
        [str(cli), "--no-color", "doctor", "-i", "fleet.yml", "--fix", "--yes", "--check",
         "termcolor", "--no-smoke"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip

    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert f"{HOST}: termcolor: fail -> ok" in proc.stdout
    assert "termcolor: fixed (python_base)" in proc.stdout
    assert python_has(host, f"{LIVED_IN_VENV}/bin/python", "termcolor")
    assert not python_has(host, SYSTEM_PYTHON, "termcolor")
    sudo_log = file_text(host, "/var/log/sudo.log")
    assert f"{LIVED_IN_USER} : " in sudo_log and "root : " not in sudo_log


def test_provision_then_doctor_as_the_user_runs_them(lived_in: LivedIn):
    """Issue 33's promise (its cases 1 and 5): the user, with the torch venv FIRST ON PATH, no
    -i and no interpreter variable anywhere, runs the installed wheel's `jetson-env provision`
    (ansible-core alone in its venv, the user's environment and no ansible.cfg) from their
    home, then `jetson-env doctor` with its defaults: every finding a role of the run manages
    is ok, because the play installs into the Python the doctor checks (python3 on PATH, the
    venv) and says which, and each check has exactly the status that what no role manages
    leaves (a CPU torch without a GPU, no compiler, a stopped Docker engine). Then --fix
    repairs what the roles manage. Every role that can run here is on (TensorRT from its
    tarball, copied to the host as a user would); those that cannot are turned off with -e,
    as a user would: torchvision, pycuda and torch2trt need a compiler (and torchvision its
    source, offline), torch2trt a real TensorRT."""
    host = lived_in.host
    break_termcolor(host)  # what the roles manage, missing from the venv
    # (and from the system Python)
    host.exec([SYSTEM_PYTHON, "-m", "pip", "uninstall", "-y", "-q", "--break-system-packages",
               "termcolor"], check=False)  # fmt: skip
    env = {"PATH": f"{LIVED_IN_VENV}/bin:/usr/local/bin:/usr/bin:/bin"}
    jetson_env = f"{VENV}/bin/jetson-env"
    tarball = build_tensorrt_tarball("10.3.0", "cp311", lived_in.work / "promise-trt")
    host.copy_in(tarball, f"/tmp/{tarball.name}")
    host.exec(["chmod", "644", f"/tmp/{tarball.name}"])
    roles_off = ("torchvision", "pycuda", "torch2trt")
    settings = {f"{role}_enabled": False for role in roles_off}
    off = ["-e", json.dumps({**settings, "tensorrt_tarball": f"/tmp/{tarball.name}"})]

    run = host.exec([jetson_env, "--no-color", "provision", *off], env=env, user=LIVED_IN_USER,
                    check=False, timeout=900)  # fmt: skip

    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    venv_python = f"{LIVED_IN_VENV}/bin/python3"
    assert python_has(host, venv_python, "termcolor"), output[-4000:]  # case 1
    assert not python_has(host, SYSTEM_PYTHON, "termcolor")
    for forbidden in ("template error", "deprecat"):  # case 5
        assert forbidden not in output.lower(), output[-4000:]
    assert f"({venv_python}: the Python provisioned)" in output, output[-4000:]

    def examine() -> dict:
        proc = host.exec([jetson_env, "--no-color", "doctor", "--json"], env=env,
                         user=LIVED_IN_USER, check=False, timeout=900)  # fmt: skip
        return json.loads(proc.stdout)

    report = examine()
    assert report["platform"]["python"]["executable"] == venv_python
    roles_on = set(collection.provision_roles()) - set(roles_off)
    findings = report["findings"]
    managed = [f for f in findings if f["playbook"] and f["playbook"]["role"] in roles_on]
    assert [f for f in managed if f["status"] != "ok"] == [], report
    # Each check of a role that ran: exactly the status that what no role manages leaves.
    ran = {name for name, check in BY_NAME.items() if check.role in roles_on}
    assert {c: s for c, s in worst(report).items() if c in ran} == PROMISED_STATUSES, report
    left = {(f["check"], f["summary"]) for f in findings
            if f["check"] in ran and f["status"] not in ("ok", "skip")}  # fmt: skip
    assert left == NO_ROLE_MANAGES_HERE, report

    break_termcolor(host)
    fixed = host.exec([jetson_env, "--no-color", "doctor", "--fix", "--yes", "--no-smoke",
                       "--playbook-vars", json.dumps(OFFLINE_APT)],
                      env=env, user=LIVED_IN_USER, check=False, timeout=900)  # fmt: skip
    fix_output = fixed.stdout + fixed.stderr
    for forbidden in ("template error", "deprecat"):
        assert forbidden not in fix_output.lower(), fix_output[-4000:]
    assert worst(examine())["termcolor"] == "ok", fix_output[-4000:]
    assert not python_has(host, SYSTEM_PYTHON, "termcolor")


# The lived-in host after provisioning with every role that can run there: each check of those
# roles, and the findings that are not ok because no role manages them (a compiler the user
# chose not to have, a CPU torch the torch role keeps where there is no GPU, cuDNN that x86
# hosts get from NVIDIA's installer).
PROMISED_STATUSES = {"libnvinfer": "ok", "tensorrt-python": "ok", "cuda": "warn", "cudnn": "warn",
                     "termcolor": "ok", "torch": "warn", "docker": "ok"}  # fmt: skip
NO_ROLE_MANAGES_HERE = {
    ("cuda", "no C compiler: pycuda and torch2trt's plugins cannot be built"),
    ("torch", f"torch {INSTALLED_TORCH} is a CPU-only build: nothing can run on a GPU (there is "
              "no GPU here either)"),
    ("cudnn", "cuDNN is not found by the loader (torch wheels bring their own; TensorRT's "
              "cuDNN-based tactics need it)"),
}  # fmt: skip

PYENV = f"/home/{LIVED_IN_USER}/.pyenv"
# pyenv's shims, as they behave (issue 33's case 7): `python3` runs the version pyenv selected
# (here the torch venv: the host is offline, and the roles need its numpy), `python3.13`
# names a version pyenv has not selected and fails.
SHIMS = {
    "python3": f'#!/bin/sh\nexec {LIVED_IN_VENV}/bin/python3 "$@"\n',
    "python3.13": "#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n",
}


def test_pyenv_shims_first_on_path_provision_and_fix(lived_in: LivedIn):
    """Issue 33's case 7: with pyenv's shims first on PATH, Ansible's interpreter discovery
    picks the shim of an unselected python3.13 and the first module fails. `jetson-env
    provision --check` and `doctor --fix` with no -i must use python3 on PATH (the rule), for
    the roles and Ansible's modules alike, and install into it."""
    host = lived_in.host
    selected = f"{LIVED_IN_VENV}/bin/python3"  # what the shim runs: its sys.executable
    shims = f"{PYENV}/shims"
    script = f"mkdir -p {shims}" + "".join(
        f" && printf '%s' {shlex.quote(text)} >{shims}/{name} && chmod +x {shims}/{name}"
        for name, text in SHIMS.items()
    )
    host.exec(["sh", "-c", script], user=LIVED_IN_USER)
    assert host.exec([f"{shims}/python3.13", "-V"], check=False).returncode == 127
    break_termcolor(host)
    env = {"PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin"}
    jetson_env = f"{VENV}/bin/jetson-env"

    check = host.exec([jetson_env, "--no-color", "provision", "--check", "--tags", "python_base"],
                      env=env, user=LIVED_IN_USER, check=False, timeout=900)  # fmt: skip

    output = check.stdout + check.stderr
    assert check.returncode == 0, output[-4000:]
    assert f"({selected}: the Python provisioned)" in output, output[-4000:]
    assert "pip would install termcolor==" in output and f"into {selected}" in output, output
    assert not python_has(host, selected, "termcolor")  # --check changed nothing

    fixed = host.exec([jetson_env, "--no-color", "doctor", "--fix", "python_base", "--yes",
                       "--no-smoke"], env=env, user=LIVED_IN_USER, check=False,
                      timeout=900)  # fmt: skip

    said = fixed.stdout + fixed.stderr
    assert "nothing was changed" not in said.lower(), said[-4000:]
    assert python_has(host, selected, "termcolor"), said[-4000:]
    report = json.loads(host.exec([jetson_env, "doctor", "--json", "--no-smoke"], env=env,
                                  user=LIVED_IN_USER, check=False).stdout)  # fmt: skip
    assert report["platform"]["python"]["executable"] == selected
    assert worst(report)["termcolor"] == "ok"


# sha256 of every file a distribution's RECORD lists, as installed (the pair stays byte for byte).
RECORDED = """
import hashlib, json, sys
from importlib import metadata
out = {}
for name in sys.argv[1:]:
    dist = metadata.distribution(name)
    out[name] = {str(f): hashlib.sha256(dist.locate_file(f).read_bytes()).hexdigest()
                 for f in dist.files if dist.locate_file(f).is_file() and f.suffix != ".pyc"}
print(json.dumps(out))
"""


def recorded_files(host: Host, *names: str) -> dict[str, dict[str, str]]:
    python = f"{LIVED_IN_VENV}/bin/python3"
    return json.loads(host.exec([python, "-c", RECORDED, *names]).stdout)


def install_paired_torchvision(host: Host, work: Path) -> None:
    """A stand-in torchvision 0.28.0+cpu in the venv, the pair of its torch 2.13.0+cpu."""
    standin = build_standin_wheel("torchvision", "0.28.0+cpu", work / "torchvision")
    host.copy_in(standin, f"/tmp/{standin.name}")
    pip = f"{LIVED_IN_VENV}/bin/pip"
    host.exec([pip, "install", "-q", "--no-index", "--no-deps", f"/tmp/{standin.name}"])


def bundle_inventory(path: Path, host: Host) -> Path:
    return write_inventory(path, {HOST: {
        "ansible_host": host.container, "ansible_user": LIVED_IN_USER, "ansible_become": True,
        "ansible_python_interpreter": f"{LIVED_IN_VENV}/bin/python"}}, {})  # fmt: skip


def test_provision_from_a_default_x86_bundle_keeps_the_working_pair(
    lived_in: LivedIn, image: LivedInImage
):
    """Issue 34's case: a bundle made with `jetson-env bundle B` and no flags but where the
    host's facts come from (-i: its Python and glibc) holds the matrix's torch (2.14.1) and
    names torchvision 0.29.1's archive (GitHub is out of reach here) and TensorRT's and
    torch2trt's as files to supply by hand. The host keeps its working torch and the
    torchvision paired with it, so nothing of theirs is needed: `provision --bundle B`
    (the roles the bundle was made for) must not refuse for them. python_base and cuda_env
    converge, pycuda is skipped and named (the host's CUDA root has no headers: no toolkit
    to build against), the second run and --check after it change nothing, the doctor agrees,
    and the torch and torchvision files are the same bytes as before. Once the bundle is made
    and before it provisions anything, where a careful user starts: `provision --bundle B
    --check` on a lived-in host of the same image that never saw jetson-env's roles says what
    it would change and changes nothing. After it, a break (termcolor removed) and `doctor -i
    --fix --bundle B` repair the host from the bundle."""
    host, work = lived_in.host, lived_in.work
    install_paired_torchvision(host, work)
    break_termcolor(host)
    before = recorded_files(host, "torch", "torchvision")
    assert before["torch"] and before["torchvision"]
    inventory = bundle_inventory(work / "bundle-inventory.yml", host)
    bundle_dir = work / "default-bundle"

    def jetson_env(*args: object) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "jetson_env.cli", "--no-color", *map(str, args)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False,
                              cwd=work)  # fmt: skip

    # The default run's fetch_lived_in_bundle may be filling the download cache for it.
    with _file_lock(LIVED_IN_BUNDLE_LOCK):
        made = jetson_env("bundle", bundle_dir, "-i", inventory)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    (target,) = manifest["targets"].values()
    assert target["args"] == shlex.join(LIVED_IN_BUNDLE_ARGS), target  # the facts read
    assert set(target["roles"]) >= {"python_base", "torch", "torchvision", "pycuda"}
    torch_version = matrix.load().x86.torch.version
    assert any(Path(p).name.startswith(f"torch-{torch_version}") for p in manifest["artifacts"])

    fresh = start_unprovisioned(image, f"{HOST}-never-provisioned")
    try:
        install_paired_torchvision(fresh, work)
        touch_marker(fresh)
        first = jetson_env("provision", "--bundle", bundle_dir, "-i",
                           bundle_inventory(work / "fresh-inventory.yml", fresh), "--check",
                           "--json")  # fmt: skip
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-6000:]
        would = json.loads(first.stdout)["hosts"][HOST]
        assert would["status"] == "changed" and would["stats"]["changed"] > 0, would
        assert paths_changed_since(fresh, MARKER, LIVED_IN_USER) == set()
        assert not python_has(fresh, f"{LIVED_IN_VENV}/bin/python3", "termcolor")
    finally:
        remove_host(fresh)

    for changed in (r"[1-9]\d*", "0"):  # the second run changes nothing
        run = jetson_env("provision", "--bundle", bundle_dir, "-i", inventory)
        said = run.stdout + run.stderr
        assert run.returncode == 0, said[-6000:]
        assert re.search(rf"{HOST}\s*: ok=\d+\s+changed={changed}\s+unreachable=0\s+failed=0",
                         run.stdout), said[-6000:]  # fmt: skip
        assert "torch 2.13.0+cpu" in said and "kept" in said.lower(), said[-6000:]
        assert "/include/cuda.h is missing), so no pycuda" in said, said[-6000:]
        assert "vision-0.29.1" not in said, said[-6000:]
    # --check after it: nothing it would change, nothing changed.
    touch_marker(host)
    check = jetson_env("provision", "--bundle", bundle_dir, "-i", inventory, "--check", "--json")
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-6000:]
    would = json.loads(check.stdout)["hosts"][HOST]
    assert would["status"] == "ok" and would["stats"]["changed"] == 0, would
    assert paths_changed_since(host, MARKER, LIVED_IN_USER) == set()

    assert recorded_files(host, "torch", "torchvision") == before
    proc = doctor(host, "--json", "--check", "termcolor", "--check", "torch", "--check",
                  "torchvision", "--check", "pycuda", "--no-smoke")  # fmt: skip
    report = json.loads(proc.stdout)
    statuses = worst(report)
    assert statuses["termcolor"] == "ok", report
    assert statuses["torch"] in ("ok", "warn"), report  # a CPU torch where there is no GPU
    # Kept and paired; the stand-in has no C++ ops, so the doctor's nms may fail on it.
    (vision,) = [f for f in report["findings"] if f["check"] == "torchvision"]
    assert vision["summary"].startswith("torchvision 0.28.0+cpu"), vision
    assert "does not pair" not in vision["summary"] and "not installed" not in vision["summary"]
    # pycuda was skipped (no headers to build against), and the doctor says it is missing.
    (pycuda,) = [f for f in report["findings"] if f["check"] == "pycuda"]
    assert pycuda["status"] == "warn" and "pycuda is not installed" in pycuda["summary"], pycuda
    assert python_has(host, f"{LIVED_IN_VENV}/bin/python3", "termcolor")

    # A break, then the doctor's fix from the same bundle: termcolor back from its wheels.
    break_termcolor(host)
    fix = jetson_env("doctor", "-i", inventory, "--fix", "--yes", "--bundle", bundle_dir,
                     "--check", "termcolor", "--no-smoke")  # fmt: skip
    assert fix.returncode == 0, fix.stdout[-3000:] + fix.stderr[-6000:]
    assert f"{HOST}: termcolor: fail -> ok" in fix.stdout, fix.stdout[-3000:]
    assert "termcolor: fixed (python_base)" in fix.stdout, fix.stdout[-3000:]
    assert python_has(host, f"{LIVED_IN_VENV}/bin/python3", "termcolor")
    assert recorded_files(host, "torch", "torchvision") == before


def pip_remedies(report: dict) -> list[str]:
    """The fixes that are pip installs. torch2trt's installs its build requirements with pip
    and then clones torch2trt from GitHub, which this offline host cannot reach: not one."""
    commands = [fix["command"] for fix in report["fixes"]]
    return [c for c in commands if " -m pip install " in c and "git clone" not in c]


def test_every_pip_remedy_runs_as_printed_as_the_user(lived_in: LivedIn, tmp_path: Path):
    """One pip policy: what the doctor prints for the venv and for the externally managed
    system Python works, literally, for the non-root user (no externally-managed-environment,
    no permission error); the host's wheelhouse (its pip.conf) holds what they name."""
    host = lived_in.host
    break_termcolor(host)
    remedies = []
    for python in (f"{LIVED_IN_VENV}/bin/python", SYSTEM_PYTHON):
        report = json.loads(doctor(host, "--json", "--no-smoke", python=python).stdout)
        remedies += pip_remedies(report)
    assert any("--break-system-packages" in r for r in remedies), remedies  # PEP 668
    assert not any("--user" in r for r in remedies), remedies
    for remedy in remedies:
        for word in shlex.split(remedy.split(" -m pip install ", 1)[1]):
            if "==" in word and not word.startswith("-"):
                name, version = word.split("==")
                wheel = build_standin_wheel(name, version.rstrip(".*"), tmp_path)
                host.copy_in(wheel, f"{LIVED_IN_WHEELHOUSE}/{wheel.name}")

    for remedy in remedies:
        done = host.exec(["sh", "-c", remedy], check=False, user=LIVED_IN_USER, timeout=900)
        assert done.returncode == 0, f"{remedy}\n{done.stdout}\n{done.stderr}"
        assert "externally-managed-environment" not in done.stderr
