"""pytorch/vision's upstream release tarballs, from Debian's source archive, for tests.

GitHub is not reachable here and PyPI has no torchvision source distribution, but
Debian's source archive ships pytorch/vision's release tarballs as
`pytorch-vision_<version>.orig.tar.gz`. They are fetched through the mirror this
machine's apt uses, with a private deb-src list and package lists derived from it (the
machine's own apt state is left alone), by apt's own downloader, which checks the
matrix's sha256 pin (`torchvision_archives`); the file is kept in
~/.cache/jetson-env/debian-source/ and checked again on every use.
"""

import hashlib
import subprocess
from pathlib import Path

from jetson_env import matrix
from support.hosts import CACHE, HostSetupError, _file_lock, debian_mirror

SOURCE_PACKAGE = "pytorch-vision"
# The suites whose source packages carry the tarballs (bookworm: 0.14.1, trixie: 0.21.0).
SOURCE_SUITES = ("bookworm", "trixie")
DEBIAN_SOURCE = CACHE / "debian-source"
APT_HELPER = "/usr/lib/apt/apt-helper"


def vision_archive_sha256(version: str) -> str:
    """The matrix's pin for pytorch/vision's release tarball of `version`."""
    return matrix.load().raw["torchvision_archives"]["sha256"][version]


def _apt(*args: str) -> str:
    state = DEBIAN_SOURCE / "apt"
    options = {
        "Dir::Etc::SourceList": state / "sources.list",
        "Dir::Etc::SourceParts": "-",
        "Dir::State::Lists": state / "lists",
        "Dir::Cache": state / "cache",
        "APT::Sandbox::User": "root",
    }
    command = [args[0], *(f"-o{key}={value}" for key, value in options.items()), *args[1:]]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise HostSetupError(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def _orig_tarball_uri(version: str) -> str:
    """The URI of `pytorch-vision_<version>.orig.tar.gz` in the Sources indexes."""
    state = DEBIAN_SOURCE / "apt"
    for folder in ("lists/partial", "cache/archives/partial"):
        (state / folder).mkdir(parents=True, exist_ok=True)
    mirror = debian_mirror()
    (state / "sources.list").write_text(
        "".join(f"deb-src {mirror} {suite} main\n" for suite in SOURCE_SUITES)
    )
    _apt("apt-get", "-q", "update")
    stanzas = _apt("apt-cache", "showsrc", SOURCE_PACKAGE).split("\n\n")
    versions = [
        line.split(":", 1)[1].strip()
        for stanza in stanzas
        for line in stanza.splitlines()
        if line.startswith("Version:")
    ]
    debian_version = next((v for v in versions if v.split(":")[-1].startswith(f"{version}-")), None)
    if debian_version is None:
        raise HostSetupError(
            f"Debian's source archive ({', '.join(SOURCE_SUITES)}) has no {SOURCE_PACKAGE} "
            f"{version}; it has {', '.join(versions) or 'none'}"
        )
    filename = f"{SOURCE_PACKAGE}_{version}.orig.tar.gz"
    listing = _apt("apt-get", "source", "--print-uris", f"{SOURCE_PACKAGE}={debian_version}")
    for line in listing.splitlines():
        words = line.split()
        if len(words) >= 2 and words[1] == filename:
            return words[0].strip("'")
    raise HostSetupError(f"apt-get source --print-uris lists no {filename}:\n{listing}")


def vision_source_archive(version: str) -> Path:
    """pytorch/vision's release tarball of `version` on the controller, its sha256 checked."""
    expected = vision_archive_sha256(version)
    archive = DEBIAN_SOURCE / f"{SOURCE_PACKAGE}_{version}.orig.tar.gz"
    with _file_lock("debian-source"):
        if not archive.exists():
            partial = archive.with_suffix(".partial")
            result = subprocess.run(
                [APT_HELPER, "download-file", _orig_tarball_uri(version), partial,
                 f"SHA256:{expected}"],
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            if result.returncode != 0:
                partial.unlink(missing_ok=True)
                raise HostSetupError(f"downloading {archive.name} failed:\n{result.stderr}")
            partial.replace(archive)
    actual = hashlib.sha256(archive.read_bytes()).hexdigest()
    if actual != expected:
        raise HostSetupError(
            f"{archive} has sha256 {actual}, the matrix pins {expected}: delete it to fetch again"
        )
    return archive
