"""The version matrix: the shipped file is valid, and a broken one names the bad row."""

import copy
import json
import re

import pytest
import yaml

from jetson_env import matrix as matrix_mod
from jetson_env.bundle import targets
from jetson_env.matrix import MatrixError, UnknownRelease


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load(matrix_mod.default_path().read_text())


@pytest.fixture
def broken(raw):
    return copy.deepcopy(raw)


def test_shipped_matrix_is_valid_and_complete():
    m = matrix_mod.load()
    assert "32.4.3" in m.releases and "36.4.3" in m.releases and "38.2.0" in m.releases
    assert m.release("R35.4.1").jetpack == "5.1.2"
    assert m.release("r32.4.3").torchvision == "0.7.0"
    assert m.compute_capability("tegra234") == "8.7"
    assert m.torchvision_for("2.11.0+cu130") == "0.26"
    assert m.torchvision_for("1.6.0") == "0.7"
    assert m.torchvision_for("not-a-version") is None


def test_every_release_from_jetpack_4_4_to_6_2_is_listed():
    listed = set(matrix_mod.load().releases)
    expected = {
        "32.4.3", "32.4.4", "32.5.0", "32.5.1", "32.6.1",
        *(f"32.7.{n}" for n in range(1, 7)),
        "35.1.0", "35.2.1", "35.3.1", "35.4.1", "35.5.0", "35.6.0",
        "36.2.0", "36.3.0", "36.4.0", "36.4.3", "36.4.4",
    }  # fmt: skip
    assert expected <= listed


def test_every_release_cites_https_sources():
    m = matrix_mod.load()
    for release in [*m.releases.values(), m.x86]:
        assert release.sources
        assert all(m.source_url(s).startswith("https://") for s in release.sources)


def test_unknown_release_names_the_supported_ones():
    with pytest.raises(UnknownRelease) as err:
        matrix_mod.load().release("31.1.0")
    assert "R31.1.0 is not supported" in str(err.value)
    assert "R32.4.3" in str(err.value) and "R36.4.3" in str(err.value)


def test_a_release_left_out_on_purpose_says_why():
    m = matrix_mod.load()
    assert "36.0.0" not in m.releases
    with pytest.raises(UnknownRelease) as err:
        m.release("R36.0.0")
    assert f"R36.0.0 is not supported ({m.unsupported['36.0.0']})" in str(err.value)
    assert "early access" in str(err.value) and "R36.3.0" in str(err.value)


def test_unsupported_release_needs_a_reason_and_a_source(broken):
    broken["unsupported"]["36.0.0"] = {"source": ["jetson-stats"]}
    expect_error(broken, "unsupported.36.0.0: missing 'reason'")
    broken["unsupported"]["36.0.0"] = {"reason": "early access"}
    expect_error(broken, "unsupported.36.0.0: missing 'source'")


def test_unsupported_release_cannot_also_be_a_row(broken):
    broken["unsupported"]["36.4.3"] = {"reason": "x", "source": ["jetson-stats"]}
    expect_error(broken, "unsupported R36.4.3", "is also a release of the matrix")


def test_unsupported_release_is_an_l4t_version(broken):
    broken["unsupported"]["R36"] = {"reason": "x", "source": ["jetson-stats"]}
    expect_error(broken, "unsupported: key 'R36' must be an L4T release like '32.4.3'")


def test_anchored_rows_inherit_and_override(raw):
    m = matrix_mod.validate(raw)
    assert m.release("32.7.6").jetpack == "4.6.6"
    assert m.release("32.7.6").tensorrt == "8.2.1"
    assert m.release("32.7.6").sources == ("jetson-containers", "pytorch-for-jetson")


def expect_error(raw, *fragments):
    with pytest.raises(MatrixError) as err:
        matrix_mod.validate(raw)
    for fragment in fragments:
        assert fragment in str(err.value)


def test_torch_without_a_torchvision_pair(broken):
    broken["releases"]["32.4.3"]["torch"]["version"] = "3.7.0"
    expect_error(broken, "release R32.4.3", "torch 3.7.0 has no torchvision pair")


def test_torchvision_that_does_not_pair(broken):
    broken["releases"]["35.4.1"]["torchvision"] = "0.16.1"
    expect_error(broken, "release R35.4.1", "torchvision 0.16.1 does not pair with torch 2.0.0")


