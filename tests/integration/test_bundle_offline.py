"""Air-gapped provisioning: a bundle made on the controller (`jetson-env bundle`, real
artifacts from the indexes this machine reaches), then test hosts whose network is cut
(Docker's `--network none`) provisioned from it with `jetson_env_bundle`.

x86 (both ends of the Ansible range): the bundle's target read from the host's facts
(`bundle -i`), python_base and torch (the machine's real CPU torch 2.13.0 wheel, its
dependencies from the index) and python_base's apt package (python3-pip, removed from the
host first) from the bundle's flat apt repository, built from this machine's Debian
mirror (the host is Debian 12 too); --check with the bundle writes nothing on the host or
the controller; a corrupted file, a missing file (a wheel, a .deb) and a lock file that
disagrees are refused in the preflight with nothing changed; the run converges with no
network, a second run changes nothing, the doctor agrees and says which fixes a bundle can
apply. The emulated Orin (newest end): added to the same bundle (re-running adds),
python_base from it.

Off here: roles that need NVIDIA's apt repository or files (jetpack_apt, docker_runtime,
TensorRT, torch2trt), torchvision (a long build, covered online) and pycuda (no CUDA on
the hosts).
"""

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from playbook_support import (
    CHANGE_REPORTING,
    CHECK_MODE,
    MODULE_ARGUMENTS,
    NO_PLAYBOOK,
    OFFLINE_VARS,
    ROLE_RULE,
    TORCH_WHEEL_X86,
    from_an_unrelated_folder,
    install_bundle_controller,
    paths_changed_since,
    pip_version,
    provision_inputs,
    remove_host,
    run_playbook,
    start_host,
    write_inventory,
)
from support.ansible_envs import AnsibleEnd
from support.hosts import HOSTS, VENV, Host, HostImage
from support.provisioned import ProvisionedState

from jetson_env.bundle.manifest import entry_roles

pytestmark = pytest.mark.hosts

MARKER = "/var/tmp/jetson-env-bundle-marker"
X86_KEY = "x86_64-x86-cp311"
APT_REPO = "apt/debian-bookworm-amd64"
ORIN_KEY = "aarch64-l4t36.4.3-cp311"
PREFLIGHT_FAILURE = "Fail when the bundle cannot provision this host"
X86 = "x86-debian12"
# What provisioning the x86 host from its bundle depends on (the kept state's key, with the
# host image and the Ansible end).
PROVISION_INPUTS = provision_inputs(__file__)


