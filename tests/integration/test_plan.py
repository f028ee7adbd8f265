"""`jetson-env plan --to RELEASE` on real test hosts: the installed command, its probes in the
host's Python, and proof that the plan changed nothing there.

One emulated Orin on R36.4.3 of this module's own (its installs must not reach other
modules' hosts) carries what a provisioned Orin has in its Python: torch and torchvision
whose extensions link libcudart.so.12 (cross-compiled stand-ins, laid out as pip installs
them), and two engines, one with a sidecar naming TensorRT 10.16. NVIDIA's apt repository is
the signed stand-in (tests/support/standin_apt.py) serving the r36.4 and r36.5 suites with
different package versions; one package is held.
"""

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from playbook_support import (
    OFFLINE_VARS,
    paths_changed_since,
    pip_version,
    remove_host,
    start_host,
    write_inventory,
)
from support.hosts import VENV, Host
from support.schemas import plan_schema_validator
from support.standin_apt import build_repository, serve, signing_key, tls_files, trust_in_host
from support.standins import COMPILERS, build_libcudart

pytestmark = pytest.mark.hosts

JETSON_ENV = f"{VENV}/bin/jetson-env"
MARKER = "/var/tmp/jetson-env-plan-marker"
SITE = "/usr/local/lib/python3.11/dist-packages"  # Debian's python3 (3.11) installs here
ENGINES = "/srv/models"
NVIDIA_LIST = "/etc/apt/sources.list.d/nvidia-l4t-apt-source.list"
# r36.4 -> r36.5: the stand-in gives each package the version "<second>.0-1"
SUITES = {
    "r36.4": [("libcudnn9-cuda-12", "12.6"), ("nvidia-l4t-gpio", "36.4")],
    "r36.5": [("libcudnn9-cuda-12", "12.8"), ("nvidia-l4t-gpio", "36.5")],
}
EXTENSION = "_C.cpython-311-aarch64-linux-gnu.so"
NV_TEGRA_RELEASE = "/etc/nv_tegra_release"


def stage_distribution(host: Host, work: Path, name: str, version: str) -> None:
    """NAME-VERSION.dist-info and NAME/_C...so (aarch64, DT_NEEDED libcudart.so.12) in SITE."""
    cc = COMPILERS["aarch64"]
    lib = work / "lib"
    if not (lib / "libcudart.so").exists():
        build_libcudart("12.6.68", lib, cc=cc)
    (work / "ext.c").write_text("int standin_extension(void) { return 1; }\n")
    tree = work / name
    (tree / name).mkdir(parents=True)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tree / name / EXTENSION), str(work / "ext.c"),
                    f"-L{lib}", "-Wl,--no-as-needed", "-lcudart"],
                   check=True, capture_output=True)  # fmt: skip
    (tree / name / "__init__.py").write_text(f'"""STAND-IN for {name}."""\n')
    info = tree / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(
        f"{name}/__init__.py,,\n{name}/{EXTENSION},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
    )
    host.exec(["mkdir", "-p", SITE])
    host.copy_in(tree / name, f"{SITE}/{name}")
    host.copy_in(info, f"{SITE}/{info.name}")


@pytest.fixture(scope="module")
def orin() -> Iterator[Host]:
    host = start_host("orin-r36.4.3", "plan-orin")
    host.install_project()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        stage_distribution(host, work / "t", "torch", "2.5.0a0+872d972e41.nv24.8")
        stage_distribution(host, work / "v", "torchvision", "0.20.0")
    host.exec(["sh", "-c", f"mkdir -p {ENGINES}/yolo && head -c 64 /dev/zero > {ENGINES}/a.engine"
               f" && head -c 64 /dev/zero > {ENGINES}/yolo/b.plan && printf "
               f"'{{\"tensorrt\": \"10.16.2\"}}' > {ENGINES}/yolo/b.plan.json"])  # fmt: skip
    yield host
    remove_host(host)


def plan(host: Host, *args: str) -> tuple[int, dict]:
    """The installed command, as a user runs it on the host, after a marker is touched."""
    host.exec(["sh", "-c", f"touch {MARKER} && sleep 1"])
    done = host.exec([JETSON_ENV, "plan", *args, "--json"], check=False, timeout=900)
    assert "Traceback" not in done.stderr, done.stderr
    data = json.loads(done.stdout)
    plan_schema_validator().validate(data)
    assert done.returncode == data["exit_code"]
    return done.returncode, data


def parts(data: dict) -> dict[str, tuple[str, str]]:
    (host,) = data["hosts"]
    return {p["name"]: (p["verdict"], p["reason"]) for p in host["parts"]}


