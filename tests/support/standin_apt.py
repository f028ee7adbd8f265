"""A stand-in for NVIDIA's Jetson apt repository, signed and served over HTTPS on loopback.

NVIDIA's repository is not reachable here. This one has the same shape (suites named
r<major>.<minor>, component main, an InRelease signed by a repository key that is
published as an armored .asc file) and holds packages named like JetPack's
(cuda-toolkit-12-6, libcudnn9-dev-cuda-12, ...), taken from the version matrix, whose
contents are STAND-INs: the CUDA toolkit package ships the test hosts' staged toolkit
tree (tests/fixtures/hosts/*/usr/local/cuda-X.Y: version file and folders, no
binaries), JetPack 4's nvidia-container-csv-* packages (the docker_runtime role's
docker_runtime_csv_packages) a CSV mount list naming their own STAND-IN marker, JetPack's
TensorRT packages (the tensorrt role's, with python3-libnvinfer and libnvinfer<major> as their
dependencies) a STAND-IN libnvinfer exporting getInferLibVersion and STAND-IN bindings in the
system Python's dist-packages that load it, every other package a STAND-IN marker file.

The TLS certificates and the signing key are made once per machine and kept under
~/.cache/jetson-env/standin-apt/ (a container base that trusts the CA stays cached);
the repository itself is rebuilt in a temporary folder for each test session.
"""

import datetime
import functools
import hashlib
import http.server
import ipaddress
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from jetson_env import roles
from support.hosts import CACHE, FIXTURES, short_hash
from support.standins import BINDINGS_INIT, COMPILERS, build_libnvinfer

STATE = CACHE / "standin-apt"
SYSTEM_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
KEY_NAME = "jetson-env STAND-IN Jetson apt repository <standin-apt@jetson-env.invalid>"
MAINTAINER = "jetson-env tests <tests@jetson-env.invalid>"
# Where hosts and image bases put the stand-in CA for update-ca-certificates.
CA_IN_HOST = "/usr/local/share/ca-certificates/jetson-env-standin-apt.crt"


# JetPack 4's CSV mount lists and their packages, as the docker_runtime role knows them.
CSV_DIR = roles.default("docker_runtime", "csv_dir")
CSV_PACKAGES = roles.default("docker_runtime", "csv_packages")
# JetPack's TensorRT packages: the tensorrt role's, and what they bring (Depends, as JetPack's
# do): python3-libnvinfer ships the bindings for the system Python (the test hosts' Debian 12:
# Python 3.11; JetPack 6's is 3.10) in its dist-packages, libnvinfer<major> the library.
TENSORRT_PACKAGES = roles.default("tensorrt", "apt_packages")
HOST_PYTHON = "python3.11"
DEB_MACHINES = {"arm64": "aarch64", "amd64": "x86_64"}


@dataclass(frozen=True)
class Tls:
    ca: Path  # the CA certificate (PEM) hosts and containers must trust
    cert: Path
    key: Path
    bundle: Path  # the system's CAs plus ours, for the controller (SSL_CERT_FILE)


@dataclass(frozen=True)
class SigningKey:
    home: Path  # GNUPGHOME
    armored: bytes  # what the repository publishes as its .asc
    binary_sha256: str  # the pin jetpack_apt checks (sha256 of the dearmored key)
    fingerprint: str


@dataclass(frozen=True)
class StandinApt:
    url: str  # the repository: <url>/dists/<suite>/InRelease
    key_url: str
    key: SigningKey
    tls: Tls
    requests: list[str]  # paths requested so far, in order

    def playbook_vars(self) -> dict:
        """jetpack_apt's overrides that point it at this repository."""
        return {
            "jetpack_apt_url": self.url,
            "jetpack_apt_key_url": self.key_url,
            "jetpack_apt_key_sha256": self.key.binary_sha256,
            "jetpack_apt_key_fingerprint": self.key.fingerprint,
        }


def tls_files() -> Tls:
    """A CA and a certificate for 127.0.0.1 and localhost, made once and kept."""
    folder = STATE / "tls"
    tls = Tls(
        folder / "ca.pem", folder / "server.pem", folder / "server.key", folder / "bundle.pem"
    )
    if not tls.bundle.exists():
        folder.mkdir(parents=True, exist_ok=True)
        _make_tls(tls)
    return tls


def _make_tls(tls: Tls) -> None:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jetson-env STAND-IN test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    tls.ca.write_bytes(ca_pem)
    tls.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tls.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    tls.bundle.write_bytes(SYSTEM_CA_BUNDLE.read_bytes() + b"\n" + ca_pem)


def _gpg(home: Path, *args: str, data: bytes | None = None) -> bytes:
    result = subprocess.run(
        ["gpg", "--batch", "--quiet", "--homedir", str(home), *args],
        input=data, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"gpg {' '.join(args)} failed: {result.stderr.decode()}")
    return result.stdout


