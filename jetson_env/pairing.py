"""THE torch -> torchvision pairing rule, for the doctor, the roles (a filter) and the bundle.

The oracle is what a torchvision release's own wheel declares about torch (its Requires-Dist:
0.26.0 requires torch==2.11.0, 0.24.1 torch==2.9.1; from 0.29.1 on a range, torch>=2.14.0, as
its extension uses only torch's stable C ABI). The matrix's `torchvision_pairs` is its cache:
`pairs`, torch major.minor -> torchvision major.minor (pytorch/vision's compatibility table, and
a minor whose releases' Requires-Dist admit a newer torch: 2.15 -> 0.29), and `requires_dist`,
every release's requirement (0.29.0 pins torch==2.14.0, so torch 2.15 pairs with 0.29 from
0.29.1 on; 0.24.0 pins torch==2.9.0 and 0.24.1 torch==2.9.1, so each torch has its one).
tests/unit/test_torchvision_requires_dist.py reads the oracle again.

Versions are compared with packaging.version: a local label (0.26.0+cu130, 2.11.0+cpu) is that
release. A pre-release torch is a build of an untagged tree (NVIDIA's 2.5.0a0+872d972e41.nv24.08,
Debian's torch 1.13.1, which reports 1.13.0a0): which patch of its major.minor it is cannot be
read from it, so a torchvision release pairs where its Requires-Dist admits any release of that
line. Debian's own pair is the oracle: bookworm's python3-torchvision 0.14.1-2 depends on
libtorch1.13 (>= 1.13.1+dfsg), whose Python package says 1.13.0a0
(tests/integration/test_torchvision_upstream.py reads both from Debian's packages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

TABLE = "pytorch/vision's compatibility table (the matrix's torchvision_pairs)"


@dataclass(frozen=True)
class Pair:
    """The torchvision that pairs with one torch: its major.minor, the oldest release of it
    that pairs (`first`, the tag to build), the later releases of the minor whose own
    Requires-Dist refuses this torch (`excluded`: 0.24.1 requires torch==2.9.1, so torch 2.9.0
    pairs with 0.24.0 only) and where the pair comes from."""

    torch: str
    minor: str  # "0.29"
    first: str  # "0.29.1": 0.29.0's wheel requires torch==2.14.0
    source: str
    excluded: tuple[str, ...] = ()

    def admits(self, torchvision_version: str) -> bool:
        """Whether this torchvision release (local label and pre-release ignored) pairs."""
        release = _release(torchvision_version)
        return release is not None and (
            release[:2] == _release(self.minor)[:2]
            and release >= _release(self.first)
            and release not in {_release(other) for other in self.excluded}
        )

    @property
    def wanted(self) -> str:
        """What pairs, for a message: "0.26.x", "0.29.x from 0.29.1", "0.24.x, not 0.24.1"."""
        since = "" if self.first == f"{self.minor}.0" else f" from {self.first}"
        refused = f", not {', '.join(self.excluded)}" if self.excluded else ""
        return f"{self.minor}.x{since}{refused}"

    @property
    def requirement(self) -> str:
        """The pip requirement for a torchvision that pairs."""
        floor = "" if self.first == f"{self.minor}.0" else f",>={self.first}"
        return f"torchvision=={self.minor}.*{floor}" + "".join(f",!={v}" for v in self.excluded)


def pair(pairs: dict[str, str], requires_dist: dict[str, str], torch_version: str) -> Pair | None:
    """The torchvision paired with `torch_version`, or None when the table knows none.

    The table gives the minor; its oldest release whose Requires-Dist admits this torch is
    `first` (else the minor's x.y.0, for releases the cache does not hold), and its later
    releases whose Requires-Dist refuses it are `excluded`. A pre-release torch is each
    release of its line the requirements name (module docstring)."""
    release = _release(torch_version)
    minor = pairs.get(f"{release[0]}.{release[1]}") if release else None
    if minor is None:
        return None
    of_minor = sorted(
        (Version(vision), spec)
        for vision, spec in requires_dist.items()
        if _release(vision)[:2] == _release(minor)[:2]
    )
    torches = _could_be(torch_version, [spec for _, spec in of_minor])
    admitting = [
        (vision, spec)
        for vision, spec in of_minor
        if any(requires_admit(spec, torch) for torch in torches)
    ]
    if not admitting:
        return Pair(torch_version, minor, f"{minor}.0", TABLE)
    first, spec = admitting[0]
    excluded = tuple(
        str(vision)
        for vision, spec in of_minor
        if vision > first and not any(requires_admit(spec, torch) for torch in torches)
    )
    return Pair(
        torch_version, minor, str(first), f"torchvision {first}'s Requires-Dist: {spec}", excluded
    )


def tag(found: Pair, row_torchvision: str = "") -> str:
    """The torchvision release to build for a torch: the matrix row's own where it pairs (the
    row's torch), else the pair's first release."""
    return row_torchvision if row_torchvision and found.admits(row_torchvision) else found.first


def requires_admit(requirement: str, torch: Version) -> bool:
    """Whether a torchvision wheel's torch requirement ("torch>=2.14.0", "==2.11.0") admits
    this torch release. A pin on a local version pins its release: PyPI's torchvision 0.11.0
    and 0.15.0 wheels require torch==1.10.0+cu102 and ==2.0.0+cu117."""
    return _specifier_set(requirement).contains(torch, prereleases=True)


def _could_be(torch_version: str, requirements: list[str]) -> list[Version]:
    """The torch releases a torch version may be: its release; for a pre-release, also every
    release of its major.minor that these requirements name (1.13.0a0 -> 1.13.0, 1.13.1)."""
    torch = Version(".".join(str(part) for part in _release(torch_version)))
    if not Version(torch_version).is_prerelease:
        return [torch]
    named = {
        Version(specifier.version)
        for requirement in requirements
        for specifier in _specifier_set(requirement)
        if not specifier.version.endswith("*")
    }
    return [torch, *sorted(v for v in named if v.release[:2] == torch.release[:2] and v != torch)]


def _specifier_set(requirement: str) -> SpecifierSet:
    """A Requires-Dist's specifiers alone, a local label's pin as its release ("torch
    (>=2.14.0)" -> >=2.14.0, "torch==2.0.0+cu117" -> ==2.0.0)."""
    specifiers = requirement.replace(" ", "").removeprefix("torch").strip("()")
    return SpecifierSet(re.sub(r"\+[A-Za-z0-9.]+", "", specifiers))


def _release(version: str) -> tuple[int, ...] | None:
    """The release tuple padded to 3 (0.26 -> (0, 26, 0)); None for no version."""
    try:
        release = Version(str(version)).release
    except InvalidVersion:
        return None
    return (*release, 0, 0)[:3]
