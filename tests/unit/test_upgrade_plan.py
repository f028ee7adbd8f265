"""`jetson-env plan`'s judgement as tables: captured facts of a host in, verdicts out."""

import json
import shlex
from pathlib import Path

import pytest

from jetson_env.matrix import UnknownRelease, load
from jetson_env.plan import assembly, judgement
from jetson_env.plan import page as plan_page
from jetson_env.probing import ProbeResult, source

MATRIX = load()
FIXTURES = Path(__file__).parents[1] / "fixtures" / "plan"
ORIN = {
    "is_jetson": True, "machine": "aarch64", "l4t": "36.4.3", "l4t_source": "nv_tegra_release",
    "board": "t234ref", "model": "NVIDIA Jetson AGX Orin Developer Kit", "soc": "tegra234",
    "gpus": [], "os": {"id": "ubuntu", "version_id": "22.04", "version_codename": "jammy",
                       "pretty_name": "Ubuntu 22.04.5 LTS"},
    "python": {"version": "3.10.12", "executable": "/usr/bin/python3"}, "uid": 0, "unknown": {},
}  # fmt: skip
X86 = {**ORIN, "is_jetson": False, "machine": "x86_64", "l4t": None, "soc": None}


def dist(name, version, abis=("cpython-310-aarch64-linux-gnu",), needs=()):
    location = "/usr/local/lib/python3.10/dist-packages"
    return {"name": name, "version": version, "location": location, "shared_objects": 1,
            "abis": list(abis), "needs": list(needs), "unread": []}  # fmt: skip


# What an Orin on R36.4.3 provisioned by the roles has (needs as `readelf -d` lists them).
COMPILED = {
    "python": {"version": "3.10.12", "soabi": "cpython-310-aarch64-linux-gnu",
               "executable": "/usr/bin/python3", "prefix": "/usr", "venv": False},
    "distributions": [
        dist("torch", "2.5.0a0+872d972e41.nv24.8", needs=["libtorch_python.so", "libc10.so"]),
        dist("torchvision", "0.20.0", needs=["libc10.so", "libtorch.so", "libcudart.so.12"]),
        dist("pycuda", "2025.1", needs=["libcuda.so.1", "libstdc++.so.6"]),
        dist("torch2trt", "0.5.0", needs=["libnvinfer.so.10", "libc10.so", "libtorch.so"]),
        dist("cupy-cuda12x", "13.3.0", needs=["libcudart.so.12", "libcublas.so.12"]),
        dist("cryptography", "44.0.0", abis=["abi3"], needs=["libc.so.6"]),
        dist("numpy", "1.26.1", needs=["libopenblas.so.0"]),
    ],
    "pure": 41,
    "problems": [],
}  # fmt: skip
ENGINES = {
    "folders": ["/srv/models"], "missing": [], "reader": None, "truncated": False,
    "engines": [
        {"path": "/srv/models/yolo.engine", "size": 9, "tensorrt": None, "source": None,
         "unknown": "no TensorRT tool on the host (trtexec) and no sidecar"},
        {"path": "/srv/models/resnet.plan", "size": 9, "tensorrt": "10.3.0",
         "source": "/srv/models/resnet.plan.json", "unknown": None},
    ],
}  # fmt: skip
NO_CHANGE = {"configured": [{"suite": "r36.4"}], "holds": [], "holds_error": None,
             "simulation": {"ok": True, "error": None, "changes": [], "kept_back": []}}  # fmt: skip


def verdicts(to, compiled=COMPILED, engines=ENGINES, apt=NO_CHANGE, platform=ORIN):
    target = judgement.target_release(MATRIX, to)
    current, kind = judgement.move(MATRIX, platform, target)
    facts = {"compiled": compiled, "engines": engines, "apt_upgrade": apt}
    parts = judgement.judge(MATRIX, platform, facts, current, target, kind)
    return kind, {p.name: (p.verdict, p.reason) for p in parts}


def test_within_the_line_almost_everything_survives():
    kind, found = verdicts("R36.5.0")
    assert kind == judgement.APT
    assert {name: verdict for name, (verdict, _) in found.items()} == {
        "torch": "survives", "torchvision": "survives", "pycuda": "survives",
        "torch2trt": "survives", "cupy-cuda12x": "survives", "cryptography": "survives",
        "numpy": "survives", "41 pure-Python distributions": "survives",
        "/srv/models/yolo.engine": "unknown", "/srv/models/resnet.plan": "survives",
        "JetPack packages": "survives",
    }  # fmt: skip
    assert "TensorRT 10.3" in found["/srv/models/yolo.engine"][1]
    assert "no TensorRT tool" in found["/srv/models/yolo.engine"][1]


