"""Local images built on a base that no longer runs on the host's release (NVIDIA's -igpu images
on JetPack 7): a real image built here, read by the real docker probe (tags, labels, history,
never run), judged by the doctor's Docker check and by `plan --to` for a JetPack 7.2 host."""

import os
import subprocess
import tarfile
from collections.abc import Iterator

import pytest

from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.matrix import load
from jetson_env.plan import judgement
from jetson_env.probes import docker as docker_probe
from jetson_env.probing import ProbeResult

pytestmark = pytest.mark.hosts

MATRIX = load()
BASE = "nvcr.io/nvidia/pytorch:25.08-py3-igpu"
LABEL = f"org.opencontainers.image.base.name={BASE}"
# FROM scratch: nothing pulled. The base is named as builds name it, each way alone: an ARG the
# history keeps ("history"), a label only (an imported image: its history says "Imported from
# -"), and neither ("clean", which nothing may flag).
BUILT = {"history": f"FROM scratch\nARG BASE_IMAGE={BASE}\nCOPY marker /marker\n",
         "clean": "FROM scratch\nCOPY marker /marker\n"}  # fmt: skip


def docker(*args: str, stdin: bytes | None = None) -> None:
    done = subprocess.run(["docker", *args], input=stdin, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Iterator[dict[str, str]]:
    prefix = os.environ.get("JETSON_ENV_TEST_PREFIX", "").lower()
    tags = {way: f"{prefix}igpu-app-{way}:1" for way in ("history", "label", "clean")}
    context = tmp_path_factory.mktemp("igpu-app")
    (context / "marker").write_text("a stand-in app on an -igpu base\n")
    try:
        for way, dockerfile in BUILT.items():
            (context / "Dockerfile").write_text(dockerfile)
            docker("build", "-q", "-t", tags[way], str(context))
        with tarfile.open(context / "rootfs.tar", "w") as tar:
            tar.add(context / "marker", arcname="marker")
        docker("import", "--change", f"LABEL {LABEL}", "-", tags["label"],
               stdin=(context / "rootfs.tar").read_bytes())  # fmt: skip
        yield tags
    finally:
        subprocess.run(["docker", "image", "rm", "-f", *tags.values()], capture_output=True,
                       timeout=120)  # fmt: skip


def jetson(l4t: str, docker: dict) -> Facts:
    platform = {
        "is_jetson": True, "machine": "aarch64", "l4t": l4t, "soc": "tegra234", "uid": 0,
        "gpus": [], "unknown": {},
        "python": {"version": "3.12.3", "executable": "/usr/bin/python3"},
    }  # fmt: skip
    results = {"platform": ProbeResult("platform", platform, None, 0.1),
               "docker": ProbeResult("docker", docker, None, 0.1)}  # fmt: skip
    release = MATRIX.resolve(l4t).release
    described = {**platform, "compute_capability": "8.7", "jetpack": release.jetpack,
                 "supported": True}  # fmt: skip
    return Facts(results, MATRIX, described)


def ours(data: dict, tag: str) -> dict:
    (image,) = [i for i in data["images"]["images"] if tag in (i.get("tags") or ())]
    return image


def test_the_docker_check_names_an_igpu_based_image_on_jetpack_7_with_what_instead(images):
    data = docker_probe.collect()
    # Read, not run: the base is in the label alone, or in the history alone.
    label, history = ours(data, images["label"]), ours(data, images["history"])
    assert BASE in label["labels"].values() and not [t for t in label["history"] if BASE in t]
    assert BASE not in history["labels"].values() and [t for t in history["history"] if BASE in t]

    said = {way: [f.summary for f in BY_NAME["docker"].run(jetson("39.2.1", data))
                  if tag in f.summary]
            for way, tag in images.items()}  # fmt: skip
    assert said["clean"] == []
    for way in ("label", "history"):
        (summary,) = said[way]
        assert summary.startswith(
            f"image {images[way]} will not run on L4T R39.2.1: built on an -igpu"
        )
        assert f"({BASE}); instead: rebuild it on a base" in summary
    # On JetPack 6 the same images run: nothing said.
    assert not [f for f in BY_NAME["docker"].run(jetson("36.4.3", data))
                if any(tag in f.summary for tag in images.values())]  # fmt: skip


def test_plan_to_r39_names_the_images_to_rebuild(images):
    data = docker_probe.collect()
    platform = {"is_jetson": True, "l4t": "36.4.3", "soc": "tegra234", "machine": "aarch64",
                "python": {"version": "3.10.12"}}  # fmt: skip
    current, target = MATRIX.release("36.4.3"), MATRIX.release("39.2.2")
    parts = judgement.judge(MATRIX, platform, {"docker": data}, current, target,
                            judgement.REFLASH)  # fmt: skip
    named = {p.name: p for p in parts if p.kind == "image" and p.name in images.values()}
    assert sorted(named) == sorted([images["history"], images["label"]])
    for part in named.values():
        assert (part.verdict, part.after) == ("rebuild", "R39.2.2")
        assert BASE in part.reason and "instead:" in part.reason