def jetson_env(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


def mark(host: Host) -> None:
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root with its size and modification time."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def linked_copy(source: Path, dest: Path) -> Path:
    """The bundle again, its files hard links (a changed file must be rewritten, not edited)."""
    shutil.copytree(source, dest, copy_function=os.link)
    return dest


def rewrite(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, ansible: AnsibleEnd) -> Path:
    return tmp_path_factory.mktemp(f"bundle-offline-{ansible.name}")


def start_offline_x86(name: str, image: str | None = None) -> Host:
    """An x86 host with no network; a fresh one (no `image`) without python3-pip, so that
    python_base's apt package can only come from the bundle."""
    host = start_host(X86, name, image=image, network="none")
    if image is None:
        host.exec(["dpkg", "--remove", "python3-pip"])
    return host


def common_vars(work: Path) -> dict:
    return {
        **OFFLINE_VARS,
        "python_base_matrix_apt_packages": True,
        "torch_lock_file": str(work / "jetson-env.lock.yml"),
        "torch_controller_cache": str(work / "cache" / "torch"),
    }


def make_bundle(directory: Path, inventory: Path) -> Path:
    """Made from the inventory's facts: the host says what target it is."""
    proc = jetson_env(
        "bundle",
        directory,
        "-i",
        inventory,
        "--roles",
        "python_base,torch",
        "--file",
        f"torch={TORCH_WHEEL_X86}",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    return directory


@pytest.fixture(scope="module")
def x86(work: Path) -> Iterator[Host]:
    """The offline host no test provisions: the runs that must refuse, or only say, before any
    change find it as it was, whatever ran before (the first provisioning has a host of its
    own, of the same image: the same facts, so the same bundle)."""
    host = start_offline_x86("bundle-x86")
    yield host
    remove_host(host)


@pytest.fixture
def first_x86(work: Path) -> Iterator[tuple[Host, Path]]:
    """A fresh offline host for the first provisioning from the bundle, and its inventory."""
    host = start_offline_x86("bundle-x86-first")
    try:
        hosts = {"x86": {"ansible_host": host.container}}
        yield host, write_inventory(work / "first.yml", hosts, common_vars(work))
    finally:
        remove_host(host)


@pytest.fixture(scope="module")
def inventory(work: Path, x86: Host) -> Path:
    hosts = {"x86": {"ansible_host": x86.container}}
    return write_inventory(work / "inventory.yml", hosts, common_vars(work))


@pytest.fixture(scope="module")
def bundle_dir(work: Path, inventory: Path) -> Path:
    return make_bundle(work / "bundle", inventory)


@pytest.fixture(scope="module")
def bundled_state(ansible: AnsibleEnd) -> ProvisionedState:
    return ProvisionedState(f"{X86}-offline-bundle", ansible.name, PROVISION_INPUTS,
                            base=HostImage(HOSTS[X86]).tag)  # fmt: skip


class Provisioned(NamedTuple):
    host: Host
    inventory: Path  # the host as `x86`, with the variables (the bundle's) that provisioned it
    work: Path  # the controller's folder of that provisioning: its bundle, lock file, caches


@pytest.fixture(scope="module")
def bundled_x86(
    tmp_path_factory: pytest.TempPathFactory, ansible: AnsibleEnd, bundled_state: ProvisionedState
) -> Iterator[Provisioned]:
    """An offline x86 host provisioned from its bundle, whatever test, worker or order asks:
    a container of the kept state, else one provisioned here (and kept)."""
    work = tmp_path_factory.mktemp(f"bundle-provisioned-{ansible.name}")

    def provision(host: Host, work: Path) -> dict:
        hosts = {"x86": {"ansible_host": host.container}}
        inventory = write_inventory(work / "inventory.yml", hosts, common_vars(work))
        bundle = make_bundle(work / "bundle", inventory)
        playbook_vars = {**common_vars(work), **bundle_vars(bundle)}
        result = run_playbook(ansible, inventory, extra_vars=bundle_vars(bundle))
        assert result.rc == 0, result.messages() or result.stderr
        return playbook_vars

    start = functools.partial(start_offline_x86, "bundle-x86-provisioned")
    host, playbook_vars = bundled_state.host(work, start, provision)
    hosts = {"x86": {"ansible_host": host.container}}
    yield Provisioned(host, write_inventory(work / "inventory.yml", hosts, playbook_vars), work)
    remove_host(host)


def doctor_json(host: Host, check: str, *more: str) -> dict:
    """The doctor's JSON report inside `host`, for the system Python, without the smoke."""
    argv = [f"{VENV}/bin/jetson-env", "doctor", "--json", "--no-smoke"]
    argv += ["--python", "/usr/bin/python3", "--check", check, *more]
    return json.loads(host.exec(argv, check=False).stdout)


def bundle_vars(directory: Path, **more) -> dict:
    return {"jetson_env_bundle": str(directory), **more}


@NO_PLAYBOOK
def test_the_bundle_is_made_for_the_hosts_facts(bundle_dir: Path, x86: Host):
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    assert list(manifest["targets"]) == [X86_KEY]
    assert manifest["targets"][X86_KEY]["glibc"] == "2.36"  # Debian 12's, read on the host
    names = {Path(p).name for p in manifest["artifacts"]}
    assert TORCH_WHEEL_X86.name in names
    for dependency in ("sympy", "networkx", "filelock", "jinja2", "numpy", "termcolor"):
        assert any(n.lower().startswith(dependency) for n in names), dependency
    assert manifest["targets"][X86_KEY]["distribution"] == "debian/bookworm"
    apt = manifest["apt"][X86_KEY]
    assert (apt["repo"], apt["not_bundled"], apt["roles"]) == (
        APT_REPO,
        [],
        {"python_base": ["python3-pip"]},
    )
    assert any(n.startswith("python3-pip_") and n.endswith("_all.deb") for n in names)
    packages = (bundle_dir / APT_REPO / "Packages").read_text()
    assert "\nFilename: ./python3-pip_" in packages
    assert jetson_env("bundle", "--verify", bundle_dir).returncode == 0
    # The host really has no network.
    mode = subprocess.run(
        ["docker", "inspect", "-f", "{{.HostConfig.NetworkMode}}", x86.container],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert mode == "none"


@CHECK_MODE
def test_check_with_the_bundle_writes_nothing_anywhere(
    ansible: AnsibleEnd, inventory: Path, bundle_dir: Path, x86: Host, work: Path
):
    mark(x86)
    before = tree_state(work)
    result = run_playbook(ansible, inventory, check=True, extra_vars=bundle_vars(bundle_dir))

    assert result.rc == 0, result.messages() or result.stderr
    said = result.task_result("Say what this host installs from the bundle", "x86")["msg"]
    assert said.startswith(f"--check: x86 installs from the bundle {bundle_dir} (target {X86_KEY})")
    assert TORCH_WHEEL_X86.name in said and "termcolor-" in said and "sympy-" in said
    assert f"from its apt repository {bundle_dir}/{APT_REPO}" in said
    apt = result.task_result("Say what would be installed from the bundle (--check)", "x86")
    assert apt["msg"].startswith("--check: x86 would install the apt packages python3-pip")
    assert paths_changed_since(x86, MARKER) == set()
    assert tree_state(work) == before  # no lock file, no cache, the bundle untouched


@ROLE_RULE
def test_a_corrupted_file_is_refused_before_any_change(
    ansible: AnsibleEnd, inventory: Path, bundle_dir: Path, x86: Host, work: Path
):
    corrupt = linked_copy(bundle_dir, work / "corrupt")
    termcolor = next(corrupt.glob("pip/termcolor-*.whl"))
    data = bytearray(termcolor.read_bytes())
    data[200] ^= 0xFF
    rewrite(termcolor, bytes(data))
    mark(x86)
    result = run_playbook(ansible, inventory, extra_vars=bundle_vars(corrupt))

    assert result.rc != 0
    assert result.task_hosts(PREFLIGHT_FAILURE, "failed") == {"x86"}
    message = result.messages()
    assert f"pip/{termcolor.name}: sha256 " in message
    assert f"jetson-env bundle {corrupt} --x86 --python-version 3.11 --glibc 2.36" in message
    assert "Nothing was changed" in message
    assert paths_changed_since(x86, MARKER) == set()
    assert pip_version(x86, "termcolor") is None


@ROLE_RULE
def test_a_missing_file_or_a_disagreeing_lock_file_is_refused(
    ansible: AnsibleEnd, inventory: Path, bundle_dir: Path, x86: Host, work: Path
):
    """A missing wheel, .deb or torch wheel (the host has no torch: the torch role will use
    it), each refused before any change."""
    mark(x86)
    for glob in ("pip/numpy-*.whl", f"{APT_REPO}/python3-pip_*.deb", "pip/torch-*.whl"):
        missing = linked_copy(bundle_dir, work / f"missing-{glob.split('/')[-1][:5]}")
        (gone,) = missing.glob(glob)
        gone.unlink()
        result = run_playbook(ansible, inventory, extra_vars=bundle_vars(missing))
        assert result.rc != 0
        assert result.task_hosts(PREFLIGHT_FAILURE, "failed") == {"x86"}
        assert f"{gone.relative_to(missing)}: missing" in result.messages()

    lock = work / "disagreeing.lock.yml"
    lock.write_text(yaml.safe_dump({"sha256": {TORCH_WHEEL_X86.name: "0" * 64}}))
    result = run_playbook(
        ansible, inventory, extra_vars=bundle_vars(bundle_dir, torch_lock_file=str(lock))
    )
    assert result.rc != 0
    assert result.task_hosts(PREFLIGHT_FAILURE, "failed") == {"x86"}
    assert f"the lock file pins sha256 {'0' * 64}" in result.messages()
    assert paths_changed_since(x86, MARKER) == set()


def shadow_state(host: Host) -> str:
    return host.exec(["stat", "-c", "%a %s %Y", "/etc/shadow"]).stdout


@ROLE_RULE
def test_a_packages_file_that_names_a_file_outside_the_repository_is_refused(
    ansible: AnsibleEnd, inventory: Path, bundle_dir: Path, x86: Host, work: Path
):
    """Issue 37: a Packages stanza whose Filename climbs out of the repository was copied as
    root to the same place under the host's repository folder: /etc/shadow went from 0640 to
    0644 (the controller's file over the host's). The manifest's sha256 of Packages agrees,
    as an attacker's would."""
    hostile = linked_copy(bundle_dir, work / "climbing-packages")
    packages = hostile / APT_REPO / "Packages"
    climbing = "Filename: ./../../../../../../../etc/shadow"
    text, count = re.subn(r"(?m)^Filename: \./python3-pip_.*$", climbing, packages.read_text())
    assert count == 1
    rewrite(packages, text.encode())
    manifest = json.loads((hostile / "manifest.json").read_text())
    manifest["apt_repos"][APT_REPO]["packages_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    rewrite(hostile / "manifest.json", json.dumps(manifest).encode())
    shadow = shadow_state(x86)
    mark(x86)
    result = run_playbook(ansible, inventory, extra_vars=bundle_vars(hostile))

    assert result.rc != 0
    assert result.task_hosts(PREFLIGHT_FAILURE, "failed") == {"x86"}
    assert "not a plain file name" in result.messages()
    assert paths_changed_since(x86, MARKER) == set()
    assert shadow_state(x86) == shadow


@ROLE_RULE
@pytest.mark.parametrize("how", ["climbing path", "symlink"])
def test_a_manifest_that_points_out_of_the_bundle_is_refused(
    ansible: AnsibleEnd, inventory: Path, bundle_dir: Path, x86: Host, work: Path, how: str
):
    """Issue 37: `pip/../../etc/passwd` in the manifest, or a wheel that is a link to a file
    outside, were followed: checked, then copied to the hosts."""
    hostile = linked_copy(bundle_dir, work / f"pointing-out-{how.replace(' ', '-')}")
    manifest = json.loads((hostile / "manifest.json").read_text())
    outside = Path("/etc/passwd")
    entry = {"sha256": hashlib.sha256(outside.read_bytes()).hexdigest(),
             "size": outside.stat().st_size}  # fmt: skip
    if how == "climbing path":
        (termcolor,) = [p for p in manifest["artifacts"] if "termcolor" in p]
        manifest["artifacts"]["pip/../../../../../../../../etc/passwd"] = {
            **manifest["artifacts"][termcolor], **entry}  # fmt: skip
    else:
        (termcolor,) = hostile.glob("pip/termcolor-*.whl")
        termcolor.unlink()
        termcolor.symlink_to(outside)
        manifest["artifacts"][f"pip/{termcolor.name}"].update(entry)
    rewrite(hostile / "manifest.json", json.dumps(manifest).encode())
    mark(x86)
    result = run_playbook(ansible, inventory, extra_vars=bundle_vars(hostile))

    assert result.rc != 0
    assert result.task_hosts(PREFLIGHT_FAILURE, "failed") == {"x86"}
    expected = "not a plain path inside" if how == "climbing path" else "symbolic link"
    assert expected in result.messages()
    assert paths_changed_since(x86, MARKER) == set()


@NO_PLAYBOOK
def test_the_doctor_says_which_fixes_the_bundle_can_apply(
    ansible: AnsibleEnd, bundle_dir: Path, x86: Host
):
    """Before provisioning, on the offline host: termcolor is missing and python_base, from
    the bundle, fixes it."""
    x86.install_project()
    x86.exec(["mkdir", "-p", "/tmp/bundle"])
    x86.copy_in(bundle_dir / "manifest.json", "/tmp/bundle/manifest.json")
    x86.copy_in(bundle_dir / "pip", "/tmp/bundle/pip")
    x86.copy_in(bundle_dir / "apt", "/tmp/bundle/apt")
    report = doctor_json(x86, "termcolor", "--bundle", "/tmp/bundle")
    x86.exec(["rm", "-rf", "/tmp/bundle"])
    fixes = {f["check"]: f for f in report["bundle"]["fixes"]}
    assert fixes["termcolor"]["applies"] is True, fixes
    assert fixes["termcolor"]["why"] == f"from the bundle (target {X86_KEY})"
    # The Python the doctor checked is the one the command provisions (issue 33's case 6),
    # with the bundle's roles as `provision --bundle` runs them (doctor --fix --bundle), by the
    # jetson-env that ran: the host's PATH does not hold its venv (issue 59, pasted hints).
    assert report["bundle"]["command"] == (
        f"{VENV}/bin/jetson-env doctor --python /usr/bin/python3 --fix python_base --bundle "
        "/tmp/bundle"
    )


@MODULE_ARGUMENTS
def test_provision_from_the_bundle_with_no_network(
    ansible: AnsibleEnd,
    first_x86: tuple[Host, Path],
    bundle_dir: Path,
    work: Path,
    bundled_state: ProvisionedState,
):
    x86, inventory = first_x86
    result = run_playbook(ansible, inventory, extra_vars=bundle_vars(bundle_dir))

    assert result.rc == 0, result.messages() or result.stderr
    assert result.task_hosts("from the bundle's repository") == {"x86"}
    status = x86.exec(["dpkg-query", "-W", "-f", "${db:Status-Status}", "python3-pip"])
    assert status.stdout == "installed"
    # apt used the bundle's repository only: the host's sources and lists are as they were.
    lists = x86.exec(["sh", "-c", "ls /var/lib/apt/lists | grep -c _Packages || true"])
    assert lists.stdout.strip() == "0"
    # Of the repository's .debs (python3-pip with its whole closure), only the one the host
    # lacked was copied.
    copied = x86.exec(["sh", "-c", "ls /var/cache/jetson-env/bundle/apt/repo/*.deb"]).stdout
    (deb,) = bundle_dir.glob(f"{APT_REPO}/python3-pip_*.deb")
    assert copied.split() == [f"/var/cache/jetson-env/bundle/apt/repo/{deb.name}"]
    assert len(list(bundle_dir.glob(f"{APT_REPO}/*.deb"))) > 10
    assert pip_version(x86, "torch") == "2.13.0+cpu"
    assert pip_version(x86, "termcolor") is not None
    out = x86.exec(["python3", "-c", "import torch; print(torch.ones(2).sum().item())"])
    assert out.stdout.strip() == "2.0"
    # The bundle's sha256 was the expected one: nothing recorded on first use.
    assert not (work / "jetson-env.lock.yml").exists()
    # Provisioned: kept for the tests that need a host provisioned from its bundle.
    bundled_state.keep(x86, work, {**common_vars(work), **bundle_vars(bundle_dir)})


@CHANGE_REPORTING
def test_second_run_changes_nothing(ansible: AnsibleEnd, bundled_x86: Provisioned):
    mark(bundled_x86.host)
    result = run_playbook(ansible, bundled_x86.inventory)

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0, result.changed_tasks("x86")
    assert paths_changed_since(bundled_x86.host, MARKER) == set()


@ROLE_RULE
def test_a_kept_torch_needs_none_of_torchs_files(ansible: AnsibleEnd, bundled_x86: Provisioned):
    """Issue 34: the host now has the bundle's torch, which the torch role keeps; the same
    bundle without torch's files (its wheel and the dependencies only torch needs) still
    provisions it, with no change. (Before, the preflight checked torch's files before the
    keep decision: 'pip/torch-2.13.0+cpu-...whl: missing'.)"""
    x86, work = bundled_x86.host, bundled_x86.work
    without = linked_copy(work / "bundle", work / "without-torch")
    artifacts = json.loads((without / "manifest.json").read_text())["artifacts"]
    torch_only = [path for path, entry in artifacts.items() if entry_roles(entry) == ["torch"]]
    assert f"pip/{TORCH_WHEEL_X86.name}" in torch_only and len(torch_only) > 3, torch_only
    for path in torch_only:
        (without / path).unlink()
    mark(x86)
    result = run_playbook(ansible, bundled_x86.inventory, extra_vars=bundle_vars(without))

    assert result.rc == 0, result.messages() or result.stderr
    assert result.changed("x86") == 0, result.changed_tasks("x86")
    said = result.task_result("Say what happens to the installed torch", "x86")["msg"]
    assert said == "x86: torch 2.13.0+cpu is the one asked for", said
    assert paths_changed_since(x86, MARKER) == set()
    assert pip_version(x86, "torch") == "2.13.0+cpu"


@NO_PLAYBOOK
def test_doctor_inside_the_offline_host_agrees(bundled_x86: Provisioned):
    bundled_x86.host.install_project()
    report = doctor_json(bundled_x86.host, "termcolor", "--check", "torch")
    findings = {f["check"]: f for f in report["findings"]}
    assert findings["termcolor"]["status"] == "ok", findings
    assert "2.13.0+cpu" in findings["torch"]["summary"], findings["torch"]


@pytest.fixture(scope="module")
def own_controller(work: Path, bundle_dir: Path) -> Iterator[tuple[Host, str]]:
    """Issue 34: the offline host is its own controller. A fresh offline host (never
    provisioned, whatever ran before) gets the module's bundle with jetson-env and its
    provision extra for the host's Python added (to a copy: the module's bundle stays as it
    was made), installed there into an empty venv with no index: (the host, its jetson-env)."""
    host = start_offline_x86("bundle-x86-own-controller")
    bundle = linked_copy(bundle_dir, work / "bundle-with-controller")
    proc = jetson_env("bundle", bundle, "--x86", "--python-version", "3.11", "--glibc", "2.36",
                      "--distribution", "debian/bookworm", "--roles", "python_base",
                      "--controller-python", "3.11", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    host.copy_in(bundle, "/srv/bundle")
    line = json.loads(proc.stdout)["controller"]
    yield host, install_bundle_controller(host, line, bundle, "/srv/bundle", "/opt/own-controller")
    remove_host(host)


SELF_PROVISION = ("provision", "--bundle", "/srv/bundle")


@pytest.fixture(scope="module")
def self_provisioned(
    own_controller: tuple[Host, str],
) -> tuple[Host, str, subprocess.CompletedProcess]:
    """The host's first `provision --bundle B` by its own jetson-env, from an unrelated folder
    with no variables and no --tags: (the host, its jetson-env, that run)."""
    host, own = own_controller
    return host, own, host.exec(from_an_unrelated_folder(own, *SELF_PROVISION), check=False)


def recap(changed: str) -> str:
    return rf"localhost\s*: ok=\d+\s+changed={changed}\s+unreachable=0\s+failed=0"


@pytest.mark.ansible_ends("newest", why="the host's own ansible-core (from the bundle) runs it")
def test_jetson_env_installs_from_the_bundle_and_provisions_its_offline_host(
    self_provisioned: tuple[Host, str, subprocess.CompletedProcess],
):
    """It provisions the host (the roles the bundle was made for, and those that need no
    download), and the second run changes nothing."""
    host, own, first = self_provisioned
    second = host.exec(from_an_unrelated_folder(own, *SELF_PROVISION), check=False)

    for run, changed in ((first, "[1-9]\\d*"), (second, "0")):
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        assert "--tags cuda_env,python_base,torch" in run.stderr
        assert re.search(recap(changed), run.stdout), run.stdout[-3000:]


@pytest.mark.ansible_ends("newest", why="the host's own ansible-core (from the bundle) runs it")
def test_doctor_fix_with_the_bundle_repairs_the_offline_host(
    self_provisioned: tuple[Host, str, subprocess.CompletedProcess],
):
    """Issue 33's promise on the offline host: what the roles manage broken (termcolor
    removed), `jetson-env doctor --fix --yes --bundle B` from an unrelated folder applies the
    roles from the bundle as `provision --bundle B` does (its check, the roles it serves, no
    --playbook-vars): termcolor is fixed, each role the bundle does not serve is left out
    and says so, and the doctor after agrees."""
    x86, offline_controller, provisioned = self_provisioned
    assert provisioned.returncode == 0, provisioned.stdout[-3000:] + provisioned.stderr[-2000:]
    x86.exec(["python3", "-m", "pip", "uninstall", "-y", "-q", "--break-system-packages",
              "termcolor"], check=False)  # fmt: skip
    fix = x86.exec(from_an_unrelated_folder(offline_controller, "--no-color", "doctor", "--fix",
                                            "--yes", "--no-smoke", "--json", "--bundle",
                                            "/srv/bundle"), check=False, timeout=900)  # fmt: skip

    said = fix.stdout + fix.stderr
    document = json.loads(fix.stdout)
    rows = {row["check"]: row for row in document["findings"]}
    assert rows["termcolor"]["role"] == "python_base", rows
    assert rows["termcolor"]["verdict"] == "fixed", said[-6000:]
    served = ("cuda_env", "python_base", "torch")  # the bundle's roles, as provision's --tags
    assert document["plan"]["roles"] and set(document["plan"]["roles"]) <= set(served), document
    for row in rows.values():
        if row["role"] and row["role"] not in served:
            assert row["verdict"] == "left out", row
            assert row["why"].startswith(
                f"the bundle /srv/bundle does not serve role {row['role']}"
            )
    assert {"check": "termcolor", "before": "fail", "after": "ok"} in document["moved"]
    for forbidden in ("template error", "deprecat"):
        assert forbidden not in said.lower(), said[-4000:]
    again = x86.exec(from_an_unrelated_folder(offline_controller, "doctor", "--json",
                                              "--no-smoke", "--check", "termcolor"),
                     check=False)  # fmt: skip
    after = json.loads(again.stdout)
    assert [f["status"] for f in after["findings"]] == ["ok"], after


@pytest.fixture(scope="module")
def orin(ansible: AnsibleEnd) -> Iterator[Host]:
    host = start_host("orin-r36.4.3", "bundle-orin", network="none")
    yield host
    remove_host(host)


@ROLE_RULE
@pytest.mark.slow  # emulated: minutes on 2 cores; JETSON_ENV_SLOW=1 runs it
def test_the_emulated_orin_is_provisioned_from_the_same_bundle(
    ansible: AnsibleEnd, bundle_dir: Path, orin: Host, work: Path
):
    bundle_dir = linked_copy(bundle_dir, work / "bundle-with-orin")  # the module's stays as made
    before = json.loads((bundle_dir / "manifest.json").read_text())["artifacts"]
    proc = jetson_env(
        "bundle",
        bundle_dir,
        "--l4t",
        "R36.4.3",
        "--python-version",
        "3.11",
        "--glibc",
        "2.36",
        "--distribution",  # the emulated Orin is Debian 12 for arm64, not the row's Ubuntu
        "debian/bookworm",
        "--roles",
        "python_base",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    after = json.loads((bundle_dir / "manifest.json").read_text())
    assert set(after["targets"]) == {X86_KEY, ORIN_KEY}
    for path, entry in before.items():  # re-running added; it replaced nothing
        assert after["artifacts"][path]["sha256"] == entry["sha256"]
    inventory = write_inventory(
        work / "orin.yml",
        {"orin": {"ansible_host": orin.container}},
        {
            **OFFLINE_VARS,
            "python_base_matrix_apt_packages": True,  # the R36 row's libopenblas-dev
            "torch_enabled": False,
            "torch_lock_file": str(work / "orin.lock.yml"),
        },
    )
    assert after["apt"][ORIN_KEY]["repo"] == "apt/debian-bookworm-arm64"

    # Where a careful user starts: --check on the Orin that never saw the roles.
    mark(orin)
    first_check = run_playbook(ansible, inventory, extra_vars=bundle_vars(bundle_dir), check=True)
    assert first_check.rc == 0, first_check.messages() or first_check.stderr
    assert first_check.changed("orin") > 0  # it says what it would change
    assert paths_changed_since(orin, MARKER) == set()
    assert pip_version(orin, "termcolor") is None

    result = run_playbook(ansible, inventory, extra_vars=bundle_vars(bundle_dir))
    assert result.rc == 0, result.messages() or result.stderr
    said = result.task_result("Say what this host installs from the bundle", "orin")["msg"]
    assert f"(target {ORIN_KEY})" in said and "aarch64" in said
    assert pip_version(orin, "numpy") == "1.26.1"  # the R36 row's pin
    assert result.task_hosts("from the bundle's repository") == {"orin"}
    status = orin.exec(["dpkg-query", "-W", "-f", "${db:Status-Status}", "libopenblas-dev"])
    assert status.stdout == "installed"
    assert pip_version(orin, "termcolor") is not None

    mark(orin)
    again = run_playbook(ansible, inventory, extra_vars=bundle_vars(bundle_dir))
    assert again.rc == 0, again.messages() or again.stderr
    assert again.changed("orin") == 0, again.changed_tasks("orin")
    assert paths_changed_since(orin, MARKER) == set()
    check = run_playbook(ansible, inventory, extra_vars=bundle_vars(bundle_dir), check=True)
    assert check.rc == 0, check.messages() or check.stderr
    assert check.changed("orin") == 0, check.changed_tasks("orin")
    assert paths_changed_since(orin, MARKER) == set()

    # The doctor from the controller, in the Orin's own Python (emulated), through Ansible.
    doctor = jetson_env("--no-color", "doctor", "-i", inventory, "--json", "--no-smoke",
                        "--check", "termcolor")  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout[-3000:] + doctor.stderr[-3000:]
    (entry,) = json.loads(doctor.stdout)["hosts"]
    assert [f["status"] for f in entry["report"]["findings"]] == ["ok"], entry
    assert entry["report"]["platform"]["is_jetson"] is True, entry["report"]["platform"]

    # A break, then the doctor's fix from the same bundle (the Orin has no network).
    orin.exec(["python3", "-m", "pip", "uninstall", "-y", "-q", "--break-system-packages",
               "termcolor"])  # fmt: skip
    assert pip_version(orin, "termcolor") is None
    fix = jetson_env("--no-color", "doctor", "-i", inventory, "--fix", "--yes", "--bundle",
                     bundle_dir, "--check", "termcolor", "--no-smoke")  # fmt: skip
    assert fix.returncode == 0, fix.stdout[-3000:] + fix.stderr[-6000:]
    assert "orin: termcolor: fail -> ok" in fix.stdout, fix.stdout[-3000:]
    assert "termcolor: fixed (python_base)" in fix.stdout, fix.stdout[-3000:]
    assert pip_version(orin, "termcolor") is not None