def test_a_row_pairs_by_its_torchvisions_requires_dist(broken):
    """x86's torch 2.14.1 with torchvision 0.29.0, whose wheel requires torch==2.14.0."""
    broken["x86"]["torchvision"] = "0.29.0"
    expect_error(
        broken,
        "x86",
        "torchvision 0.29.0 does not pair with torch 2.14.1",
        "0.29.x from 0.29.1: torchvision 0.29.1's Requires-Dist: torch>=2.14.0",
    )


@pytest.mark.parametrize("entry", [{"0.29.3": "torch>=two"}, {"x": "torch>=2.14"},
                                   {"0.29.3": "numpy>=2"}])  # fmt: skip
def test_requires_dist_entries_are_a_release_and_a_torch_requirement(broken, entry):
    broken["torchvision_pairs"]["requires_dist"].update(entry)
    expect_error(broken, "torchvision_pairs.requires_dist")


def test_torchvision_archive_pins_are_sha256(broken):
    assert len(broken["torchvision_archives"]["sha256"]["0.14.1"]) == 64
    broken["torchvision_archives"]["sha256"]["0.21.0"] = "abc"
    expect_error(broken, "torchvision_archives.sha256.0.21.0: must be a sha256", "not 'abc'")


def test_row_without_source(broken):
    del broken["releases"]["32.6.1"]["source"]
    expect_error(broken, "releases.32.6.1: missing 'source'")


def test_row_citing_an_unknown_source(broken):
    broken["socs"]["tegra194"]["source"] = ["a-blog"]
    expect_error(broken, "socs.tegra194.source: cites unknown source 'a-blog'")


def test_missing_field(broken):
    del broken["releases"]["36.2.0"]["cuda"]
    expect_error(broken, "releases.36.2.0: missing 'cuda'")


def test_plain_http_download(broken):
    broken["releases"]["32.4.3"]["torch"]["url"] = "http://example.org/torch.whl"
    expect_error(broken, "releases.32.4.3.torch.url: must be an https URL")


def test_bad_sha256(broken):
    broken["releases"]["32.4.3"]["torch"]["sha256"] = "abc"
    expect_error(broken, "releases.32.4.3.torch.sha256: must be a sha256 (64 lowercase hex")


def test_unknown_family(broken):
    broken["releases"]["35.6.0"]["family"] = "r99"
    expect_error(broken, "release R35.6.0", "unknown family 'r99'")


def test_bad_compute_capability(broken):
    broken["socs"]["tegra210"]["compute_capability"] = "sm_53"
    expect_error(broken, "socs.tegra210.compute_capability: must be", "like '8.7'")


def test_family_missing_field(broken):
    del broken["families"]["r35"]["numpy"]
    expect_error(broken, "families.r35: missing 'numpy'")


def test_x86_profile_is_checked_too(broken):
    broken["x86"]["torchvision"] = "0.1.0"
    expect_error(broken, "x86", "does not pair")


def test_unreadable_file_names_the_path(tmp_path):
    bad = tmp_path / "matrix.yml"
    bad.write_text("releases: [unclosed\n")
    with pytest.raises(MatrixError, match=str(bad)):
        matrix_mod.load.__wrapped__(bad)


def test_every_release_has_exactly_one_image():
    m = matrix_mod.load()
    for l4t in m.releases:
        assert len([i for i in m.images if i.runs_on(l4t)]) == 1, l4t


def test_image_for_a_release_not_in_the_matrix(broken):
    broken["images"]["jetson"].append(
        {"l4t": "34.1.0", "base": "x", "hosts": "==34.1.0", "cuda_from": "host"}
    )
    expect_error(broken, "image r34.1.0", "not a release of the matrix")


def test_images_that_overlap(broken):
    broken["images"]["jetson"][5]["hosts"] = ">=35,<37"
    expect_error(broken, "images r35.4.1 and r36.3.0 both claim R36.2.0")


