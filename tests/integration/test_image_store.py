"""tests/support/image_store.py against the real Docker engine, run as scripts/test runs it
before a default run: of the suite's images, the older keys of a name, the dangling ones and the
exited containers go; the newest key, the newest build stage of an image, and every image and
container not the suite's, stay."""

import subprocess
import sys
import tarfile
import uuid

import pytest
from support.hosts import REPO_ROOT
from support.image_store import BUILD_STAGE, LABEL

pytestmark = pytest.mark.hosts


def docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)


def image(empty_tar, tag: str, ours: bool = True, stage: str = "") -> str:
    changes = ["--change", f"LABEL {LABEL}=1"] if ours else []
    changes += ["--change", f"LABEL {BUILD_STAGE}={stage}"] if stage else []
    made = docker("import", *changes, str(empty_tar), tag)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def exists(reference: str) -> bool:
    return docker("image", "inspect", reference).returncode == 0


def test_the_suites_stale_images_and_exited_containers_go_and_nothing_else(tmp_path):
    empty_tar = tmp_path / "empty.tar"
    tarfile.open(empty_tar, "w").close()
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
        made += [image(empty_tar, older), image(empty_tar, newer)]
        made += [image(empty_tar, theirs_older, ours=False), image(empty_tar, theirs_newer, False)]
        dangling_ours = image(empty_tar, fixed)
        made += [dangling_ours, image(empty_tar, fixed)]
        dangling_theirs = image(empty_tar, theirs_fixed, ours=False)
        made += [dangling_theirs, image(empty_tar, theirs_fixed, ours=False)]
        older_stage, newer_stage = (image(empty_tar, stage, stage=case) for _ in range(2))
        made += [older_stage, newer_stage, image(empty_tar, stage)]  # both stages dangle
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
        assert docker("container", "inspect", ours_container).returncode != 0
        assert exists(newer) and exists(fixed)
        assert exists(theirs_older) and exists(theirs_newer) and exists(dangling_theirs)
        assert docker("container", "inspect", theirs_container).returncode == 0
    finally:
        docker("rm", "--force", ours_container, theirs_container)
        docker("rmi", "--force", older, newer, theirs_older, theirs_newer, fixed, theirs_fixed,
               stage)  # fmt: skip
        docker("rmi", "--force", *made)
