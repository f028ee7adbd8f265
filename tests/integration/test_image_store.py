"""tests/support/image_store.py against the real Docker engine, run as scripts/test runs it
before a default run: of the suite's images, the older keys of a name, the dangling ones and the
exited containers go; the newest key, the newest build stage of an image, a dangling image of
the last hour (a build's in progress), and every image and container not the suite's, stay.
The images are loaded with a creation time in 2020 (`docker import` can only make them now)."""

import datetime
import hashlib
import io
import itertools
import json
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest
from support.hosts import REPO_ROOT
from support.image_store import BUILD_STAGE, LABEL

pytestmark = pytest.mark.hosts
OLD = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)


def docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)


MADE = itertools.count()


def image(work: Path, tag: str, ours: bool = True, stage: str = "", recent: bool = False) -> str:
    """An image of one empty layer, tagged `tag` by `docker load` (an earlier image of the tag
    then dangles), made in 2020 (a second after the one before) unless `recent`."""
    labels = {LABEL: "1"} if ours else {}
    labels |= {BUILD_STAGE: stage} if stage else {}
    created = (
        datetime.datetime.now(datetime.timezone.utc)
        if recent
        else OLD + datetime.timedelta(seconds=next(MADE))
    )
    layer = io.BytesIO()
    tarfile.open(fileobj=layer, mode="w").close()
    diff_id = hashlib.sha256(layer.getvalue()).hexdigest()
    rootfs = {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]}
    config = json.dumps({"architecture": "amd64", "os": "linux", "created": created.isoformat(),
                         "config": {"Labels": labels}, "rootfs": rootfs}).encode()  # fmt: skip
    image_id = hashlib.sha256(config).hexdigest()
    manifest = [{"Config": f"{image_id}.json", "RepoTags": [tag], "Layers": [f"{diff_id}.tar"]}]
    archive = work / f"{image_id}.tar"
    with tarfile.open(archive, "w") as tar:
        for name, data in ((f"{image_id}.json", config), (f"{diff_id}.tar", layer.getvalue()),
                           ("manifest.json", json.dumps(manifest).encode())):  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    loaded = docker("load", "--input", str(archive))
    assert loaded.returncode == 0, loaded.stderr
    return f"sha256:{image_id}"


def exists(reference: str) -> bool:
    return docker("image", "inspect", reference).returncode == 0


def test_the_suites_stale_images_and_exited_containers_go_and_nothing_else(tmp_path):
    case = uuid.uuid4().hex[:8]
    older = f"jetson-env-host:evict-{case}-aaaaaaaaaaaa"
    newer = f"jetson-env-host:evict-{case}-bbbbbbbbbbbb"
    theirs_older = f"evict-{case}:app-aaaaaaaaaaaa"  # the same shape, not the suite's
    theirs_newer = f"evict-{case}:app-bbbbbbbbbbbb"
    fixed = f"jetson-env-test:evict-{case}"  # rebuilt under one tag: the old image dangles
    theirs_fixed = f"evict-{case}:fixed"
    stage = f"jetson-env-test:evict-{case}-stage"  # images/Dockerfile's build stage, rebuilt
    ours_container, theirs_container = f"jetson-env-test-evict-{case}", f"evict-{case}"
    made = []
    try:
        made += [image(tmp_path, older), image(tmp_path, newer)]
        made += [image(tmp_path, theirs_older, ours=False), image(tmp_path, theirs_newer, False)]
        dangling_ours = image(tmp_path, fixed)
        made += [dangling_ours, image(tmp_path, fixed)]
        dangling_theirs = image(tmp_path, theirs_fixed, ours=False)
        made += [dangling_theirs, image(tmp_path, theirs_fixed, ours=False)]
        older_stage, newer_stage = (image(tmp_path, stage, stage=case) for _ in range(2))
        made += [older_stage, newer_stage, image(tmp_path, stage)]  # both stages dangle
        building = image(tmp_path, f"{fixed}-building", recent=True)  # a build's, between steps
        made += [building, image(tmp_path, f"{fixed}-building")]
        for name in (ours_container, theirs_container):
            assert docker("create", "--name", name, newer, "/nothing").returncode == 0

        run = subprocess.run([sys.executable, "-m", "support.image_store"], cwd=REPO_ROOT,
                             env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT / "tests")},
                             capture_output=True, text=True, timeout=600)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert "GiB free for Docker" in run.stderr

        assert not exists(older), run.stderr
        assert not exists(dangling_ours)
        assert not exists(older_stage) and exists(newer_stage)  # the next build's layer cache
        assert exists(building)
        assert docker("container", "inspect", ours_container).returncode != 0
        assert exists(newer) and exists(fixed)
        assert exists(theirs_older) and exists(theirs_newer) and exists(dangling_theirs)
        assert docker("container", "inspect", theirs_container).returncode == 0
    finally:
        docker("rm", "--force", ours_container, theirs_container)
        docker("rmi", "--force", older, newer, theirs_older, theirs_newer, fixed, theirs_fixed,
               stage, f"{fixed}-building")  # fmt: skip
        docker("rmi", "--force", *made)