def test_within_the_line_almost_everything_survives(orin: Host) -> None:
    code, data = plan(orin, "--to", "R36.5.0", "--engines", ENGINES, "--bundle", "/var/b")
    found = parts(data)
    assert code == 0
    assert data["hosts"][0]["kind"] == "apt"
    assert found["torch"][0] == "survives" and found["torchvision"][0] == "survives"
    assert found[f"{ENGINES}/a.engine"][0] == "unknown"
    assert "not a TensorRT plan" in found[f"{ENGINES}/a.engine"][1]
    assert found[f"{ENGINES}/yolo/b.plan"][0] == "rebuild"  # the sidecar: built with 10.16
    assert found["JetPack packages"][0] == "unknown"  # NVIDIA's repository is not configured
    assert "not configured" in found["JetPack packages"][1]
    changed = {n: v for n, (v, _) in found.items() if v not in ("survives", "unknown")}
    assert changed == {f"{ENGINES}/yolo/b.plan": "rebuild"}
    assert data["commands"]["before"] == [
        f"{JETSON_ENV} bundle /var/b --l4t R36.5.0 --python-version 3.11 "
        "--distribution debian/bookworm"
    ]
    assert data["commands"]["after"] == [
        "jetson-env provision --bundle /var/b",
        "jetson-env doctor",
    ]
    assert paths_changed_since(orin, MARKER) == set()


def test_to_jetpack_7_the_compiled_parts_rebuild_and_the_engines_are_flagged(orin: Host) -> None:
    code, data = plan(orin, "--to", "R39.2.2", "--engines", ENGINES)
    found = parts(data)
    assert code == 0
    assert data["hosts"][0]["kind"] == "reflash"
    assert data["after"]["cuda"] == "13.2" and data["after"]["python"] == "3.12"
    assert found["torch"][0] == "reinstall"
    assert "2.14.1" in found["torch"][1] and "SBSA" in found["torch"][1]
    assert "CUDA 12.6 -> 13.0" in found["torch"][1]
    assert found["torchvision"][0] == "rebuild" and "0.29.1" in found["torchvision"][1]
    assert found[f"{ENGINES}/a.engine"][0] == "rebuild"
    assert "TensorRT 10.3 -> 10.16" in found[f"{ENGINES}/a.engine"][1]
    assert found[f"{ENGINES}/yolo/b.plan"][0] == "survives"
    assert found["JetPack packages"][0] == "reinstall"
    assert data["commands"]["before"][0].endswith(" --l4t R39.2.2")  # the row's own Python
    assert paths_changed_since(orin, MARKER) == set()


@pytest.fixture
def nvidia_apt(orin: Host) -> Iterator[None]:
    """The stand-in NVIDIA repository configured on the Orin at r36.4, its packages installed
    from it, nvidia-l4t-gpio held (as a user who patched GPIO does); all of it gone after the
    test, so that the module's other tests see the Orin as they would alone."""
    tls, key = tls_files(), signing_key()
    with tempfile.TemporaryDirectory(prefix="jetson-env-plan-apt-") as folder:
        repo = Path(folder)
        os.chmod(repo, 0o755)
        build_repository(repo, SUITES, key)
        with serve(repo, tls, []) as url:
            trust_in_host(orin, tls)
            with tempfile.NamedTemporaryFile(suffix=".asc") as asc:
                Path(asc.name).write_bytes(key.armored)
                os.chmod(asc.name, 0o644)  # apt reads keys as _apt
                orin.copy_in(asc.name, "/etc/apt/trusted.gpg.d/jetson-ota-public.asc")
            orin.exec(["sh", "-c", f"echo 'deb {url} r36.4 main' > {NVIDIA_LIST}"])
            orin.exec(["apt-get", "update", "-q", "-o", f"Dir::Etc::SourceList={NVIDIA_LIST}",
                       "-o", "Dir::Etc::SourceParts=-"], timeout=900)  # fmt: skip
            orin.exec(["apt-get", "install", "-y", "-q", "libcudnn9-cuda-12", "nvidia-l4t-gpio"],
                      timeout=900)  # fmt: skip
            orin.exec(["apt-mark", "hold", "nvidia-l4t-gpio"])
            yield
            orin.exec(["sh", "-c", "apt-mark unhold nvidia-l4t-gpio && apt-get purge -y -q"
                       f" libcudnn9-cuda-12 nvidia-l4t-gpio && rm -f {NVIDIA_LIST}"
                       " /etc/apt/trusted.gpg.d/jetson-ota-public.asc && find /var/lib/apt/lists"
                       " -name '*_dists_r36.4_*' -delete"], timeout=900)  # fmt: skip


def test_apt_simulates_the_upgrade_and_the_hold_blocks_it(orin: Host, nvidia_apt: None) -> None:
    lists = orin.exec(["sh", "-c", "ls -l --time-style=full-iso /var/lib/apt/lists"]).stdout
    status = orin.exec(["sha256sum", "/var/lib/dpkg/status"]).stdout
    code, data = plan(orin, "--to", "R36.5.0")
    found = parts(data)
    assert code == 1 and data["status"] == "blocked"
    assert found["nvidia-l4t-gpio"][0] == "blocked"
    assert "sudo apt-mark unhold nvidia-l4t-gpio" in found["nvidia-l4t-gpio"][1]
    assert found["libcudnn9-cuda-12"][0] == "reinstall"
    (host,) = data["hosts"]
    cudnn = next(p for p in host["parts"] if p["name"] == "libcudnn9-cuda-12")
    assert (cudnn["now"], cudnn["after"]) == ("12.6.0-1", "12.8.0-1")
    assert paths_changed_since(orin, MARKER) == set()
    assert orin.exec(["sh", "-c", "ls -l --time-style=full-iso /var/lib/apt/lists"]).stdout == lists
    assert orin.exec(["sha256sum", "/var/lib/dpkg/status"]).stdout == status
    assert orin.exec(["apt-mark", "showhold"]).stdout.split() == ["nvidia-l4t-gpio"]


