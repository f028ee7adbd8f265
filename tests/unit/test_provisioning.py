"""jetson_env.provisioning: the row and values the playbook's roles read, as a table."""

import pytest
from support.local_play import COLLECTION, run_on_localhost

from jetson_env import matrix
from jetson_env.matrix import UnknownRelease
from jetson_env.provisioning import (
    ALLOW_NEWER_POINT_RELEASE,
    onnx_export_packages,
    plan,
    torch_source,
    torchvision_tag_for,
)

M = matrix.load()
PY310 = {"version": "3.10.12", "tag": "cp310"}
PY36 = {"version": "3.6.9", "tag": "cp36"}


def orin(l4t: str = "36.4.3") -> dict:
    return {"is_jetson": True, "machine": "aarch64", "l4t": l4t, "soc": "tegra234", "unknown": {}}


def test_a_known_jetson_release_gets_its_row_merged_with_its_family():
    result = plan(M, orin(), PY310, "orin")

    assert result["error"] is None
    assert result["l4t"] == "36.4.3" and result["assumed_from"] is None
    assert result["row"]["jetpack"] == M.release("36.4.3").jetpack
    assert result["row"]["numpy"] == M.family("r36")["numpy"]  # from the family
    assert result["compute_capability"] == M.compute_capability("tegra234") == "8.7"
    assert result["platform_key"] == "aarch64-l4t36.4.3-cp310"
    assert result["pycuda"] == M.pycuda_for("3.10.12")


def test_jetpack4_python_gets_the_last_pycuda_for_3_6():
    nano = {"is_jetson": True, "machine": "aarch64", "l4t": "32.4.3", "soc": "tegra210"}
    assert plan(M, nano, PY36, "nano")["pycuda"] == M.raw["packages"]["pycuda"]["python36"]


def test_an_unseen_point_release_stops_unless_allowed_then_names_the_row_used():
    newest = M.newest_of_line("36.4.99")
    refused = plan(M, orin("36.4.99"), PY310, "orin")

    assert refused["error"].startswith("L4T R36.4.99 has no row of its own (orin).")
    assert f"newest row is R{newest.l4t}" in refused["error"]
    assert f"set {ALLOW_NEWER_POINT_RELEASE}=true" in refused["error"]
    assert refused["error"].endswith("Nothing was changed.")

    allowed = plan(M, orin("36.4.99"), PY310, "orin", allow_newer_point_release=True)
    assert allowed["error"] is None
    assert allowed["assumed_from"] == newest.l4t
    assert allowed["row"]["torchvision"] == newest.torchvision
    assert allowed["platform_key"] == "aarch64-l4t36.4.99-cp310"  # the host's own release


@pytest.mark.parametrize(
    ("platform", "message"),
    [
        (orin("99.1.0"), "L4T R99.1.0 is not supported; supported releases: R32.4.3"),
        (
            {"is_jetson": True, "machine": "aarch64", "l4t": None, "soc": "tegra234",
             "unknown": {"l4t": "/etc/nv_tegra_release: malformed"}},
            "h is a Jetson (tegra234) but its L4T release could not be read: "
            "/etc/nv_tegra_release: malformed.",
        ),
        (
            {"is_jetson": False, "machine": "aarch64", "l4t": None},
            "h is aarch64 but not a Jetson",
        ),
    ],
    ids=["unknown-line", "unreadable-release", "arm-but-not-jetson"],
)  # fmt: skip
def test_hosts_it_cannot_provision_get_a_reason_and_nothing_changes(platform, message):
    error = plan(M, platform, PY310, "h", allow_newer_point_release=True)["error"]
    assert message in error
    assert error.endswith("Nothing was changed.")


def test_x86_gets_the_x86_profile_and_its_gpus_compute_capability():
    x86 = {"is_jetson": False, "machine": "x86_64", "l4t": None,
           "gpus": [{"name": "H100", "compute_capability": "9.0"}]}  # fmt: skip
    result = plan(M, x86, {"version": "3.11.2", "tag": "cp311"}, "x")

    assert result["error"] is None and result["family"] == "x86"
    assert result["row"]["torch"]["version"] == M.x86.torch.version
    assert result["compute_capability"] == "9.0"
    assert result["platform_key"] == "x86_64-x86-cp311"


def test_torchvision_tag_pairs_with_the_torch_installed():
    assert torchvision_tag_for(M, "2.5.0a0+872d972e41.nv24.08") == "0.20.0"
    assert torchvision_tag_for(M, "1.13.1") == "0.14.1"  # its Requires-Dist: torch==1.13.1
    with pytest.raises(UnknownRelease, match=r"torch 0\.4\.1 has no torchvision pair"):
        torchvision_tag_for(M, "0.4.1")


def test_a_release_left_out_on_purpose_is_refused_even_when_point_releases_are_allowed():
    error = plan(M, orin("35.3.0"), PY310, "h", allow_newer_point_release=True)["error"]
    assert error.startswith("L4T R35.3.0 is not supported (JetPack 5.1.1 PRE: a pre-release")