def test_image_hosts_must_be_a_specifier_including_itself(broken):
    broken["images"]["jetson"][0]["hosts"] = "32.4.3"
    expect_error(broken, "images.jetson[0].hosts: must be a version specifier", "not '32.4.3'")
    broken["images"]["jetson"][0]["hosts"] = "==32.4.4"
    expect_error(broken, "image r32.4.3", "must include its own L4T")


def test_source_built_packages_are_pinned_in_the_matrix(broken):
    m = matrix_mod.load()
    assert m.pycuda_for("3.6.9") == "2022.1"
    assert m.pycuda_for("3.10.12") == m.raw["packages"]["pycuda"]["version"]
    assert m.torch2trt["git"].startswith("https://") and len(m.torch2trt["ref"]) == 40
    broken["packages"]["torch2trt"]["git"] = "http://github.com/NVIDIA-AI-IOT/torch2trt.git"
    expect_error(broken, "packages.torch2trt", "https URL")


def test_jetpack_packages_carry_the_rows_cuda(broken):
    m = matrix_mod.load()
    assert m.release("36.4.3").jetpack_packages == {
        "build": ("cuda-toolkit-12-6", "libcudnn9-dev-cuda-12"),
        "runtime": ("cuda-libraries-12-6", "libcudnn9-cuda-12"),
    }
    for release in m.releases.values():
        assert f"cuda-toolkit-{release.cuda.replace('.', '-')}" in release.jetpack_packages["build"]
    broken["releases"]["36.3.0"]["jetpack_packages"] = {
        "build": ["cuda-toolkit-12-6", "libcudnn8-dev"],
        "runtime": ["cuda-libraries-12-2"],
    }
    expect_error(broken, "release R36.3.0", "must install cuda-toolkit-12-2")


def test_jetpack_packages_need_both_sets(broken):
    broken["releases"]["35.1.0"]["jetpack_packages"] = {"build": ["cuda-toolkit-11-4"]}
    expect_error(broken, "releases.35.1.0.jetpack_packages: missing 'runtime'")


def test_jetson_apt_key_is_pinned(broken):
    broken["jetpack_apt"]["key_sha256"] = "abc"
    expect_error(broken, "jetpack_apt.key_sha256: must be a sha256")


def test_jetson_apt_repository_is_https(broken):
    broken["jetpack_apt"]["url"] = "http://repo.download.nvidia.com/jetson/common"
    expect_error(broken, "jetpack_apt.url: must be an https URL")


def test_image_cuda_source_is_one_of_the_known(broken):
    assert {image.cuda_from for image in matrix_mod.load().images} == {"host", "base", "apt"}
    broken["images"]["jetson"][0]["cuda_from"] = "magic"
    expect_error(broken, "images.jetson[0].cuda_from: must be one of host, base, apt, not 'magic'")


def test_cusparselt_is_where_nvidias_24_06_and_later_wheels_need_it():
    m = matrix_mod.load()
    for release in m.releases.values():
        nv_build = release.torch.filename or ""
        needs = ".nv24." in nv_build and nv_build.split(".nv24.")[1][:2] >= "06"
        assert (release.cusparselt is not None) == needs, release.l4t
    cusparselt = m.release("36.4.3").cusparselt
    assert cusparselt.url.endswith(f"libcusparse_lt-linux-sbsa-{cusparselt.version}-archive.tar.xz")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"version": "0.5", "url": "http://x/a.tar.xz", "sha256": None}, ".url: must be an https"),
        ({"url": "https://x/a.tar.xz", "sha256": None}, ": missing 'version'"),
        ({"version": "0.5.2.1", "url": "https://x/a.tar.xz", "sha256": "abc"}, ".sha256: must be"),
    ],
    ids=["http", "no-version", "bad-sha256"],
)
def test_cusparselt_entry_is_checked(broken, entry, message):
    broken["releases"]["36.4.0"]["cusparselt"] = entry
    with pytest.raises(MatrixError, match=r"releases\.36\.4\.0\.cusparselt") as error:
        matrix_mod.validate(broken)
    assert message in str(error.value)


def test_every_torch_names_its_cuda_and_matches_its_releases_major():
    m = matrix_mod.load()
    for release in m.releases.values():
        assert release.torch.cuda.split(".")[0] == release.cuda.split(".")[0], release.l4t
    assert m.release("39.2.0").cuda == "13.2" and m.release("39.2.0").torch.cuda == "13.0"