def test_a_distribution_whose_file_list_was_not_read_is_unknown_not_left_out():
    """The compiled probe's `unread` (a RECORD past the probes' bounds): an unknown part that
    says why, not a distribution the plan is silent about."""
    why = "[Errno 27] larger than 16777216 bytes (not read)"
    unread = [{"path": "/usr/local/lib/python3.10/dist-packages/torch-2.5.0.dist-info",
               "error": why}]  # fmt: skip
    _kind, found = verdicts("R39.2.2", compiled={**COMPILED, "unread": unread})
    assert found["torch-2.5.0.dist-info"] == (
        "unknown",
        f"its file list was not read ({why}): what it installs is not judged",
    )


def test_to_jetpack_7_the_native_parts_rebuild_and_the_engines_are_flagged():
    kind, found = verdicts("R39.2.2")
    assert kind == judgement.REFLASH
    assert {name: verdict for name, (verdict, _) in found.items()} == {
        "torch": "reinstall", "torchvision": "rebuild", "pycuda": "rebuild",
        "torch2trt": "rebuild", "cupy-cuda12x": "rebuild", "numpy": "rebuild",
        "cryptography": "reinstall", "41 pure-Python distributions": "reinstall",
        "/srv/models/yolo.engine": "rebuild", "/srv/models/resnet.plan": "rebuild",
        "JetPack packages": "reinstall",
    }  # fmt: skip
    torch = found["torch"][1]
    assert "2.14.1" in torch and "CUDA 12.6 -> 13.0" in torch and "SBSA" in torch
    assert "Python 3.10 -> 3.12" in torch
    # The pairing rule, as the role builds it: the row's 0.29.1 (0.29.0 requires torch==2.14.0).
    assert "0.29.1" in found["torchvision"][1]
    assert "cpython-310" in found["pycuda"][1] and "Python 3.12" in found["pycuda"][1]
    assert "libcudart.so.12" in found["cupy-cuda12x"][1] and "CUDA 13.2" in found["cupy-cuda12x"][1]
    assert found["/srv/models/resnet.plan"][1] == (
        "rebuild: built by TensorRT 10.3.0, R39.2.2 has TensorRT 10.16 (unless it was built "
        "version-compatible, which its header does not record)")  # fmt: skip
    assert "only /ota survives" in found["JetPack packages"][1]


def test_an_engine_built_for_the_target_survives_and_a_cuda_13_part_is_kept():
    engines = {**ENGINES, "engines": [{**ENGINES["engines"][1], "tensorrt": "10.16.2"}]}
    python = {**COMPILED["python"], "version": "3.12.3"}
    compiled = {**COMPILED, "python": python, "distributions": [
        dist("cupy-cuda13x", "13.6.0", abis=["cpython-312-aarch64-linux-gnu"],
             needs=["libcudart.so.13"])]}  # fmt: skip
    _, found = verdicts("R39.2.2", compiled=compiled, engines=engines)
    assert found["/srv/models/resnet.plan"][0] == "survives"
    # a 3.12 build stays 3.12, but CUDA 12 -> 13 still links libcudart.so.13: only the row's
    # CUDA major changes, which is what the verdict reads
    assert found["cupy-cuda13x"][0] == "rebuild"
    assert "libcudart.so.13" in found["cupy-cuda13x"][1]


@pytest.mark.parametrize(
    "platform, to, said",
    [
        (X86, "R36.5.0", "not a Jetson"),
        (ORIN, "R36.3.0", "a downgrade"),
        (ORIN, "R38.2.0", "not for this host's SoC tegra234: its line runs on tegra264"),
        (
            {**ORIN, "l4t": None, "unknown": {"l4t": "no /etc/nv_tegra_release"}},
            "R36.5.0",
            "no /etc/nv_tegra_release",
        ),
        (
            {**ORIN, "l4t": "35.4.1", "soc": "tegra194"},
            "R36.5.0",
            "not for this host's SoC tegra194",
        ),
    ],
    ids=["x86", "downgrade", "thor-only-line", "l4t-unread", "xavier-to-r36"],
)
def test_moves_no_upgrade_or_ota_makes_are_refused_with_the_reason(platform, to, said):
    with pytest.raises(judgement.Refused, match=said):
        verdicts(to, platform=platform)


@pytest.mark.parametrize("to, said", [("R99.1.0", "not supported; supported releases"),
                                      ("R36.4.9", "not supported")])  # fmt: skip
