"""Local images built on a base that no longer runs on the host's release (NVIDIA's -igpu images
on JetPack 7): a real image built here, read by the real docker probe (tags, labels, history,
never run), judged by the doctor's Docker check and by `plan --to` for a JetPack 7.2 host."""

import os
import subprocess
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
# FROM scratch: nothing pulled; the base is named as builds name it, an ARG and a label.
DOCKERFILE = f"""FROM scratch
ARG BASE_IMAGE={BASE}
LABEL org.opencontainers.image.base.name={BASE}
COPY marker /marker
"""


@pytest.fixture(scope="module")
def igpu_image(tmp_path_factory) -> Iterator[str]:
    tag = f"{os.environ.get('JETSON_ENV_TEST_PREFIX', '')}igpu-app:1".lower()
    context = tmp_path_factory.mktemp("igpu-app")
    (context / "Dockerfile").write_text(DOCKERFILE)
    (context / "marker").write_text("a stand-in app on an -igpu base\n")
    built = subprocess.run(["docker", "build", "-q", "-t", tag, str(context)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert built.returncode == 0, built.stderr
    yield tag
    subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=120)


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


def ours(image: dict, tag: str) -> bool:
    return any(t.endswith(tag) for t in image.get("tags") or ())


def test_the_docker_check_names_an_igpu_based_image_on_jetpack_7_with_what_instead(igpu_image):
    data = docker_probe.collect()
    (image,) = [i for i in data["images"]["images"] if ours(i, igpu_image)]
    assert BASE in image["labels"].values()  # read, not run

    said = [f.summary for f in BY_NAME["docker"].run(jetson("39.2.1", data))
            if igpu_image in f.summary]  # fmt: skip
    assert len(said) == 1
    assert said[0].startswith(f"image {igpu_image} will not run on L4T R39.2.1: built on an -igpu")
    assert f"({BASE}); instead: rebuild it on a base" in said[0]
    # On JetPack 6 the same image runs: nothing said.
    assert not [f for f in BY_NAME["docker"].run(jetson("36.4.3", data))
                if igpu_image in f.summary]  # fmt: skip


def test_plan_to_r39_names_the_image_to_rebuild(igpu_image):
    data = docker_probe.collect()
    platform = {"is_jetson": True, "l4t": "36.4.3", "soc": "tegra234", "machine": "aarch64",
                "python": {"version": "3.10.12"}}  # fmt: skip
    current, target = MATRIX.release("36.4.3"), MATRIX.release("39.2.2")
    parts = judgement.judge(MATRIX, platform, {"docker": data}, current, target,
                            judgement.REFLASH)  # fmt: skip
    (part,) = [p for p in parts if p.kind == "image" and p.name == igpu_image]
    assert (part.verdict, part.after) == ("rebuild", "R39.2.2")
    assert BASE in part.reason and "instead:" in part.reason
