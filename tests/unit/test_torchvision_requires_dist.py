"""The matrix's torchvision pairs against their oracle: what each torchvision release's own
wheel declares about torch (its Requires-Dist).

Read through this machine's pip configuration with `pip install --dry-run --no-deps --report`,
which fetches only the wheel's metadata file, never the wheel. The machine's pip constraints
are left out for this read: a cap on what may be installed here is not what the index
serves. A release's metadata never changes, so each is read once into the tests' cache outside
the checkout (a cold run
makes one pip call per release, 49, about 50 s of CPU, most of it pip's own start, in one
pytest worker while the other waits for it; a warm one none).
"""

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from support.hosts import TESTS_CACHE, _file_lock

from jetson_env import matrix, wheels
from jetson_env.pairing import requires_admit

M = matrix.load()
CACHE = TESTS_CACHE / "torchvision-requires-dist"
# Old releases have wheels only for old Pythons, new ones only for new Pythons: each release
# tries first the Python its wheels likely have (0.12 is the first with cp310 wheels), then
# the other, so a cold read makes one pip call per release, not two for the old ones.
PYTHONS = ("3.10", "3.8")
FIRST_CP310 = Version("0.12")


def read_requires_dist(release: str) -> str:
    """The torch specifier torchvision `release`'s wheel declares (">=2.14.0"), from pip."""
    cached = CACHE / f"{release}.json"
    if cached.exists():
        return json.loads(cached.read_text())["torch"]
    errors = []
    for python in PYTHONS if Version(release) >= FIRST_CP310 else PYTHONS[::-1]:
        with tempfile.TemporaryDirectory() as target:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
                 "--ignore-installed", "--only-binary=:all:", "--python-version", python,
                 *wheels.pip_platform_args("x86_64", "2.28"), "--target", target,
                 "--report", "-", f"torchvision=={release}"],
                capture_output=True, text=True, timeout=300,
                env={**os.environ, "PIP_CONSTRAINT": os.devnull},
            )  # fmt: skip
        if proc.returncode != 0:
            errors.append(f"Python {python}: {proc.stderr.strip()[-300:]}")
            continue
        (item,) = json.loads(proc.stdout)["install"]
        requirements = [Requirement(r) for r in item["metadata"].get("requires_dist", [])]
        torch = [r for r in requirements if r.name == "torch" and not r.marker]
        assert len(torch) == 1, (release, item["metadata"].get("requires_dist"))
        wheel = item["download_info"]["url"].rsplit("/", 1)[-1]
        CACHE.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"torch": str(torch[0].specifier), "wheel": wheel}))
        return str(torch[0].specifier)
    raise AssertionError(f"pip could not read torchvision {release}'s metadata: {errors}")


def releases_of(minor: str) -> list[str]:
    """The releases of a torchvision minor the matrix's cache names, else its x.y.0."""
    named = [v for v in M.requires_dist if Version(v).release[:2] == Version(minor).release[:2]]
    return named or [f"{minor}.0"]


@cache
def oracle() -> dict[str, str]:
    """torchvision release -> the torch specifier its wheel declares, for every release the
    matrix's pairs rest on (read concurrently: the time is the index's, not the CPU's)."""
    wanted = sorted({r for minor in set(M.pairs.values()) for r in releases_of(minor)}
                    | set(M.requires_dist), key=Version)  # fmt: skip
    # One pytest worker reads the index at a time; the other then reads what it cached.
    with _file_lock("torchvision-requires-dist"), ThreadPoolExecutor(max_workers=8) as pool:
        specifiers = list(pool.map(read_requires_dist, wanted))
    return dict(zip(wanted, specifiers, strict=True))


@pytest.mark.parametrize("release", sorted(M.requires_dist, key=Version))
def test_the_cached_requires_dist_is_what_the_wheel_declares(release):
    cached = M.requires_dist[release]
    assert cached.startswith("torch")
    assert SpecifierSet(cached.removeprefix("torch")) == SpecifierSet(oracle()[release]), release


@pytest.mark.parametrize("torch_minor", sorted(M.pairs, key=Version))
def test_every_pair_is_one_the_torchvision_wheels_declare(torch_minor):
    """torch X.Y pairs with torchvision minor V when a release of V requires a torch that
    X.Y.0 is (0.29.0 pins torch==2.14.0, 0.29.1 declares torch>=2.14.0: 2.15 pairs)."""
    minor = M.pairs[torch_minor]
    declared = {release: oracle()[release] for release in releases_of(minor)}
    torch = Version(f"{torch_minor}.0")
    admitting = [release for release, spec in declared.items() if requires_admit(spec, torch)]
    assert admitting, f"torch {torch_minor} -> torchvision {minor}: the wheels say {declared}"
    found = M.torchvision_pair(str(torch))
    assert found.first == min(admitting, key=Version), (found, declared)


def test_torch_2_15_pairs_with_torchvision_0_29_from_0_29_1():
    """The case that sent a 2.15 user back to 2.14: the wheels' own word pairs them."""
    assert not requires_admit(oracle()["0.29.0"], Version("2.15.0"))
    assert requires_admit(oracle()["0.29.1"], Version("2.15.0"))
    assert M.torchvision_pair("2.15.0+cu132").first == "0.29.1"
