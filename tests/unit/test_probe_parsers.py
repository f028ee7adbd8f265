"""Probe parsers against captured real outputs (tests/fixtures/probes)."""

from pathlib import Path

import pytest

from jetson_env.probes import cuda, platform

DATA = Path(__file__).parents[1] / "fixtures" / "probes"

RELEASES = {
    "r32.4.3-nano.txt": ("32.4.3", "t210ref"),
    "r32.7.1-xavier.txt": ("32.7.1", "t186ref"),
    "r35.4.1-xavier.txt": ("35.4.1", "t186ref"),
    "r36.3.0-orin.txt": ("36.3.0", "generic"),
    "r36.4.3-orin.txt": ("36.4.3", "generic"),
}


def test_every_release_file_has_an_expectation():
    files = {p.name for p in (DATA / "nv_tegra_release").glob("r*.txt")}
    assert files == set(RELEASES)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_nv_tegra_release(name):
    parsed = platform.parse_nv_tegra_release((DATA / "nv_tegra_release" / name).read_text())
    assert (parsed["l4t"], parsed["board"]) == RELEASES[name]


def test_r36_extra_lines_are_kept():
    text = (DATA / "nv_tegra_release" / "r36.4.3-orin.txt").read_text()
    fields = platform.parse_nv_tegra_release(text)["fields"]
    assert fields["KERNEL_VARIANT"] == "oot"
    assert fields["TARGET_USERSPACE_LIB_DIR_PATH"] == "usr/lib/aarch64-linux-gnu/nvidia"
    assert fields["GCID"] == "38968081"


@pytest.mark.parametrize(
    "name, reason",
    [
        ("malformed-empty.txt", "empty"),
        ("malformed-no-revision.txt", "first line"),
        ("malformed-free-text.txt", "first line"),
    ],
)
def test_malformed_nv_tegra_release_says_why(name, reason):
    with pytest.raises(ValueError, match=reason):
        platform.parse_nv_tegra_release((DATA / "nv_tegra_release" / name).read_text())


def test_binary_nv_tegra_release_is_a_value_error():
    """Decoded as tolerantly as a reader can, the bytes are still no release line."""
    text = (
        (DATA / "nv_tegra_release" / "malformed-binary.txt").read_bytes().decode("utf-8", "replace")
    )
    with pytest.raises(ValueError, match="first line"):
        platform.parse_nv_tegra_release(text)


def test_binary_nv_tegra_release_is_reported_as_malformed(monkeypatch):
    """What the probe reads from disk: a file that is not text is malformed, not a crash."""
    binary = DATA / "nv_tegra_release" / "malformed-binary.txt"
    monkeypatch.setattr(platform, "NV_TEGRA_RELEASE", str(binary))
    monkeypatch.setenv("PATH", "")  # no dpkg-query: the file is the only source
    unknown = {}
    assert platform.detect_l4t(unknown) == (None, None, None)
    assert unknown["l4t"].startswith(f"{binary} is malformed: ")


@pytest.mark.parametrize(
    "name, expected",
    [("nvidia-l4t-core-36.4.3.txt", "36.4.3"), ("nvidia-l4t-core-32.7.1-quoted.txt", "32.7.1")],
)
def test_dpkg_version(name, expected):
    assert platform.parse_dpkg_version((DATA / "dpkg" / name).read_text()) == expected


def test_dpkg_garbage_is_rejected():
    with pytest.raises(ValueError):
        platform.parse_dpkg_version("dpkg-query: no packages found matching nvidia-l4t-core")


