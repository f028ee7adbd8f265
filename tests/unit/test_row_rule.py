"""One row rule for every consumer: provisioning, the doctor (its context and platform check),
`info` and `images tag` give the same row, or refuse, for the same L4T release."""

import pytest

from jetson_env import images
from jetson_env.checks import platform as platform_check
from jetson_env.checks.context import Facts
from jetson_env.fleet.report import platform_label
from jetson_env.matrix import UnknownRelease, load
from jetson_env.platform_in_matrix import describe
from jetson_env.probing import ProbeResult
from jetson_env.provisioning import plan

M = load()
PY310 = {"version": "3.10.12", "tag": "cp310"}


def orin(l4t: str) -> dict:
    return {
        "is_jetson": True, "machine": "aarch64", "l4t": l4t, "l4t_source": "nv_tegra_release",
        "board": "t186ref", "model": "NVIDIA Jetson AGX Orin", "soc": "tegra234", "gpus": [],
        "os": {"pretty_name": "Ubuntu 22.04.5 LTS"}, "uid": 0, "unknown": {},
        "python": {"version": "3.10.12", "executable": "/usr/bin/python3"},
    }  # fmt: skip


def rows_each_consumer_uses(l4t: str) -> dict[str, str | None]:
    """The L4T of the row each consumer uses for a host on `l4t`; None where it refuses."""
    raw = orin(l4t)
    described = describe(raw, {}, M)
    facts = Facts({"platform": ProbeResult("platform", raw, None, 0.1)}, M, described)
    provisioned = plan(M, raw, PY310, "h", allow_newer_point_release=True)
    try:
        image = images.image_for(images.HostPlatform(True, "aarch64", l4t), M).release.l4t
    except UnknownRelease:
        image = None
    (finding,) = platform_check.run(facts)
    return {
        "provisioning": provisioned["l4t"] if provisioned["error"] is None else None,
        "doctor context": facts.release.l4t if facts.release else None,
        "platform check": None if finding.status == "fail" else "ok",
        "info": described["matrix_row"],
        "images tag": image,
    }


@pytest.mark.parametrize(
    ("l4t", "row", "image"),
    [
        ("36.4.3", "36.4.3", "36.4.0"),
        ("36.4.9", "36.4.7", "36.4.0"),  # a point release: the line's newest row, everywhere
        ("38.4.1", "38.4.0", "38.2.0"),
        ("39.2.9", "39.2.2", "39.2.0"),
        ("35.3.0", None, None),  # left out on purpose although its line has rows
        ("38.1.0", None, None),
        ("36.1.0", None, None),  # a line without rows
        ("40.0.0", None, None),
    ],
)
def test_every_consumer_takes_the_same_row(l4t, row, image):
    assert rows_each_consumer_uses(l4t) == {
        "provisioning": row,
        "doctor context": row,
        "platform check": "ok" if row else None,
        "info": row,
        "images tag": image,
    }


def test_info_names_the_row_it_assumes():
    described = describe(orin("36.4.9"), {}, M)
    assert (described["supported"], described["jetpack"]) == (True, None)
    assert described["assumed_from"] == "36.4.7"
    assert "R36.4.7's (JetPack 6.2.1), the newest of its line" in described["unknown"]["jetpack"]
    exact = describe(orin("36.4.3"), {}, M)
    assert (exact["jetpack"], exact["assumed_from"], exact["matrix_row"]) == ("6.2", None, "36.4.3")


def test_the_fleet_summary_names_the_row_it_assumes():
    assert platform_label(describe(orin("36.4.9"), {}, M)) == "L4T R36.4.9 / R36.4.7's row"
    assert platform_label(describe(orin("36.4.3"), {}, M)) == "L4T R36.4.3 / JetPack 6.2"
