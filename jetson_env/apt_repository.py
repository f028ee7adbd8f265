"""A bundle's apt part: the .debs a target's roles install, with their dependencies, as a
flat apt repository, where the controller's own apt mirrors serve the target's distribution.

apt itself resolves and checks them, in a root of its own under the bundle cache (the
controller's /etc/apt and package lists are only read): the controller's sources for that
distribution (their suites renamed to the target's codename, their keyrings kept, so the
mirror's indexes are verified as apt always does), the target's architecture and an empty
dpkg status, so each package comes with every dependency. The sha256 of each .deb is the
one in the mirror's signed index; the files are then fetched like the bundle's others.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass, replace
from pathlib import Path

from jetson_env.probes.platform import parse_os_release

DPKG_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
APT_ETC = Path("/etc/apt")
OS_RELEASE = Path("/etc/os-release")
APT_TIMEOUT_S = 600
APT_ROOT_FOLDERS = ("sources.list.d", "preferences.d", "lists/partial", "cache/archives/partial")
APT_GET_PRINT_URIS = ("apt-get", "-qq", "-y", "--no-install-recommends", "--print-uris")
DISTRIBUTION = re.compile(r"[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*")


class AptUnavailable(Exception):
    """The controller cannot build the repository for a distribution (why, for the manifest)."""


def distribution_of(os_release: dict) -> str:
    """ "debian/bookworm" from parsed os-release values; "" when either part is unknown."""
    ident, codename = os_release.get("id"), os_release.get("version_codename")
    return f"{ident}/{codename}" if ident and codename else ""


def controller_distribution() -> str:
    try:
        return distribution_of(parse_os_release(OS_RELEASE.read_text()))
    except OSError:
        return ""


@dataclass(frozen=True)
class AptSource:
    uri: str
    suite: str
    components: tuple[str, ...]
    signed_by: str = ""

    def line(self) -> str:
        options = f"[signed-by={self.signed_by}] " if self.signed_by else ""
        return f"deb {options}{self.uri} {self.suite} {' '.join(self.components)}"


def controller_sources(etc: Path = APT_ETC) -> list[AptSource]:
    """The controller's enabled `deb` sources: sources.list, *.list and deb822 *.sources."""
    sources: list[AptSource] = []
    one_line = [etc / "sources.list", *sorted((etc / "sources.list.d").glob("*.list"))]
    for path in one_line:
        for line in _lines(path):
            match = re.match(r"deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)", line)
            if match:
                opts = dict(
                    o.split("=", 1)
                    for o in (match.group(1) or "").strip("[] \t").split()
                    if "=" in o
                )
                sources.append(
                    AptSource(
                        match.group(2),
                        match.group(3),
                        tuple(match.group(4).split()),
                        opts.get("signed-by", ""),
                    )
                )
    for path in sorted((etc / "sources.list.d").glob("*.sources")):
        text = "\n".join(_lines(path, keep_blank=True))
        for paragraph in re.split(r"\n\s*\n", text):
            fields = _deb822(paragraph)
            if "deb" not in fields.get("types", "").split():
                continue
            if fields.get("enabled", "yes").lower() == "no":
                continue
            for uri in fields.get("uris", "").split():
                for suite in fields.get("suites", "").split():
                    sources.append(
                        AptSource(
                            uri,
                            suite,
                            tuple(fields.get("components", "").split()),
                            fields.get("signed-by", "").strip(),
                        )
                    )
    return sources


def _lines(path: Path, keep_blank: bool = False) -> list[str]:
    try:
        text = path.read_text()
    except OSError:
        return []
    # A comment line is no line at all (in deb822 it does not end a paragraph).
    lines = [line.rstrip() for line in text.splitlines() if not line.lstrip().startswith("#")]
    if keep_blank:
        return lines
    return [line.split("#", 1)[0].rstrip() for line in lines if line.split("#", 1)[0].strip()]