@pytest.mark.parametrize(
    "raw, soc",
    [
        (
            b"nvidia,p3449-0000-b00+p3448-0000-b00\0nvidia,jetson-nano\0nvidia,tegra210\0",
            "tegra210",
        ),
        (b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0", "tegra234"),
        (b"raspberrypi,4-model-b\0brcm,bcm2711\0", None),
    ],
)
def test_soc_from_compatible(raw, soc):
    assert platform.soc_from_compatible(platform.parse_compatible(raw)) == soc


def test_os_release():
    text = (
        'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n'
        "VERSION_CODENAME=jammy\n"
    )
    assert platform.parse_os_release(text) == {
        "id": "ubuntu",
        "version_id": "22.04",
        "version_codename": "jammy",
        "pretty_name": "Ubuntu 22.04.4 LTS",
    }


def test_nvidia_smi_gpus():
    text = "NVIDIA H100 80GB HBM3, 9.0\nTesla T4, 7.5\n"
    assert platform.parse_nvidia_smi_gpus(text) == [
        {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"},
        {"name": "Tesla T4", "compute_capability": "7.5"},
    ]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("cuda-10.2.txt", "10.2.89"),
        ("cuda-11.4.txt", "11.4.315"),
        ("cuda-12.6.txt", "12.6.68"),
        ("cuda-13.0.txt", "13.0.88"),
    ],
)
def test_nvcc_version(name, expected):
    assert cuda.parse_nvcc_version((DATA / "nvcc" / name).read_text()) == expected


def test_cuda_version_files():
    assert cuda.parse_version_txt((DATA / "cuda_version" / "version-10.2.txt").read_text()) == (
        "10.2.89"
    )
    assert cuda.parse_version_json((DATA / "cuda_version" / "version-12.6.json").read_text()) == (
        "12.6.68"
    )
    with pytest.raises(ValueError):
        cuda.parse_version_json('{"cuda_nvcc": {"version": "12.6.68"}}')
    with pytest.raises(ValueError):
        cuda.parse_version_txt("CUDA 10")


def test_profile_scripts_setting_a_variable(tmp_path):
    (tmp_path / "jetson-env-cuda.sh").write_text(
        'export CPATH="/usr/local/cuda/include${CPATH:+:$CPATH}"\n'
    )
    (tmp_path / "other.sh").write_text("export MYCPATH=x\nexport PATH=/opt/bin:$PATH\n")
    found = cuda.profile_scripts_setting("CPATH", str(tmp_path))
    assert found == [str(tmp_path / "jetson-env-cuda.sh")]
    assert cuda.profile_scripts_setting("PATH", str(tmp_path)) == [str(tmp_path / "other.sh")]
    assert cuda.profile_scripts_setting("CPATH", str(tmp_path / "missing")) == []


def test_login_settings_compare_folders_by_their_real_paths(tmp_path: Path):
    """/etc/environment's PATH through the /usr/local/cuda link, a profile.d line for the
    libraries, and lines that do not count: a comment, another variable, another folder."""
    (tmp_path / "cuda-12.6" / "bin").mkdir(parents=True)
    (tmp_path / "cuda").symlink_to("cuda-12.6")
    environment, profile = tmp_path / "environment", tmp_path / "cuda.sh"
    environment.write_text(f'PATH="/usr/local/sbin:{tmp_path}/cuda/bin:/usr/bin"\n')
    profile.write_text(
        f"# export LD_LIBRARY_PATH={tmp_path}/cuda/lib64\n"
        f"export CPATH={tmp_path}/cuda/lib64\n"
        f"export LD_LIBRARY_PATH={tmp_path}/other/lib64\n"
        f'export LD_LIBRARY_PATH="{tmp_path}/cuda/targets/x86_64-linux/lib:$LD_LIBRARY_PATH"\n'
    )
    files = [str(environment), str(profile), str(tmp_path / "missing.sh")]

    found = cuda.login_settings(str(tmp_path / "cuda-12.6"), files)

    assert found == {"PATH": [str(environment)], "LD_LIBRARY_PATH": [str(profile)]}
    profile.write_text(profile.read_text().splitlines()[0] + "\n")
    assert cuda.login_settings(str(tmp_path / "cuda"), files)["LD_LIBRARY_PATH"] == []