def test_a_torch_of_another_cuda_major_than_its_release(broken):
    broken["releases"]["36.2.0"]["torch"]["cuda"] = "11.4"
    expect_error(broken, "release R36.2.0", "built for CUDA 11.4", "ships CUDA 12.2")


def test_a_torch_without_its_cuda(broken):
    del broken["x86"]["torch"]["cuda"]
    expect_error(broken, "x86.torch: missing 'cuda'")


def test_an_image_whose_base_cuda_major_differs_from_its_torchs(broken):
    """The x86 image as it was: tensorrt:25.01 (CUDA 12.8) under a CUDA 13.0 torch."""
    broken["images"]["x86"]["base"] = "nvcr.io/nvidia/tensorrt:25.01-py3"
    broken["images"]["x86"]["cuda"] = "12.8"
    expect_error(broken, "image x86_64: its CUDA 12.8 and torch", "CUDA 13.0 differ")


def test_the_x86_image_names_its_base_cuda_and_source(broken):
    del broken["images"]["x86"]["cuda"]
    expect_error(broken, "images.x86: missing 'cuda'")
    broken["images"]["x86"]["cuda"] = "13.0"
    del broken["images"]["x86"]["source"]
    expect_error(broken, "images.x86: missing 'source'")


def test_a_familys_arch_list_is_its_socs_capabilities(broken):
    assert matrix_mod.load().family("r39")["torch_cuda_arch_list"] == "8.7;11.0"
    broken["families"]["r39"]["torch_cuda_arch_list"] = "8.7"
    expect_error(broken, "family r39", "must be its SoCs' compute capabilities '8.7;11.0'")
    broken["families"]["r39"]["socs"] = ["tegra999"]
    expect_error(broken, "family r39", "['tegra999'] are not SoCs of the matrix")


@pytest.mark.parametrize(
    ("l4t", "row", "assumed"),
    [
        ("R36.4.3", "36.4.3", False),  # its own row
        ("36.4.99", "36.4.7", True),  # a point release: the line's newest row
        ("35.6.9", "35.6.5", True),
        ("39.2.7", "39.2.2", True),
        ("38.4.1", "38.4.0", True),
    ],
)
def test_the_row_rule(l4t, row, assumed):
    resolution = matrix_mod.load().resolve(l4t)
    assert (resolution.release.l4t, resolution.assumed) == (row, assumed)
    assert resolution.assumed_from == (row if assumed else None)


@pytest.mark.parametrize(
    ("l4t", "message"),
    [
        ("35.3.0", r"R35\.3\.0 is not supported \(JetPack 5\.1\.1 PRE: a pre-release"),
        ("39.0.0", r"R39\.0\.0 is not supported \(JetPack 7\.2 EA: early access"),
        ("38.1.0", r"R38\.1\.0 is not supported \(JetPack 7\.0 EA: not a production release"),
        ("36.1.0", r"R36\.1\.0 is not supported; supported releases: R32\.4\.3"),
        ("32.3.1", r"R32\.3\.1 is not supported \(JetPack 4\.3: older than JetPack 4\.4"),
    ],
)
def test_the_row_rule_never_assumes_a_row_for_a_release_left_out_or_an_unknown_line(l4t, message):
    with pytest.raises(UnknownRelease, match=message):
        matrix_mod.load().resolve(l4t)


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ({"is_jetson": True, "soc": "tegra264"}, ("11.0", None)),
        ({"is_jetson": True, "soc": "tegra999"}, (None, "SoC 'tegra999' is not in the matrix")),
        ({"is_jetson": True, "soc": None, "unknown": {"soc": "no compatible"}},
         (None, "no compatible")),
        ({"is_jetson": False, "gpus": [{"name": "H100", "compute_capability": "9.0"}]},
         ("9.0", None)),
        ({"is_jetson": False, "gpus": [], "unknown": {"gpus": "nvidia-smi missing"}},
         (None, "nvidia-smi missing")),
    ],
    ids=["thor", "unknown-soc", "no-soc", "x86-gpu", "x86-no-gpu"],
)  # fmt: skip
def test_compute_capability_is_derived_in_one_place(platform, expected):
    assert matrix_mod.load().device_capability(platform) == expected


