"""The kinds of host a bundle serves: from `jetson-env bundle`'s arguments, or from a
host's jetson_env facts (the playbook's preflight and `bundle -i`)."""

from __future__ import annotations

import platform as platform_mod
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jetson_env import apt_repository, wheels
from jetson_env.bundle.errors import BundleError
from jetson_env.checks.context import shell_word
from jetson_env.matrix import Matrix, normalize_l4t

# A CUDA toolkit's version as the bundle records it: major.minor.
CUDA = re.compile(r"\d{1,2}\.\d{1,2}")


@dataclass(frozen=True)
class BundleTarget:
    """One kind of host a bundle serves: its matrix row (an L4T release, or x86), machine,
    Python and glibc, and the CUDA toolkit it has where known (the pycuda role's cuda-python
    follows the host's CUDA major; "" = the row's: its release's CUDA, x86 its torch's)."""

    machine: str
    python: str  # "3.11"
    glibc: str  # "2.36"
    l4t: str = ""  # "36.4.3"; "" = the x86 profile
    distribution: str = ""  # "debian/bookworm": which apt repository fits; "" = unknown
    cuda: str = ""  # "12.6"; "" = the row's

    @property
    def key(self) -> str:
        row = f"l4t{self.l4t}" if self.l4t else "x86"
        return f"{self.machine}-{row}-cp{self.python.replace('.', '')}"

    @property
    def abi(self) -> str:
        return wheels.cpython_abi(self.python)

    def bundle_args(self) -> str:
        """The `jetson-env bundle` arguments that add this target, each value quoted (they
        come from a host's facts or a bundle's manifest); a value not known is left out."""
        words = [*(("--l4t", f"R{self.l4t}") if self.l4t else ("--x86",))]
        for option, value in (
            ("--python-version", self.python),
            ("--glibc", self.glibc),
            ("--distribution", self.distribution),
            ("--cuda", self.cuda),
        ):
            if value:
                words += [option, value]
        return " ".join(shell_word(word) for word in words)

    @classmethod
    def from_manifest(cls, entry: dict[str, Any]) -> BundleTarget:
        """A target of a manifest (its fields checked by jetson_env.bundle.untrusted)."""
        return cls(entry["machine"], entry["python"], entry["glibc"], entry["l4t"],
                   entry["distribution"], entry.get("cuda", ""))  # fmt: skip

    def as_dict(self) -> dict[str, str]:
        return {
            "machine": self.machine,
            "python": self.python,
            "glibc": self.glibc,
            "l4t": self.l4t,
            "distribution": self.distribution,
            "cuda": self.cuda,
            "args": self.bundle_args(),
        }


def controller_glibc() -> str:
    name, version = platform_mod.libc_ver()
    return version if name == "glibc" and version else "2.17"


def targets_from_args(
    matrix: Matrix,
    l4ts: Iterable[str],
    x86: bool,
    python: str | None,
    glibc: str | None,
    distribution: str | None = None,
    cuda: str | None = None,
) -> list[BundleTarget]:
    """Targets from `--l4t R36.4.3 ... --x86 --python 3.12 --glibc 2.39`: a Jetson target
    takes its row's Python, and its Ubuntu's glibc and apt suite (the matrix's `ubuntu`),
    unless given; x86 the controller's."""
    if python and not re.fullmatch(r"3\.\d{1,2}", python):
        raise BundleError(f"--python-version {python!r} is not a Python version like 3.12")
    if glibc and not re.fullmatch(r"2\.\d{1,2}", glibc):
        raise BundleError(f"--glibc {glibc!r} is not a glibc version like 2.39")
    if cuda and not CUDA.fullmatch(cuda):
        raise BundleError(f"--cuda {cuda!r} is not a CUDA version like 12.6")
    if distribution and not apt_repository.DISTRIBUTION.fullmatch(distribution):
        raise BundleError(
            f"--distribution {distribution!r} is not ID/CODENAME like debian/bookworm "
            "(os-release's ID and VERSION_CODENAME)"
        )
    targets = []
    for l4t in l4ts:
        release = matrix.release(l4t)  # UnknownRelease lists the supported ones
        ubuntu = matrix.ubuntu[release.ubuntu]  # every row's Ubuntu has an entry (validated)
        targets.append(
            BundleTarget(
                "aarch64",
                python or release.python,
                glibc or ubuntu.glibc,
                normalize_l4t(release.l4t),
                distribution or f"ubuntu/{ubuntu.codename}",
                cuda or "",
            )
        )
    if x86:
        current = f"{sys.version_info.major}.{sys.version_info.minor}"
        targets.append(
            BundleTarget(
                "x86_64",
                python or current,
                glibc or controller_glibc(),
                distribution=distribution or apt_repository.controller_distribution(),
                cuda=cuda or "",
            )
        )
    if not targets:
        raise BundleError(
            "no target given", hint="name targets with --l4t R36.4.3, --x86, or -i INVENTORY"
        )
    return list(dict.fromkeys(targets))


def target_from_facts(
    platform: dict[str, Any], python: dict[str, Any], cuda: dict[str, Any] | None = None
) -> BundleTarget:
    """The target a host with these jetson_env facts is (the playbook's bundle preflight and
    `bundle -i` use the same rule); `cuda`, the host's CUDA toolkit facts where read."""
    major_minor = str(
        python.get("major_minor") or ".".join(str(python.get("version", "")).split(".")[:2])
    )
    libc = str(python.get("libc") or "")
    glibc = libc if re.fullmatch(r"2\.\d+", libc) else ""  # "": not known
    l4t = normalize_l4t(str(platform.get("l4t") or "")) if platform.get("is_jetson") else ""
    distribution = apt_repository.distribution_of(platform.get("os") or {})
    found = ".".join(str((cuda or {}).get("version") or "").split(".")[:2])
    return BundleTarget(str(platform.get("machine") or ""), major_minor, glibc, l4t, distribution,
                  found if CUDA.fullmatch(found) else "")  # fmt: skip


# ---------------------------------------------------------------------------------------
# What a target needs