def test_unknown_targets_are_refused_naming_the_supported_ones(to, said):
    with pytest.raises(UnknownRelease, match=said):
        judgement.target_release(MATRIX, to)


def test_an_unsupported_target_says_why_it_is_left_out():
    left_out, reason = next(iter(MATRIX.unsupported.items()))
    with pytest.raises(UnknownRelease) as caught:
        judgement.target_release(MATRIX, f"R{left_out}")
    assert reason.split()[0] in str(caught.value)


SIMULATED = (FIXTURES / "apt-get-s-dist-upgrade-held.txt").read_text()


def test_apt_simulation_output_is_read():
    namespace: dict = {}
    exec(compile(source("apt_upgrade"), "apt_upgrade.py", "exec"), namespace)
    changes, kept = namespace["parse_simulation"](SIMULATED)
    assert kept == ["nvidia-l4t-gpio"]
    assert {"package": "libcudnn9-cuda-12", "from": "12.6.0-1", "to": "12.8.0-1",
            "action": "upgrade"} in changes  # fmt: skip
    removed, _ = namespace["parse_simulation"]("Remv nvidia-l4t-old-extra [36.4.3-20250107]\n")
    assert removed == [{"package": "nvidia-l4t-old-extra", "from": "36.4.3-20250107", "to": None,
                        "action": "remove"}]  # fmt: skip


@pytest.mark.parametrize(
    "apt, expected",
    [
        ({**NO_CHANGE, "holds": ["nvidia-l4t-gpio"], "simulation": {
            "ok": True, "error": None, "kept_back": ["nvidia-l4t-gpio"],
            "changes": [{"package": "libcudnn9-cuda-12", "from": "12.6.0-1", "to": "12.8.0-1",
                         "action": "upgrade"}]}},
         {"nvidia-l4t-gpio": "blocked", "libcudnn9-cuda-12": "reinstall"}),
        ({**NO_CHANGE, "simulation": {"ok": False, "error": "Unable to correct problems, you "
                                      "have held broken packages.", "changes": [],
                                      "kept_back": []}},
         {"JetPack upgrade": "blocked"}),
        ({**NO_CHANGE, "simulation": {"skipped": "NVIDIA's Jetson apt repository is not "
                                      "configured"}},
         {"JetPack packages": "unknown"}),
        ({"error": "probe 'apt_upgrade' timed out after 240s"}, {"JetPack packages": "unknown"}),
    ],
    ids=["held-package", "apt-refuses", "not-configured", "probe-failed"],
)  # fmt: skip
def test_apt_verdicts(apt, expected):
    _, found = verdicts("R36.5.0", apt=apt)
    apt_parts = {name: verdict for name, (verdict, _) in found.items() if name in expected}
    assert apt_parts == expected
    if "nvidia-l4t-gpio" in expected:
        assert "sudo apt-mark unhold nvidia-l4t-gpio" in found["nvidia-l4t-gpio"][1]


def test_trtexec_output_names_the_engines_tensorrt():
    namespace: dict = {}
    exec(compile(source("engines"), "engines.py", "exec"), namespace)
    read = namespace["read_trtexec"]
    refused = ("[I] TensorRT version: 10.3.0\n[E] Error[6]: The engine plan file is not "
               "compatible with this version of TensorRT, expecting library version 10.3.0.30 "
               "got 10.16.2.1, please rebuild.\n")  # fmt: skip
    assert read(refused) == ("10.16.2.1", None)
    assert read("[I] TensorRT version: 10.3.0\n[I] Engine loaded in 0.1 sec.\n") == ("10.3.0", None)
    version, why = read("[I] TensorRT version: 10.3.0\n[E] Error[1]: out of memory\n")
    assert version is None and "out of memory" in why


def host(name, kind, python="3.10.12", venv=False, distribution="ubuntu/jammy"):
    return {
        "host": name,
        "kind": kind,
        "status": "survives",
        "distribution": distribution,
        "python": {"version": python, "executable": "/opt/my env/bin/python", "venv": venv},
    }


def test_commands_name_the_row_and_the_hosts_pythons_quoted():
    to = MATRIX.release("36.5.0")
    request = assembly.Request(to, (), "/srv/bundles/it's here", "fleet.yml", None)
    hosts = [
        host("orin-1", judgement.APT),
        host("orin 2", judgement.APT, "3.11.2", distribution="debian/bookworm"),
    ]
    found = assembly.commands(request, hosts)
    assert [shlex.split(c) for c in found["before"]] == [
        ["jetson-env", "bundle", "/srv/bundles/it's here", "--l4t", "R36.5.0",
         "--distribution", "ubuntu/jammy"],
        ["jetson-env", "bundle", "/srv/bundles/it's here", "--l4t", "R36.5.0", "--python-version",
         "3.11", "--distribution", "debian/bookworm"],
    ]  # fmt: skip
    assert [shlex.split(c) for c in found["after"]] == [
        ["jetson-env", "provision", "--bundle", "/srv/bundles/it's here", "-i", "fleet.yml",
         "--limit", "orin-1,orin 2"],
        ["jetson-env", "doctor", "-i", "fleet.yml", "--limit", "orin-1,orin 2"],
    ]  # fmt: skip


