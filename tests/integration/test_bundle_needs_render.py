"""The bundle's needs against the roles' own rendering (issue 34): for every matrix row and
the x86 profile, ansible-playbook (ansible-core's own templating, on this machine, no host)
loads each role's defaults/main.yml and vars/main.yml with that row's facts and renders what
the role installs: python_base's pip requirements and apt packages, torch's source and
cuSPARSELt, torchvision's version (paired with the torch the bundle brings) and apt packages,
pycuda's version, torch2trt's ref and apt packages, TensorRT's apt packages on a Jetson and
its pip requirement on x86 and ONNX export's packages (onnx) for the TensorRT it installs, the
pip sets torchvision's and torch2trt's builds install, and
the torchvision paired with a torch the host keeps (2.11.0+cu130, the offline GPU server's),
which a bundle brings with --file torch=<that wheel>.
jetson_env.bundle.needs_for must fetch exactly those. No Docker: about 10 s.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jetson_env import collection, matrix
from jetson_env.bundle import targets as bundle_targets
from jetson_env.bundle.needs import archive_version, needs_for

REPO = Path(__file__).resolve().parents[2]
ROLES = REPO / "ansible_collections" / "jetson_env" / "jetson" / "roles"
# The roles whose files a bundle carries (the role registry, meta/roles.yml).
ALL_ROLES = collection.roles_a_bundle("files")
ROLE_FILES = [
    f"{ROLES}/{role}/{kind}/main.yml"
    for role in ALL_ROLES
    for kind in ("defaults", "vars")
    if (ROLES / role / kind / "main.yml").exists()
]
KEPT_TORCH = "2.11.0+cu130"
# What each role installs, as its own variables say (rendered by Ansible on the row's facts).
RENDERED = {
    "python_base_pip": "{{ _python_base_requirements }}",
    "python_base_apt": "{{ _python_base_apt }}",
    "torch_source": "{{ _torch_source }}",
    "cusparselt": "{{ _torch_cusparselt }}",
    "cusparselt_apt": "{{ torch_cusparselt_apt_packages }}",
    "torchvision": "{{ _torchvision_version }}",
    "torchvision_apt": "{{ torchvision_apt_packages }}",
    "pycuda": "{{ _pycuda_version }}",
    "torch2trt": "{{ torch2trt_version }}",
    "torch2trt_git": "{{ torch2trt_git_url }}",
    "torch2trt_apt": "{{ torch2trt_cmake_apt_packages }}",
    "torch2trt_build": "{{ torch2trt_build_pip_packages }}",
    "torchvision_build": "{{ _torchvision_build_requirements }}",
    "tensorrt_apt": "{{ tensorrt_apt_packages if tensorrt_from_apt else [] }}",
    "tensorrt_pip": "{{ tensorrt_pip_package }}",
    "tensorrt_onnx": "{{ _tensorrt_onnx_packages }}",
}
PLAYBOOK = [
    {
        "name": "Render what each role installs for a row",
        "hosts": "all",
        "gather_facts": False,
        "tasks": [
            {
                "name": "The row (jetson_facts' own filter)",
                "ansible.builtin.set_fact": {
                    "_plan": "{{ '' | jetson_env.jetson.plan(row_platform, row_python,"
                    " inventory_hostname) }}",
                    "jetson_facts_matrix": "{{ '' | jetson_env.jetson.matrix }}",
                },
            },
            {
                "name": "jetson_facts' facts",
                "ansible.builtin.set_fact": {
                    "jetson_facts_matrix_file": "",
                    "jetson_facts_row": "{{ _plan.row }}",
                    "jetson_facts_pycuda_version": "{{ _plan.pycuda }}",
                    "jetson_facts_platform_key": "{{ _plan.platform_key }}",
                    "jetson_facts_compute_capability": "{{ _plan.compute_capability }}",
                    "jetson_facts_arch": "{{ row_platform.machine }}",
                    "jetson_facts_cuda_root": "/usr/local/cuda",
                    # The facts module's record of the target Python (tensorrt's x86 pip pin
                    # is per Python), with no package installed, and of the platform.
                    "ansible_facts": {
                        "jetson_env_python": "{{ row_python }}",
                        "jetson_env_platform": "{{ row_platform }}",
                    },
                },
            },
            {
                "name": "The torch the bundle brings (no torch is kept: no host to keep one)",
                "ansible.builtin.set_fact": {
                    "torch_kept": {"keep": False},
                    "torch_verified_version": "{{ jetson_facts_row.torch.version }}",
                },
            },
            {
                "name": "Each role's defaults and vars",
                "ansible.builtin.include_vars": {"file": "{{ item }}"},
                "loop": ROLE_FILES,
            },
            {
                "name": "The rendering",
                "ansible.builtin.set_fact": {"_rendering": RENDERED},
            },
            {
                "name": "A torch the host keeps (the facts module's packages)",
                "ansible.builtin.set_fact": {
                    "torch_kept": {"keep": True},
                    "ansible_facts": {"jetson_env_python": {"packages": {"torch": KEPT_TORCH}}},
                },
            },
            {
                "name": "The row's rendering and the torchvision paired with the kept torch",
                "ansible.builtin.set_fact": {
                    "_row": ["{{ _rendering }}", {"torchvision": "{{ _torchvision_version }}"}]
                },
            },
            {
                # One module run for all rows (a copy per host was most of the play's time).
                "name": "Write every row's rendering",
                "ansible.builtin.copy": {
                    "content": "{{ dict(ansible_play_hosts"
                    " | zip(ansible_play_hosts | map('extract', hostvars, '_row'))) | to_json }}",
                    "dest": "{{ out }}",
                    "mode": "0644",
                },
                "run_once": True,
            },
        ],
    }
]


def targets() -> dict[str, bundle_targets.BundleTarget]:
    m = matrix.load()
    rows = bundle_targets.targets_from_args(m, [f"R{key}" for key in m.releases], False, None, None)
    x86 = [target  # Ubuntu 22.04's, 24.04's and 26.04's Python (3.14: TensorRT 11.1's pin)
           for python, glibc in (("3.10", "2.35"), ("3.12", "2.39"), ("3.14", "2.43"))
           for target in bundle_targets.targets_from_args(m, [], True, python, glibc)]  # fmt: skip
    return {target.key.replace(".", "_"): target for target in [*rows, *x86]}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    work = tmp_path_factory.mktemp("render")
    out = work / "renderings.json"
    hosts = {}
    for name, target in targets().items():
        platform = {"machine": target.machine, "is_jetson": bool(target.l4t), "l4t": target.l4t}
        python = {"version": f"{target.python}.0", "major_minor": target.python,
                  "tag": target.abi, "libc": target.glibc, "packages": {}}  # fmt: skip
        # The facts the jetson_env facts module reports for such a host (no host: this row's).
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "row_platform": platform, "row_python": python}  # fmt: skip
    inventory = work / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    playbook = work / "render.yml"
    playbook.write_text(yaml.safe_dump(PLAYBOOK, sort_keys=False))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO)}
    playbook_bin = Path(sys.executable).with_name("ansible-playbook")
    proc = subprocess.run([str(playbook_bin), "-i", str(inventory), str(playbook),
                           "-e", json.dumps({"out": str(out)})], env=env, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[:4000] + proc.stderr[-2000:]
    renderings = json.loads(out.read_text())  # {host: [rendering, kept torch's torchvision]}
    return {**{name: rendering for name, (rendering, _) in renderings.items()},
            **{f"{name}.kept": kept for name, (_, kept) in renderings.items()}}  # fmt: skip


@pytest.mark.parametrize("name", sorted(targets()))
def test_the_bundle_fetches_what_the_roles_render(rendered: dict[str, dict], name: str):
    target = targets()[name]
    roles = rendered[name]
    needs = needs_for(matrix.load(), target, ALL_ROLES, {})
    pip = {pip_set.role: pip_set for pip_set in needs.pip}
    urls = {(url.role, url.what): url for url in needs.urls}

    assert pip["python_base"].requirements == roles["python_base_pip"]
    assert needs.apt.get("python_base", []) == roles["python_base_apt"]
    assert needs.sdists == [("pycuda", f"pycuda=={roles['pycuda']}")]

    source = roles["torch_source"]
    if source["kind"] == "url":
        torch = urls[("torch", "torch wheel")]
        assert (torch.url, torch.filename, torch.sha256 or "") == (
            source["url"], source["filename"], source["matrix_sha256"] or "")  # fmt: skip
    else:
        assert pip["torch"].requirements == [f"torch=={source['version']}"]
        assert (pip["torch"].index or "") == (source["index"] or "")
    cusparselt = urls.get(("torch", "cuSPARSELt archive"))
    assert (cusparselt.url if cusparselt else None) == (roles["cusparselt"] or {}).get("url")
    assert needs.apt.get("torch", []) == (roles["cusparselt_apt"] if cusparselt else [])

    archive = urls[("torchvision", "torchvision source archive")]
    assert archive_version(archive.filename) == roles["torchvision"]
    assert needs.apt["torchvision"] == roles["torchvision_apt"]

    # torch2trt: the role builds it only where it can use the TensorRT the tensorrt role
    # installs (its "Leave torch2trt out" task: not with 11.1, Python 3.14's pin).
    tensorrt = (matrix.load().release(target.l4t).tensorrt if target.l4t
                else roles["tensorrt_pip"].split("==")[1])  # fmt: skip
    torch2trt_urls = [u for (role, _), u in urls.items() if role == "torch2trt"]
    if not matrix.load().converters.supports("torch2trt", tensorrt):
        assert torch2trt_urls == [] and "torch2trt" not in pip and "torch2trt" not in needs.apt
        assert target.python == "3.14"
    else:
        (torch2trt,) = torch2trt_urls
        assert torch2trt.url == (
            f"{roles['torch2trt_git'].removesuffix('.git')}/archive/{roles['torch2trt']}.tar.gz"
        )
        assert needs.apt["torch2trt"] == roles["torch2trt_apt"]
        assert pip["torch2trt"].requirements == roles["torch2trt_build"]
    if target.l4t:
        assert needs.apt["tensorrt"] == roles["tensorrt_apt"]
    else:
        assert pip["tensorrt"].requirements == [roles["tensorrt_pip"]]
    # ONNX export's packages: the tensorrt role's (its onnx set, where the TensorRT it installs
    # offers the ONNX converter), resolved with the row's numpy pin; none of python_base's.
    onnx = [p.requirements for p in needs.pip if p.role == "tensorrt" and p.unresolved is None]
    assert [r[1:] for r in onnx] == ([roles["tensorrt_onnx"]] if roles["tensorrt_onnx"] else [])
    assert all(r[0] == roles["python_base_pip"][0] for r in onnx)  # numpy's
    assert "onnx" not in roles["python_base_pip"]

    # What the builds install with pip first: the same sets, in the same order.
    assert pip["torchvision"].requirements == roles["torchvision_build"]


@pytest.mark.parametrize("name", sorted(targets()))
def test_the_bundle_brings_the_torchvision_a_kept_torch_pairs_with(
    rendered: dict[str, dict], name: str
):
    """A bundle made with --file torch=<the kept torch's wheel> fetches the archive of the
    torchvision the role pairs with that torch on the host (the pairing filter)."""
    wheel = Path(f"torch-{KEPT_TORCH}-cp312-cp312-manylinux_2_28_x86_64.whl")
    needs = needs_for(matrix.load(), targets()[name], ["torchvision"], {"torch": wheel})
    (archive,) = [url for url in needs.urls if url.role == "torchvision"]
    assert archive_version(archive.filename) == rendered[f"{name}.kept"]["torchvision"]