def _deb822(paragraph: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for line in paragraph.splitlines():
        if line[:1] in (" ", "\t") and key:
            fields[key] += "\n" + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            key = key.strip().lower()
            fields[key] = value.strip()
    return fields


def sources_for(distribution: str, controller: str, sources: list[AptSource]) -> list[AptSource]:
    """The controller's sources that serve `distribution`: those of its own distribution
    (same id), their suites (bookworm, bookworm-updates, bookworm-security) renamed to the
    target's codename. Another distribution (Ubuntu for a Debian controller): none."""
    if not distribution or not controller:
        return []
    ident, codename = distribution.split("/")
    own_ident, own_codename = controller.split("/")
    if ident != own_ident:
        return []
    return [
        replace(s, suite=codename + s.suite[len(own_codename) :])
        for s in sources
        if s.suite == own_codename or s.suite.startswith(own_codename + "-")
    ]


@dataclass(frozen=True)
class Deb:
    name: str
    version: str
    url: str
    filename: str  # the file's name in the repository
    sha256: str
    stanza: str  # its Packages entry, Filename pointing into the flat repository


class AptRoot:
    """apt for one distribution and architecture, in a folder of its own."""

    def __init__(self, cache: Path, distribution: str, machine: str, sources: list[AptSource]):
        if machine not in DPKG_ARCH:
            raise AptUnavailable(f"no Debian architecture for {machine!r}")
        self.arch = DPKG_ARCH[machine]
        self.key = f"{distribution.replace('/', '-')}-{self.arch}"
        self.root = cache / "apt" / self.key
        self.sources = sources

    def options(self) -> list[str]:
        root = self.root
        settings = {
            "Dir::Etc::SourceList": root / "sources.list",
            "Dir::Etc::SourceParts": root / "sources.list.d",
            "Dir::Etc::Preferences": root / "preferences",
            "Dir::Etc::PreferencesParts": root / "preferences.d",
            "Dir::State::Lists": root / "lists",
            "Dir::State::status": root / "status",
            "Dir::Cache": root / "cache",
            "APT::Architecture": self.arch,
            "APT::Architectures": self.arch,
            "Acquire::Languages": "none",
        }
        if os.geteuid() == 0:  # apt's _apt user cannot read a folder under root's home
            settings["APT::Sandbox::User"] = "root"
        return [arg for key, value in settings.items() for arg in ("-o", f"{key}={value}")]

    @contextlib.contextmanager
    def _locked(self):
        """One apt at a time in this root (two bundle commands, or test workers, at once)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / "jetson-env.lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def update(self) -> None:
        with self._locked():
            for folder in APT_ROOT_FOLDERS:
                (self.root / folder).mkdir(parents=True, exist_ok=True)
            (self.root / "status").write_text("")
            (self.root / "preferences").write_text("")
            sources = "".join(s.line() + "\n" for s in self.sources)
            (self.root / "sources.list").write_text(sources)
            self._run(["apt-get", "-q", *self.options(), "update"], "apt-get update")

    def closure(self, packages: list[str]) -> list[Deb]:
        """The .debs that installing `packages` on an empty system takes (no recommends)."""
        with self._locked():
            return self._closure(packages)

    def _closure(self, packages: list[str]) -> list[Deb]:
        uris = self._run(
            [*APT_GET_PRINT_URIS, *self.options(), "install", *packages],
            f"resolving {' '.join(packages)}",
        )
        urls = {}
        for line in uris.splitlines():
            match = re.match(r"'([^']+)' (\S+) \d+ ", line)
            if match:
                url = match.group(1)
                urls[urllib.parse.unquote(url.rsplit("/", 1)[-1])] = url
        if not urls:
            return []
        # The candidate versions, which --print-uris took (a file name lacks the epoch).
        names = sorted({name.split("_", 1)[0] for name in urls})
        shown = self._run(
            ["apt-cache", *self.options(), "show", "--no-all-versions", *names], "apt-cache show"
        )
        debs = []
        for stanza in re.split(r"\n\s*\n", shown.strip()):
            fields = _deb822(stanza)
            filename = fields["filename"].rsplit("/", 1)[-1]
            if filename not in urls or not fields.get("sha256"):
                continue
            debs.append(
                Deb(
                    fields["package"],
                    fields["version"],
                    urls.pop(filename),
                    filename,
                    fields["sha256"],
                    re.sub(r"(?m)^Filename: .*$", f"Filename: ./{filename}", stanza.strip()),
                )
            )
        if urls:
            raise AptUnavailable(f"apt-cache has no entry for {', '.join(sorted(urls))}")
        return debs

    def _run(self, argv: list[str], what: str) -> str:
        env = {**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"}
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=APT_TIMEOUT_S, env=env, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AptUnavailable(f"{what}: {exc}") from None
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if line.startswith("E:")]
            raise AptUnavailable(f"{what}: {'; '.join(errors) or proc.stderr.strip()[-300:]}")
        return proc.stdout


def open_root(cache: Path, distribution: str, machine: str) -> AptRoot:
    """apt for the target, its package lists fetched; AptUnavailable says why not."""
    if shutil.which("apt-get") is None:
        raise AptUnavailable("the controller has no apt-get")
    controller = controller_distribution()
    sources = sources_for(distribution, controller, controller_sources())
    if not sources:
        raise AptUnavailable(
            f"the controller's apt sources ({controller or 'unknown distribution'}) do not "
            f"serve {distribution or 'an unknown distribution'}"
        )
    root = AptRoot(cache, distribution, machine, sources)
    root.update()
    return root


def repository_index(previous: str, stanzas: dict[str, str], present: set[str]) -> bytes:
    """The Packages file of a flat repository: the entries of its `previous` Packages text
    and `stanzas` (file name -> Packages entry, this run's), for the .debs `present` (file
    names) only. The caller writes it and Release (release_of) into the repository."""
    known = {
        name: stanza
        for name, stanza in parse_packages(previous)
        if "/" not in name and not name.startswith(".")
    }
    known.update(stanzas)
    entries = [known[name] for name in sorted(known) if name in present]
    return ("\n\n".join(entries) + "\n").encode() if entries else b""


def release_of(packages: bytes) -> bytes:
    """An unsigned Release that pins `packages` by sha256, with a Date apt accepts (it warns
    without one) that no clock skew puts in the future."""
    sha256 = hashlib.sha256(packages).hexdigest()
    return (
        f"Date: Sat, 01 Jan 2000 00:00:00 UTC\nSHA256:\n {sha256} {len(packages)} Packages\n"
    ).encode()


def files_by_package(text: str) -> dict[str, list[str]]:
    """Package name -> the .deb files that hold it, from a Packages file's text."""
    out: dict[str, list[str]] = {}
    for filename, stanza in parse_packages(text):
        out.setdefault(_deb822(stanza).get("package", ""), []).append(filename)
    return out


def parse_packages(text: str) -> list[tuple[str, str]]:
    """(file name, entry) of each stanza of a Packages file. A flat repository's Filename
    is `./NAME`: the file name is NAME, unchecked here (a bundle's reader checks it)."""
    out = []
    for stanza in re.split(r"\n\s*\n", text.strip()):
        filename = _deb822(stanza).get("filename", "")
        if filename:
            out.append((filename.removeprefix("./"), stanza.strip()))
    return out


def download_line(packages: list[str]) -> str:
    """What to run on a connected machine of the target's distribution to get the .debs,
    dependencies included."""
    names = " ".join(shlex.quote(p) for p in packages)
    return (
        "apt-get download $(apt-cache depends --recurse --no-recommends --no-suggests "
        "--no-conflicts --no-breaks --no-replaces --no-enhances "
        f"{names} | grep '^[a-z0-9]' | sort -u)"
    )
