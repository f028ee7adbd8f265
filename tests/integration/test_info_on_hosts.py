"""`jetson-env info --json` inside the test hosts, each with its own Python and staged files."""

import json
from collections.abc import Iterator

import pytest
from support.hosts import FIXTURES, JETSON_HOSTS, VENV, Host

pytestmark = pytest.mark.hosts

EXPECTED_JETSONS = {
    "nano-r32.4.3": {
        "l4t": "32.4.3",
        "jetpack": "4.4",
        "model": "NVIDIA Jetson Nano Developer Kit",
        "soc": "tegra210",
        "compute_capability": "5.3",
        "cuda": "10.2",
    },
    "xavier-r35.4.1": {
        "l4t": "35.4.1",
        "jetpack": "5.1.2",
        "model": "Jetson-AGX",
        "soc": "tegra194",
        "compute_capability": "7.2",
        "cuda": "11.4",
    },
    "orin-r36.4.3": {
        "l4t": "36.4.3",
        "jetpack": "6.2",
        "model": "NVIDIA Jetson AGX Orin Developer Kit",
        "soc": "tegra234",
        "compute_capability": "8.7",
        "cuda": "12.6",
    },
}
NV_TEGRA_RELEASE = "/etc/nv_tegra_release"


def run_info(host: Host) -> dict:
    """The platform facts as the installed command reports them; it must not crash."""
    host.install_project()
    result = host.exec([f"{VENV}/bin/jetson-env", "info", "--json"])
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["schema"] == 1
    return report["platform"]


@pytest.mark.parametrize("host", JETSON_HOSTS, indirect=True)
def test_info_reports_the_staged_jetson(host: Host) -> None:
    expected = EXPECTED_JETSONS[host.name]

    platform = run_info(host)

    assert platform["machine"] == "aarch64"
    assert platform["is_jetson"] is True
    assert platform["l4t"] == expected["l4t"]
    assert platform["jetpack"] == expected["jetpack"]
    assert platform["model"] == expected["model"]
    assert platform["soc"] == expected["soc"]
    assert platform["compute_capability"] == expected["compute_capability"]
    assert platform["cuda"]["version"].startswith(expected["cuda"])


def test_info_reports_x86_as_not_a_jetson(x86_host: Host) -> None:
    platform = run_info(x86_host)

    assert platform["machine"] == "x86_64"
    assert platform["is_jetson"] is False
    assert platform["l4t"] is None
    assert platform["jetpack"] is None


@pytest.fixture
def orin_with_truncated_release(orin_host: Host) -> Iterator[Host]:
    """The Orin host with a cut-off /etc/nv_tegra_release, restored afterwards."""
    orin_host.exec(["sh", "-c", f"printf '# R36 (release), REVISION' > {NV_TEGRA_RELEASE}"])
    yield orin_host
    orin_host.copy_in(FIXTURES / orin_host.name / NV_TEGRA_RELEASE.lstrip("/"), NV_TEGRA_RELEASE)


def test_info_explains_an_unreadable_release_file(orin_with_truncated_release: Host) -> None:
    platform = run_info(orin_with_truncated_release)

    assert platform["l4t"] is None
    # Both sources, each with why: the file's first line, and no nvidia-l4t-core package.
    assert platform["unknown"]["l4t"] == (
        f"{NV_TEGRA_RELEASE} is malformed: first line is not "
        "'# R<major> (release), REVISION: <x.y>, ...': '# R36 (release), REVISION'; "
        "dpkg-query exited 1: dpkg-query: no packages found matching nvidia-l4t-core"
    )


# L4T R39.2.1 (JetPack 7.2.1), which jetson-stats 7.2.1 does not know (rbonghi/jetson_stats #902,
# #906): a stand-in release file, as the first line of a flashed device's reads.
R39_2_1 = "# R39 (release), REVISION: 2.1, GCID: 0, BOARD: generic, EABI: aarch64, DATE: stand-in"


@pytest.fixture
def x86_with_r39_2_1_release(x86_host: Host) -> Iterator[Host]:
    """The x86 host with a stand-in R39.2.1 /etc/nv_tegra_release, removed afterwards."""
    x86_host.exec(["sh", "-c", f"printf '%s\\n' '{R39_2_1}' > {NV_TEGRA_RELEASE}"])
    yield x86_host
    x86_host.exec(["rm", "-f", NV_TEGRA_RELEASE])


def test_info_knows_l4t_39_2_1_without_jetson_stats(x86_with_r39_2_1_release: Host) -> None:
    """jetson-env reads the release file and keys the matrix on it: no jetson-stats installed,
    none required, and R39.2.1 is JetPack 7.2.1 all the same."""
    platform = run_info(x86_with_r39_2_1_release)

    assert (platform["l4t"], platform["jetpack"], platform["is_jetson"]) == (
        "39.2.1",
        "7.2.1",
        True,
    )
    found = x86_with_r39_2_1_release.exec([f"{VENV}/bin/python", "-c", (
        "import importlib.metadata as m, importlib.util as u; "
        "print(u.find_spec('jtop') is None, "
        "[r for r in m.requires('jetson-env') or () if r.startswith('jetson-stats')"
        " and 'extra' not in r])"
    )])  # fmt: skip
    assert found.stdout.strip() == "True []"