def test_a_reflash_bundles_the_rows_python_and_a_venv_is_named_to_provision():
    to = MATRIX.release("39.2.2")
    request = assembly.Request(to, (), "/b", None, None)
    found = assembly.commands(request, [host("local", judgement.REFLASH, venv=True)])
    assert found["before"] == ["jetson-env bundle /b --l4t R39.2.2"]
    assert found["after"] == [
        "jetson-env provision --bundle /b --python '/opt/my env/bin/python'",
        "jetson-env doctor --python '/opt/my env/bin/python'",
    ]


def results(platform, compiled=COMPILED, engines=ENGINES, apt=NO_CHANGE):
    data = {"platform": platform, "cuda": {"version": "12.6.68"}, "compiled": compiled,
            "engines": engines, "apt_upgrade": apt}  # fmt: skip
    return {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}


def test_the_fleet_plan_is_worst_first_and_its_page_is_a_host_by_part_grid(tmp_path):
    to = MATRIX.release("39.2.2")
    request = assembly.Request(to, ("/srv/models",), "/b", "fleet.yml", None)
    hosts = [
        assembly.host_plan(MATRIX, "orin-<1>", results(ORIN), request),
        assembly.host_plan(MATRIX, "x86-1", results(X86), request),
        assembly.host_plan(MATRIX, "gone", "cannot reach gone: timed out", request),
    ]
    plan = assembly.document(request, hosts)
    assert [(h["host"], h["status"]) for h in plan["hosts"]] == [
        ("gone", "unreachable"),
        ("x86-1", "refused"),
        ("orin-<1>", "rebuild"),
    ]
    assert plan["exit_code"] == 3
    assert plan["commands"]["after"][0] == (
        "jetson-env provision --bundle /b -i fleet.yml --limit 'orin-<1>'"
    )
    page = plan_page.render(plan, ".html")
    assert "orin-&lt;1&gt;" in page and "orin-<1>" not in page
    assert '<td class="rebuild" title=' in page
    markdown = plan_page.render(plan, ".md")
    assert "| orin\\-&lt;1&gt; |" in markdown


def test_the_plan_document_matches_its_schema():
    from support.schemas import plan_schema_validator

    to = MATRIX.release("36.5.0")
    request = assembly.Request(to, ("/srv/models",), "/b", None, None)
    plan = assembly.document(request, [assembly.host_plan(MATRIX, "local", results(ORIN),
                                                             request)])  # fmt: skip
    plan_schema_validator().validate(json.loads(json.dumps(plan)))


def test_cli_refuses_bad_input_before_any_probe(capsys):
    from jetson_env.cli import main

    assert main(["plan", "--to", "R36.5.0", "--limit", "x"]) == 2
    assert "--limit and --forks go with --inventory" in capsys.readouterr().err
    assert main(["plan", "--to", "R36.5.0", "--report", "plan.txt"]) == 2
    assert main(["plan", "--to", "R36.5.0", "-i", "/nonexistent/fleet.yml"]) == 2
    assert main(["plan", "--to", "R1.0.0"]) == 2