def test_x86_tensorrt_is_pip_pinned_below_what_the_default_converter_cannot_use():
    m = matrix_mod.load()
    pinned = m.x86_tensorrt
    assert pinned.requirement == "tensorrt-cu13==10.16.1.11"
    assert "11.4.0.106" not in pinned.supported and "10.13.3.9" in pinned.supported
    assert m.converters.default == "torch2trt"
    assert m.converters.supports("torch2trt", pinned.version)
    assert not m.converters.supports("torch2trt", "11.4.0.106")
    assert m.converters.for_tensorrt("11.4.0.106") == ("onnx", "torch_tensorrt")
    for release in m.releases.values():
        assert m.converters.supports("torch2trt", release.tensorrt), release.l4t


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda r: r["x86"]["tensorrt"]["pins"][0].update(supported=">=10.13.2,<12"),
         ("x86.tensorrt", "admits TensorRT 11", "torch2trt")),
        (lambda r: r["x86"]["tensorrt"]["pins"][0].update(version="11.4.0.106"),
         ("x86.tensorrt", "11.4.0.106 is not inside")),
        (lambda r: r["x86"]["tensorrt"]["pins"][0].update(python=">=3.8"),
         ("x86.tensorrt", "10.16.1.11 is pinned for Python >=3.8", "no wheel for 3.14")),
        (lambda r: r["converters"]["torch_tensorrt"]["2.14.0"].pop("torch"),
         ("converters.torch_tensorrt.2.14.0: missing 'torch'",)),
        (lambda r: r["jetson_tensorrt"]["alternatives"][0].update(socs=["tegra999"]),
         ("jetson_tensorrt", "tegra999")),
        (lambda r: r["x86"]["tensorrt"].update(package="tensorrt-cu12"),
         ("x86.tensorrt", "must be tensorrt-cu13")),
        (lambda r: r["x86"]["tensorrt"].pop("source"), ("x86.tensorrt: missing 'source'",)),
        (lambda r: r["x86"].pop("tensorrt"), ("x86: missing 'tensorrt'",)),
        (lambda r: r["converters"]["by_tensorrt_major"].pop("8"),
         ("release R32.6.1", "TensorRT 8.0.1's major has no entry")),
        (lambda r: r["converters"]["by_tensorrt_major"]["11"].append("tf2trt"),
         ("converters.by_tensorrt_major.11", "tf2trt")),
        (lambda r: r["converters"].update(default="tf2trt"), ("converters.default 'tf2trt'",)),
        (lambda r: r["converters"].pop("source"), ("converters: missing 'source'",)),
    ],
    ids=["range-admits-11", "pin-outside-range", "pin-without-bindings-wheel",
         "torch-tensorrt-without-torch", "jetson-tensorrt-unknown-soc", "wrong-cuda-package",
         "x86-no-source",
         "x86-no-tensorrt", "row-major-unknown", "unknown-converter", "unknown-default",
         "converters-no-source"],
)  # fmt: skip
def test_tensorrt_and_converter_facts_are_validated(broken, change, words):
    change(broken)
    expect_error(broken, *words)


def test_the_r39_rows_orin_kernels_cite_the_tegra_exception_not_the_generic_page():
    """Orin runs the SBSA torch's sm_80 kernels on R39 because JetPack 7.2's CUDA is SBSA CUDA
    (pytorch/pytorch #186285), not by CUDA's binary compatibility, which excludes Tegra
    (jax-ml/jax #40492)."""
    m = matrix_mod.load()
    for l4t in ("39.2.0", "39.2.1", "39.2.2"):
        cited = {m.source_url(name) for name in m.release(l4t).sources}
        assert "https://github.com/pytorch/pytorch/pull/186285" in cited
        assert "https://github.com/jax-ml/jax/pull/40492" in cited
        assert not any("binary-compatibility" in url for url in cited)


def test_a_release_on_an_ubuntu_the_matrix_does_not_describe(broken):
    """Its apt suite and glibc (a bundle's distribution and manylinux tags) would be unknown."""
    broken["releases"]["36.4.3"]["ubuntu"] = "30.04"
    expect_error(broken, "release R36.4.3", "Ubuntu 30.04 has no entry in ubuntu")