def signing_key() -> SigningKey:
    """An ed25519 signing key in its own GNUPGHOME, made once and kept."""
    home = STATE / "gnupg"
    if not (home / "pubring.kbx").exists():
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True, mode=0o700)
        _gpg(home, "--passphrase", "", "--quick-gen-key", KEY_NAME, "ed25519", "sign", "never")
    colons = _gpg(home, "--with-colons", "--list-keys", KEY_NAME).decode()
    fingerprint = next(
        line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:")
    )
    binary = _gpg(home, "--export", fingerprint)
    return SigningKey(
        home=home,
        armored=_gpg(home, "--armor", "--export", fingerprint),
        binary_sha256=hashlib.sha256(binary).hexdigest(),
        fingerprint=fingerprint,
    )


def _staged_toolkit(cuda: str) -> Path | None:
    """The test hosts' staged toolkit tree for a CUDA major.minor, if a host has one."""
    return next(iter(sorted(FIXTURES.glob(f"*/usr/local/cuda-{cuda}"))), None)


def _tensorrt_tree(name: str, tensorrt: str, arch: str, root: Path) -> tuple[str, list[str]]:
    """A TensorRT package of JetPack (tensorrt, python3-libnvinfer[-dev], libnvinfer<major>) as
    a STAND-IN: (its version, what it depends on)."""
    major = tensorrt.split(".")[0]
    version = ".".join([*tensorrt.split("."), "0"][:3])
    machine = DEB_MACHINES[arch]
    if name == f"libnvinfer{major}":
        build_libnvinfer(version, root / "usr" / "lib" / f"{machine}-linux-gnu",
                         COMPILERS[machine])  # fmt: skip
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN" / "triggers").write_text("activate-noawait ldconfig\n")
        return f"{version}-1", []
    if name == "python3-libnvinfer":
        dist = root / "usr" / "lib" / HOST_PYTHON / "dist-packages"
        (dist / "tensorrt").mkdir(parents=True)
        (dist / "tensorrt" / "__init__.py").write_text(
            BINDINGS_INIT.format(major=major, version=version)
        )
        info = dist / f"tensorrt-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: tensorrt\nVersion: {version}\n"
            "Summary: STAND-IN (jetson-env tests)\n"
        )
        return f"{version}-1", [f"libnvinfer{major}"]
    depends = {"tensorrt": [f"libnvinfer{major}", "python3-libnvinfer"],
               "python3-libnvinfer-dev": ["python3-libnvinfer"]}.get(name, [])  # fmt: skip
    return f"{version}-1", depends


def _package_tree(name: str, cuda: str, root: Path) -> str:
    """Fill `root` with the package's files; returns its version."""
    toolkit = _staged_toolkit(cuda)
    if name == f"cuda-toolkit-{cuda.replace('.', '-')}" and toolkit is not None:
        dest = root / "usr" / "local" / f"cuda-{cuda}"
        shutil.copytree(toolkit, dest, ignore=shutil.ignore_patterns(".gitkeep"))
        (root / "usr" / "local" / "cuda").symlink_to(f"cuda-{cuda}")
        version_file = dest / "version.json"
        if version_file.exists():
            return json.loads(version_file.read_text())["cuda"]["version"] + "-1"
    doc = root / "usr" / "share" / "doc" / name
    doc.mkdir(parents=True)
    (doc / "STAND-IN").write_text(f"STAND-IN for NVIDIA's {name} package (jetson-env tests)\n")
    csv = {package: name for name, package in CSV_PACKAGES.items()}.get(name)
    if csv is not None:
        listed = root / CSV_DIR.lstrip("/") / csv
        listed.parent.mkdir(parents=True)
        listed.write_text(f"# STAND-IN for NVIDIA's {name} (jetson-env tests)\n"
                          f"dir, /usr/share/doc/{name}\n")  # fmt: skip
    return f"{cuda}.0-1"


def _build_deb(name: str, cuda: str, arch: str, pool: Path, work: Path,
               tensorrt: str | None = None) -> Path:  # fmt: skip
    root = work / name
    depends: list[str] = []
    if tensorrt is not None:
        version, depends = _tensorrt_tree(name, tensorrt, arch, root)
        doc = root / "usr" / "share" / "doc" / name
        doc.mkdir(parents=True)
        (doc / "STAND-IN").write_text(f"STAND-IN for NVIDIA's {name} package (jetson-env tests)\n")
    else:
        version = _package_tree(name, cuda, root)
    (root / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: {MAINTAINER}\n"
        + (f"Depends: {', '.join(depends)}\n" if depends else "")
        + f"Section: devel\nPriority: optional\n"
        f"Description: STAND-IN for NVIDIA's {name} (jetson-env tests)\n"
        " Built by tests/support/standin_apt.py; contains no NVIDIA software.\n"
    )
    deb = pool / f"{name}_{version}_{arch}.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)],
        check=True, capture_output=True,
    )  # fmt: skip
    return deb


def _packages_stanza(deb: Path, repo: Path) -> str:
    control = subprocess.run(
        ["dpkg-deb", "--field", str(deb)], check=True, capture_output=True, text=True
    ).stdout.strip()
    data = deb.read_bytes()
    return (
        f"{control}\nFilename: {deb.relative_to(repo)}\nSize: {len(data)}\n"
        f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
    )