def test_the_engines_probe_gets_its_folders_as_data_and_reads_sidecars(tmp_path):
    """The folders travel as JSON data (a name with quotes and a newline is not code)."""
    import sys

    from jetson_env.probing import probe_all
    from jetson_env.targets import LocalTarget

    folder = tmp_path / "models \"'\n$(touch pwned)"
    (folder / "deep").mkdir(parents=True)
    (folder / "a.engine").write_bytes(b"\0" * 16)
    (folder / "a.engine.json").write_text(json.dumps({"tensorrt": "10.3.0.30"}))
    (folder / "deep" / "b.plan").write_bytes(b"\0" * 8)
    (folder / "notes.txt").write_text("not an engine")
    arguments = {"engines": {"folders": [str(folder), str(tmp_path / "gone")]}}
    result = probe_all(LocalTarget(sys.executable), ["engines"], 60, arguments=arguments)
    data = result["engines"].data
    assert result["engines"].error is None
    assert data["missing"] == [str(tmp_path / "gone")]
    by_path = {Path(e["path"]).name: e for e in data["engines"]}
    assert sorted(by_path) == ["a.engine", "b.plan"]
    assert by_path["a.engine"]["tensorrt"] == "10.3.0.30"
    assert by_path["a.engine"]["source"] == str(folder / "a.engine.json")
    assert by_path["b.plan"]["tensorrt"] is None
    assert "not a TensorRT plan" in by_path["b.plan"]["unknown"]
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_host_planned_over_ssh_is_provisioned_through_ansible_over_ssh():
    request = assembly.Request(MATRIX.release("36.5.0"), (), "/b", None, None,
                                "jetson@[fd00::7]:2222")  # fmt: skip
    found = assembly.commands(request, [host("jetson@[fd00::7]:2222", judgement.APT)])
    assert found["after"] == [
        "jetson-env provision --bundle /b -i fd00::7, -e "
        '\'{"ansible_user": "jetson", "ansible_port": 2222}\'',
        "jetson-env doctor --host 'jetson@[fd00::7]:2222'",
    ]


def test_the_plan_asks_the_doctors_rule_a_version_compatible_engine_survives_within_its_major():
    """JetPack 6.2 (TensorRT 10.3) -> R39.2.2 (10.16): a plain engine is rebuilt; one whose
    sidecar says it was built version-compatible loads on the later 10.x (engine_files)."""
    plain = {**ENGINES["engines"][1], "version_compatible": False}
    compatible = {**plain, "path": "/srv/models/vc.plan", "version_compatible": True}
    _, found = verdicts("R39.2.2", engines={**ENGINES, "engines": [plain, compatible]})
    assert found["/srv/models/resnet.plan"][0] == "rebuild"
    assert found["/srv/models/vc.plan"][0] == "survives"


def test_cuda_13_forward_compatibility_on_jetpack_6_is_named_and_not_offered():
    """A JetPack 6 Orin planned to JetPack 7.2 hears why the CUDA 13 compat package is no route
    of jetson-env's, with the sources; an x86 host and a Thor do not."""
    to = MATRIX.release("39.2.2")
    request = assembly.Request(to, (), "/b", None, None)
    orin = assembly.host_plan(MATRIX, "orin", results(ORIN), request)
    (route,) = orin["not_offered"]
    assert route["route"] == "CUDA 13 on JetPack 6 through NVIDIA's cuda-compat-orin-13-x package"
    assert "no release note names cuda-compat-orin-13-x" in route["reason"]
    assert "https://github.com/NVIDIA/nvidia-container-toolkit/pull/1614" in route["sources"]
    assert "https://github.com/pytorch/pytorch/pull/186285" in route["sources"]
    x86 = assembly.host_plan(MATRIX, "x86", results(X86), request)
    assert x86["not_offered"] == []
    thor = {**ORIN, "l4t": "38.2.0", "soc": "tegra264"}
    assert MATRIX.routes_not_offered(thor["l4t"], thor["soc"]) == []


def test_the_plan_page_of_a_fleet_fits_a_browser_window(tmp_path, monkeypatch):
    """The page of a plan with parts (an Orin to R39.2.2 beside a refused and an unreachable
    host) in headless Chromium at 390, 1280 and 1920 px: no horizontal scrolling, every
    part's column on screen (on a phone, in the grid's own scrolling box), no empty
    section, quoted commands shown as code; the bundle made in the plan's folder is named
    relative to it."""
    from support.browser import WIDTHS, grid_on_screen, show

    monkeypatch.chdir(tmp_path)  # where the plan is made
    to = MATRIX.release("39.2.2")
    request = assembly.Request(to, ("/srv/models",), str(tmp_path / "b"), "fleet.yml", None)
    hosts = [assembly.host_plan(MATRIX, name, found, request)
             for name, found in (("orin", results(ORIN)), ("x86-1", results(X86)),
                                 ("gone", "cannot reach gone: timed out"))]  # fmt: skip
    page = tmp_path / "plan-parts.html"
    page.write_text(plan_page.render(assembly.document(request, hosts), ".html"))
    for width in WIDTHS:
        shown = show(page, width, list(plan_page.COLOURS))
        assert shown.scroll_width <= shown.width == width
        assert [t["id"] for t in shown.tables].count("grid") == 1
        grid_on_screen(shown)
        assert shown.empty == [] and "`" not in shown.text
        assert len(shown.commands) == 3  # the bundle; provision and doctor after
        assert str(tmp_path) not in page.read_text()