@pytest.mark.parametrize(
    "entry, message",
    [({"codename": "Resolute Raccoon", "glibc": "2.43", "source": ["jetpack-7"]},
      ".codename: must be an apt suite like 'jammy', not 'Resolute Raccoon'"),
     ({"codename": "resolute", "glibc": "2.43.1", "source": ["jetpack-7"]},
      ".glibc: must be a glibc like '2.35', not '2.43.1'"),
     ({"codename": "resolute", "glibc": "2.43"}, ": missing 'source'")],
    ids=["codename", "glibc", "source"],
)  # fmt: skip
def test_an_ubuntu_entry_is_checked(broken, entry, message):
    broken["ubuntu"]["26.04"] = entry
    expect_error(broken, "ubuntu.26.04" + message)


def test_a_jetson_target_takes_its_ubuntus_suite_and_glibc_from_the_matrix(broken):
    """A row on Ubuntu 26.04 (none is yet): a bundle for it gets resolute's apt suite and glibc
    2.43 (its pip's manylinux tags), not no suite and glibc 2.17."""
    broken["releases"]["39.2.2"]["ubuntu"] = "26.04"
    m = matrix_mod.validate(broken)
    (target,) = targets.targets_from_args(m, ["39.2.2"], False, None, None)
    assert (target.distribution, target.glibc) == ("ubuntu/resolute", "2.43")
    (jammy,) = targets.targets_from_args(m, ["36.4.3"], False, None, None)
    assert (jammy.distribution, jammy.glibc) == ("ubuntu/jammy", "2.35")


def test_the_shipped_matrix_has_its_schemas_shape():
    """matrix.schema.json is a Draft 7 schema and the shipped matrix is of its shape, read by
    another implementation (jsonschema) than the one jetson-env uses (fastjsonschema)."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(matrix_mod.SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load(matrix_mod.default_path().read_text()), schema)
    matrix_mod.check_shape(yaml.safe_load(matrix_mod.default_path().read_text()))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r["releases"]["32.4.3"]["torch"].update(sha256=12345),
         "releases.32.4.3.torch.sha256: must be a sha256 (64 lowercase hex digits) or null"
         " (recorded on first download), not 12345"),
        (lambda r: r["images"]["jetson"].__setitem__(0, "r32.4.3"),
         "images.jetson[0]: must be object"),
        (lambda r: r["x86"]["tensorrt"]["pins"][1].update(version=11.1),
         "x86.tensorrt.pins[1].version: must be a version like '12.6'"),
        (lambda r: r["converters"]["torch_tensorrt"]["2.8.0"].update(jetson="yes"),
         "converters.torch_tensorrt.2.8.0.jetson: must be object"),
        (lambda r: r["families"]["r36"].update(socs="tegra234"),
         "families.r36.socs: must be array"),
    ],
    ids=["sha256-a-number", "image-a-string", "pin-a-float", "jetson-a-string", "socs-a-string"],
)  # fmt: skip
def test_a_wrong_type_at_a_nested_key_is_named_by_its_path(broken, change, message, tmp_path):
    """Checked with the schema (validate) and without (load's fast path, where the rules trip
    over it or not): either way a MatrixError whose path names the key, never a traceback."""
    change(broken)
    expect_error(broken, f"matrix: {message}")
    path = tmp_path / "matrix.yml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(MatrixError, match=re.escape(f"{path}: {message}")):
        matrix_mod.load.__wrapped__(path, shape=True)


def test_loads_fast_path_names_by_path_what_the_rules_trip_over(broken, tmp_path):
    """The doctor loads without compiling the schema; a shape its rules cannot read is still
    named by the schema's path."""
    broken["images"]["jetson"][0] = "r32.4.3"
    path = tmp_path / "matrix.yml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(MatrixError, match=re.escape(f"{path}: images.jetson[0]: must be object")):
        matrix_mod.load.__wrapped__(path)


def test_a_torch_with_a_url_and_an_index(broken):
    broken["releases"]["32.4.3"]["torch"]["index"] = "https://download.pytorch.org/whl/cu130"
    expect_error(broken, "releases.32.4.3.torch: must be a wheel url with its filename and no"
                 " index (keep one of url and index)")  # fmt: skip