def build_repository(
    repo: Path, suites: dict[str, Iterable[tuple[str, ...]]], key: SigningKey, arch: str = "arm64"
) -> None:
    """suites: {"r36.4": [(package, cuda major.minor), ...]} -> a signed repository in `repo`."""
    (repo / "jetson-ota-standin.asc").write_bytes(key.armored)
    with tempfile.TemporaryDirectory() as scratch:
        for suite, packages in suites.items():
            pool = repo / "pool" / suite
            pool.mkdir(parents=True)
            # (package, CUDA major.minor[, TensorRT version: one of JetPack's TensorRT packages])
            debs = [
                _build_deb(name, cuda, arch, pool, Path(scratch) / suite, *rest)
                for name, cuda, *rest in sorted(set(packages))
            ]
            stanzas = [_packages_stanza(deb, repo) for deb in debs]
            dist = repo / "dists" / suite
            index = dist / "main" / f"binary-{arch}" / "Packages"
            index.parent.mkdir(parents=True)
            index.write_text("\n".join(stanzas))
            listed = index.read_bytes()
            date = datetime.datetime.now(datetime.UTC).strftime("%a, %d %b %Y %H:%M:%S UTC")
            release = (
                f"Origin: jetson-env STAND-IN\nLabel: jetson-env STAND-IN\nSuite: {suite}\n"
                f"Codename: {suite}\nDate: {date}\nArchitectures: {arch}\nComponents: main\n"
                f"SHA256:\n {hashlib.sha256(listed).hexdigest()} {len(listed)} "
                f"main/binary-{arch}/Packages\n"
            )
            (dist / "Release").write_text(release)
            signed = _gpg(
                key.home, "--local-user", key.fingerprint, "--digest-algo", "SHA256",
                "--clearsign", data=release.encode(),
            )  # fmt: skip
            (dist / "InRelease").write_bytes(signed)


class _RecordingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves quietly; appends each requested path to `requests` (what apt fetched)."""

    def __init__(self, *args, requests: list[str], **kwargs):
        self.requests = requests
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):
        self.requests.append(self.path)


@contextmanager
def serve(repo: Path, tls: Tls, requests: list[str], port: int = 0) -> Iterator[str]:
    """Serve `repo` over HTTPS on 127.0.0.1 (on `port` if it is free, else any), recording
    request paths; yields the base URL."""
    handler = functools.partial(_RecordingHandler, directory=str(repo), requests=requests)
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError:  # taken: another session's
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert, tls.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        subprocess.run(
            ["gpgconf", "--homedir", str(STATE / "gnupg"), "--kill", "gpg-agent"],
            capture_output=True, check=False,
        )  # fmt: skip


def suites_for(releases: Iterable) -> dict[str, list[tuple[str, ...]]]:
    """Every jetpack_packages set of these matrix releases, by NVIDIA's suite name."""
    suites: dict[str, list[tuple[str, ...]]] = {}
    for release in releases:
        suite = "r" + ".".join(release.l4t.split(".")[:2])
        for names in release.jetpack_packages.values():
            suites.setdefault(suite, []).extend((name, release.cuda) for name in names)
        if release.family == "r32":
            suites[suite].extend((name, release.cuda) for name in CSV_PACKAGES.values())
        major = release.tensorrt.split(".")[0]
        suites[suite].extend(
            (name, release.cuda, release.tensorrt)
            for name in [*TENSORRT_PACKAGES, "python3-libnvinfer", f"libnvinfer{major}"]
        )
    return suites


@contextmanager
def standin_apt(
    releases: Iterable, arch: str = "arm64", steady_as: str | None = None
) -> Iterator[StandinApt]:
    """The repository with the packages of these matrix releases, for Debian architecture
    `arch` (amd64 for an x86 host standing in for a Jetson), served while in use. With
    `steady_as`, on a port derived from that name and the test prefix when it is free: its
    URL, in a kept provisioned host's apt sources (support/provisioned.py), stays the same
    from one session to the next."""
    tls, key = tls_files(), signing_key()
    with tempfile.TemporaryDirectory(prefix="jetson-env-standin-apt-") as folder:
        repo = Path(folder)
        os.chmod(repo, 0o755)
        build_repository(repo, suites_for(releases), key, arch)
        requests: list[str] = []
        port = 0
        if steady_as:
            prefix = os.environ.get("JETSON_ENV_TEST_PREFIX", "")
            port = 20000 + int(short_hash(prefix, steady_as), 16) % 20000
        with serve(repo, tls, requests, port) as url:
            yield StandinApt(url, f"{url}/jetson-ota-standin.asc", key, tls, requests)


def trust_in_host(host, tls: Tls) -> None:
    """Make a test host's apt and Python trust the stand-in CA, as a site CA would be."""
    host.copy_in(tls.ca, CA_IN_HOST)
    host.exec(["update-ca-certificates"])