def test_jetpack_7_2_serves_orin_and_thor_from_one_row():
    thor = {**orin("39.2.0"), "soc": "tegra264"}
    for platform, capability in ((orin("39.2.0"), "8.7"), (thor, "11.0")):
        result = plan(M, platform, {"version": "3.12.3", "tag": "cp312"}, "h")
        assert result["error"] is None and result["family"] == "r39"
        assert result["compute_capability"] == capability
        assert capability in result["row"]["torch_cuda_arch_list"].split(";")


NVIDIA_WHEEL = M.release("36.4.3").torch
R38_INDEX = M.release("38.2.0").torch


def matrix_torch(source) -> dict:
    return {"version": source.version, "url": source.url, "index": source.index,
            "filename": source.filename, "sha256": source.sha256 or "ab" * 32}  # fmt: skip


@pytest.mark.parametrize(
    ("source", "overrides", "expected"),
    [
        (NVIDIA_WHEEL, {}, {"kind": "url", "url": NVIDIA_WHEEL.url,
                            "filename": NVIDIA_WHEEL.filename, "index": "",
                            "version": "2.5.0", "overridden": False, "matrix_sha256": "ab" * 32}),
        (R38_INDEX, {}, {"kind": "index", "url": "", "filename": "", "index": R38_INDEX.index,
                         "version": "2.9.0", "overridden": False, "matrix_sha256": "ab" * 32}),
        (NVIDIA_WHEEL, {"wheel_file": "/w/torch.whl", "wheel_url": "https://x/t%2B1.whl"},
         {"kind": "file", "url": "", "filename": "", "index": "", "version": "2.5.0",
          "overridden": True, "matrix_sha256": ""}),
        (R38_INDEX, {"wheel_url": "https://x/torch-2.9.0%2Bcu130-cp312.whl"},
         {"kind": "url", "url": "https://x/torch-2.9.0%2Bcu130-cp312.whl",
          "filename": "torch-2.9.0+cu130-cp312.whl", "index": "", "version": "2.9.0",
          "overridden": True, "matrix_sha256": ""}),
        (NVIDIA_WHEEL, {"pip_index": "https://pypi.jetson/jp6/cu126", "version": "2.5.1"},
         {"kind": "index", "url": "", "filename": "", "index": "https://pypi.jetson/jp6/cu126",
          "version": "2.5.1", "overridden": True, "matrix_sha256": ""}),
        (R38_INDEX, {"version": "2.9.1"},
         {"kind": "index", "url": "", "filename": "", "index": R38_INDEX.index,
          "version": "2.9.1", "overridden": True, "matrix_sha256": ""}),
    ],
    ids=["matrix-url", "matrix-index", "file-first", "url-over-index", "index-over-url",
         "version-only"],
)  # fmt: skip
def test_the_torch_source_rule(source, overrides, expected):
    assert torch_source(matrix_torch(source), **overrides) == expected


ROLE = COLLECTION / "roles" / "torch"
RENDERED = ("{{ {'kind': _torch_kind, 'url': _torch_url, 'filename': _torch_url_filename,"
            " 'index': _torch_index, 'version': _torch_requested_version,"
            " 'matrix_sha256': _torch_matrix_sha256} }}")  # fmt: skip


@pytest.mark.parametrize(
    ("source", "overrides"),
    [(NVIDIA_WHEEL, {}),
     (NVIDIA_WHEEL, {"torch_pip_index": "https://i/simple", "torch_version": "2.5.1"})],
    ids=["matrix-url", "index-override"],
)  # fmt: skip
def test_the_torch_role_reads_the_python_rule(tmp_path, source, overrides):
    """The role's variables, rendered by the ansible-core in this venv, are torch_source's."""
    play = {"vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
            "tasks": [{"ansible.builtin.debug": {"msg": RENDERED}}]}  # fmt: skip
    extra = {"jetson_facts_row": {"torch": matrix_torch(source)}, **overrides}
    rendered = run_on_localhost(tmp_path, play, extra)[0]["msg"]
    expected = torch_source(
        matrix_torch(source),
        wheel_url=overrides.get("torch_wheel_url", ""),
        pip_index=overrides.get("torch_pip_index", ""),
        version=overrides.get("torch_version", ""),
    )
    del expected["overridden"]
    assert rendered == expected


@pytest.mark.parametrize(
    ("row", "tensorrt", "expected"),
    [
        ("36.4.3", "10.3.0", ["onnx"]),  # torch 2.5: torch.onnx.export needs onnx
        ("36.4.3", "11.4.1", ["onnx"]),  # TensorRT 11: no torch2trt, the ONNX path still
        ("32.7.1", "8.2.1", []),  # torch 1.x exports on its own
        ("36.4.3", "", []),  # no TensorRT: no ONNX converter to feed
        ("36.4.3", "12.0.0", []),  # a major the matrix does not know
        ("x86", "10.16.1.11", ["onnx"]),
    ],
)
def test_onnx_export_packages_go_where_the_tensorrt_offers_the_onnx_converter(
    row, tensorrt, expected
):
    """The tensorrt role's onnx set (its filter) and a bundle's share this rule."""
    fields = M.raw["x86"] if row == "x86" else M.raw["families"][M.release(row).family]
    assert onnx_export_packages(M, fields, tensorrt) == expected