def test_an_x86_host_is_refused_with_the_reason(x86_host: Host) -> None:
    x86_host.install_project()
    code, data = plan(x86_host, "--to", "R36.5.0")
    assert code == 2
    (host,) = data["hosts"]
    assert host["status"] == "refused" and host["parts"] == []
    assert "not a Jetson" in host["refused"]
    assert data["commands"] == {"before": [], "after": []}
    assert paths_changed_since(x86_host, MARKER) == set()


def test_a_fleet_plan_through_ansible_writes_the_host_by_part_page(
    tmp_path: Path, orin: Host, x86_host: Host
) -> None:
    python = {"ansible_connection": "community.docker.docker",
              "ansible_python_interpreter": f"{VENV}/bin/python"}  # fmt: skip
    inventory = {
        "all": {
            "hosts": {
                "orin": {**python, "ansible_host": orin.container},
                "x86": {**python, "ansible_host": x86_host.container},
            }
        }
    }
    (tmp_path / "fleet.yml").write_text(yaml.safe_dump(inventory))
    done = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "plan", "--to", "R39.2.2", "-i", "fleet.yml",
         "--engines", ENGINES, "--report", "plan.html", "--json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=900, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    data = json.loads(done.stdout)
    plan_schema_validator().validate(data)
    assert done.returncode == 2  # the x86 host is refused; the Orin still has its plan
    assert [(h["host"], h["status"]) for h in data["hosts"]] == [
        ("x86", "refused"),
        ("orin", "rebuild"),
    ]
    assert data["commands"]["after"] == [
        f"jetson-env provision --bundle {tmp_path}/jetson-env-bundle-r39.2.2 -i "
        f"{tmp_path}/fleet.yml --limit orin",
        f"jetson-env doctor -i {tmp_path}/fleet.yml --limit orin"]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yml", "plan.html"]
    page = (tmp_path / "plan.html").read_text()
    assert '<tr data-host="orin">' in page and '<td class="rebuild"' in page
    assert "not a Jetson" in page


@pytest.mark.slow  # the bundle and provisioning the emulated Orin: 17 minutes on 2 cores (load 9)
def test_after_a_simulated_ota_the_printed_commands_converge_offline(tmp_path: Path) -> None:
    """The plan through the fleet's inventory, its commands run exactly as printed (from
    another folder): the bundle before; then, on a fresh host of the target row (R36.5.0,
    no network, none of the old host's folders: what an OTA leaves), provision --bundle and
    the doctor. The inventory holds the fleet's own settings: NVIDIA's repository and
    downloads are not reachable here, so the roles that need them are off (OFFLINE_VARS)."""
    settings = {**OFFLINE_VARS, "python_base_matrix_apt_packages": True, "torch_enabled": False,
                "torch_lock_file": str(tmp_path / "jetson-env.lock.yml")}  # fmt: skip
    device = start_host("orin-r36.4.3", "plan-ota")
    write_inventory(tmp_path / "fleet.yml", {"orin": {"ansible_host": device.container}},
                    settings)  # fmt: skip
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    made = subprocess.run(
        ["jetson-env", "plan", "--to", "R36.5.0", "-i", "fleet.yml", "--bundle", "bundle",
         "--json"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900,
    )  # fmt: skip
    data = json.loads(made.stdout)
    assert made.returncode == 0 and data["hosts"][0]["kind"] == "apt", data["hosts"]
    (before,) = data["commands"]["before"]
    provision, doctor = data["commands"]["after"]

    def run(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, shell=True, capture_output=True, text=True, cwd="/",
                              env=env, timeout=1800, stdin=subprocess.DEVNULL)  # fmt: skip

    bundled = run(before)
    assert bundled.returncode == 0, bundled.stderr
    ota = start_host("orin-r36.4.3", "plan-ota", network="none")  # the same device, flashed
    ota.exec(["sed", "-i", "s/REVISION: 4.3,/REVISION: 5.0,/", NV_TEGRA_RELEASE])

    provisioned = run(provision)
    assert provisioned.returncode == 0, provisioned.stdout[-3000:] + provisioned.stderr[-2000:]
    assert pip_version(ota, "numpy") == "1.26.1"  # the R36 rows' pin, from the bundle
    status = ota.exec(["dpkg-query", "-W", "-f", "${db:Status-Status}", "libopenblas-dev"])
    assert status.stdout == "installed"
    checked = run(doctor)
    assert "L4T R36.5.0 / JetPack 6.2.2" in checked.stdout, checked.stdout + checked.stderr
    row = next(line for line in checked.stdout.splitlines() if "L4T R36.5.0" in line)
    assert "termcolor" not in row and "platform" not in row, checked.stdout
    remove_host(ota)
