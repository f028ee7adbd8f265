"""The suite's Docker images on disk, kept to what the tree in hand can use.

Every image the suite makes is keyed by a hash of its inputs (`<repository>:<name>-<key>`), so
each tree, each edit of a role, leaves a new set of 0.3-2 GB images beside the old ones, and a
rebuilt fixed tag leaves the old image dangling. A machine that runs the suite on many trees (a
developer's, a CI machine kept between runs) filled its disk that way: a default run stopped with
"No space left on device" and 615 failures. Before a default run (scripts/test) this removes,
of the images the suite itself made, all but the newest key of each name, every dangling one
but the newest build stage of each image (the layer cache of its next build) and those of the
last hour (a build's in progress), and the exited containers of earlier runs; nothing else on
the machine is touched.
"""

import datetime
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The repositories the suite tags (tests/support/hosts.py, provisioned.py, test_images.py).
REPOSITORIES = (
    "jetson-env-base", "jetson-env-runtime", "jetson-env-host", "jetson-env-image-base",
    "jetson-env-provisioned", "jetson-env-test",
)  # fmt: skip
LABEL = "jetson-env.tests"  # on every image BuildContext builds, and so on what is made from them
PRODUCT_TITLE = "jetson-env "  # images/Dockerfile's org.opencontainers.image.title
BUILD_STAGE = "jetson-env.build-stage"  # images/Dockerfile's label of its build stage
RECENT = datetime.timedelta(hours=1)
CONTAINER_PREFIX = "jetson-env-test-"
KEYED = re.compile(r"^(?P<name>.+)-(?P<key>[0-9a-f]{12})$")


def _docker(*args: str) -> str:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=300, check=False
    ).stdout


def _created(stamp: str) -> tuple[str, int]:
    """Docker's RFC 3339 time with up to nine fraction digits, trailing zeros dropped: sortable."""
    seconds, _, fraction = stamp.rstrip("Z").partition(".")
    return seconds, int(fraction.ljust(9, "0")[:9] or 0)


def stale_tags(images: list[tuple[str, str]]) -> list[str]:
    """Of (tag, created) pairs, the suite's keyed tags older than the newest key of their name."""
    newest: set[str] = set()
    stale = []
    for tag, _created_at in sorted(images, key=lambda row: _created(row[1]), reverse=True):
        repository, _, version = tag.rpartition(":")
        match = KEYED.match(version)
        if repository not in REPOSITORIES or not match:
            continue
        name = f"{repository}:{match['name']}"
        if name in newest:
            stale.append(tag)
        newest.add(name)
    return stale


def superseded(dangling: list[dict], now: datetime.datetime) -> list[str]:
    """Of the suite's dangling images (`docker image inspect`), the ids to remove: all but the
    newest build stage of each image (images/Dockerfile's label): its layer cache, which the
    next build of the same tree reuses whole (the x86 image: 3.5 s, against 140 s rebuilt);
    and none made in the last hour: a build in progress (another run's, or this run's own
    beside test_image_store) has one between two of its steps."""
    newest: set[str] = set()
    remove = []
    for image in sorted(dangling, key=lambda image: _created(image["Created"]), reverse=True):
        made = datetime.datetime.fromisoformat(_created(image["Created"])[0])
        if now - made.replace(tzinfo=datetime.timezone.utc) < RECENT:
            continue
        stage = ((image.get("Config") or {}).get("Labels") or {}).get(BUILD_STAGE)
        if stage is not None and stage not in newest:
            newest.add(stage)
            continue
        remove.append(image["Id"])
    return remove


def _ours(labels: dict | None) -> bool:
    labels = labels or {}
    return LABEL in labels or labels.get("org.opencontainers.image.title", "").startswith(
        PRODUCT_TITLE
    )


def evict() -> list[str]:
    """Remove the suite's stale images and exited containers; returns what was removed.
    `docker rmi` without force: an image a running container uses (another run's) stays."""
    removed = []
    exited = _docker("ps", "--all", "--filter", "status=exited", "--filter",
                     "status=created", "--format", "{{.Names}}").split()  # fmt: skip
    exited = [name for name in exited if name.startswith(CONTAINER_PREFIX)]
    if exited:
        _docker("rm", *exited)
        removed += exited
    tags = [
        tag
        for tag in _docker("images", "--format", "{{.Repository}}:{{.Tag}}").split()
        if tag.partition(":")[0] in REPOSITORIES
    ]
    inspected = json.loads(_docker("image", "inspect", *tags) or "[]") if tags else []
    created = [(tag, image["Created"]) for image in inspected for tag in image["RepoTags"]]
    for tag in stale_tags(created):
        if subprocess.run(["docker", "rmi", tag], capture_output=True, timeout=300).returncode == 0:
            removed.append(tag)
    dangling = _docker("images", "--quiet", "--no-trunc", "--filter", "dangling=true").split()
    if dangling:
        inspected = json.loads(_docker("image", "inspect", *dangling) or "[]")
        ours = [image for image in inspected if _ours(image.get("Config", {}).get("Labels"))]
        for image in superseded(ours, datetime.datetime.now(datetime.timezone.utc)):
            rmi = subprocess.run(["docker", "rmi", image], capture_output=True, timeout=300)
            if rmi.returncode == 0:
                removed.append(image[:19])
    return removed


def docker_root() -> Path:
    return Path(_docker("info", "--format", "{{.DockerRootDir}}").strip() or "/var/lib/docker")


def main() -> int:
    removed = evict()
    free = shutil.disk_usage(docker_root()).free / 2**30
    print(f"disk: removed {len(removed)} of the suite's stale images and containers; "
          f"{free:.1f} GiB free for Docker", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
