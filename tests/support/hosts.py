"""Test hosts: Docker containers that stand in for Jetsons and x86 machines.

Images come in three layers, each tagged with a hash of its inputs, so a layer is
built once per machine and rebuilt only when its inputs change:

    jetson-env-base:<arch>-<hash>     Debian from debootstrap (arm64 runs under qemu)
    jetson-env-runtime:<arch>-<hash>  + a venv at /opt/jetson-env with the runtime deps
    jetson-env-host:<name>-<hash>     + the files a real host of that kind has

Nothing is ever pulled from a registry: every FROM and `docker run` names a local
tag that was checked or built first. The debootstrapped root file systems are also
kept as tarballs under ~/.cache/jetson-env/base/, so an emptied image store is
refilled by `docker import` in seconds.
"""

import ast
import fcntl
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import IO, ClassVar

import tomllib

from jetson_env.bundle.controller import one_build_of
from support.image_store import LABEL
from support.standins import (
    STAGED_CUDA_VERSION,
    build_cuda_toolkit,
    cuda_release,
    deterministic_tar,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hosts"
LOG_DIR = REPO_ROOT / ".cache" / "test-hosts"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "jetson-env"
# What the tests fetch or derive that never changes under its name (a pinned wheel, a release's
# metadata): outside the checkout, so that a fresh clone (CI's) reuses it.
TESTS_CACHE = CACHE / "tests"
BASE_CACHE = CACHE / "base"

SUITE = "bookworm"
# Debian unstable: its python3 is 3.14, a stand-in for Ubuntu 26.04 LTS's Python (a host of the
# next release of its kind). From the same mirror as SUITE; it moves, so a machine keeps the tree
# it bootstrapped first (the base tarball's key names the suite, not a date).
NEXT_SUITE = "sid"
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip", "python3-apt", "ca-certificates")
# Part of the base image hash: bump it when BaseImage._bootstrap() changes what it makes.
BASE_RECIPE_VERSION = "2"
# When the base's (emptied) apt lists were last updated: bookworm's release day.
APT_LISTS_MTIME = 1686355200  # 2023-06-10T00:00:00Z
VENV = "/opt/jetson-env"
DEVICE_TREE_DIR = "/etc/jetson-env-fixture/device-tree"
AARCH64_BINFMT = "/proc/sys/fs/binfmt_misc/qemu-aarch64"
# pip options that decide how an index is reached; the hosts get the machine's values.
PIP_NETWORK_SETTINGS = (
    "index-url",
    "extra-index-url",
    "trusted-host",
    "proxy",
    "cert",
    "timeout",
    "default-timeout",
)
HOST_PIP_CA = "/etc/ssl/certs/jetson-env-test-pip-ca.pem"
# pytest-xdist runs the suite in worker processes (gw0, gw1, ...), each with hosts of its own;
# JETSON_ENV_TEST_PREFIX separates concurrent runs from two checkouts on one machine.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
CONTAINER_PREFIX = os.environ.get("JETSON_ENV_TEST_PREFIX", "jetson-env-test-") + (
    f"{XDIST_WORKER}-" if XDIST_WORKER else ""
)
BUILD_TIMEOUT_S = 1800
ENGINE_HINT = "Run `bash scripts/test` once: it installs and starts the Docker engine."

DEBIAN_ARCH_TO_MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}


class HostSetupError(RuntimeError):
    """A test host could not be built or started; the message says why and where to look."""


class HostCommandError(subprocess.CalledProcessError):
    """A command inside a test host failed; unlike its parent, str() shows the output."""

    def __init__(self, host: str, result: subprocess.CompletedProcess):
        super().__init__(result.returncode, result.args, result.stdout, result.stderr)
        self.host = host

    def __str__(self) -> str:
        return (
            f"{shlex.join(self.cmd)} exited {self.returncode} on test host {self.host}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


@dataclass(frozen=True)
class HostSpec:
    name: str
    debian_arch: str
    suite: str = SUITE

    @property
    def machine(self) -> str:
        """What `uname -m` prints inside the host."""
        return DEBIAN_ARCH_TO_MACHINE[self.debian_arch]

    @property
    def container(self) -> str:
        return CONTAINER_PREFIX + self.name

    @property
    def fixture_dir(self) -> Path:
        """Files copied to / in the host image; a host without one is a plain Debian machine."""
        return FIXTURES / self.name


HOSTS = {
    spec.name: spec
    for spec in (
        HostSpec("x86-debian12", "amd64"),
        HostSpec("nano-r32.4.3", "arm64"),
        HostSpec("xavier-r35.4.1", "arm64"),
        HostSpec("orin-r36.4.3", "arm64"),
        HostSpec("x86-python3.14", "amd64", NEXT_SUITE),
    )
}
JETSON_HOSTS = ("nano-r32.4.3", "xavier-r35.4.1", "orin-r36.4.3")


def short_hash(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:12]


def _run_logged(cmd: Sequence[str | os.PathLike], log: Path) -> None:
    """Run a long build step with its output appended to `log`; fail with the log's tail."""
    log.parent.mkdir(parents=True, exist_ok=True)
    args = [os.fspath(arg) for arg in cmd]
    with log.open("a") as out:
        out.write(f"\n$ {shlex.join(args)}\n")
        out.flush()
        started = time.monotonic()
        try:
            result = subprocess.run(
                args, stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise HostSetupError(
                f"{shlex.join(args)} ran longer than {BUILD_TIMEOUT_S}s; see {log}"
            ) from None
        out.write(f"# exit {result.returncode} after {time.monotonic() - started:.0f}s\n")
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise HostSetupError(
            f"{shlex.join(args)} exited {result.returncode}; last lines of {log}:\n{tail}"
        )


def _docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def docker_engine_problem() -> str | None:
    """None when the Docker engine answers, else why it does not."""
    try:
        result = _docker("info", "--format", "{{.ServerVersion}}", timeout=30)
    except FileNotFoundError:
        return "the docker CLI is not installed"
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 30s"
    if result.returncode != 0:
        return f"`docker info` failed: {result.stderr.strip()}"
    return None


def image_exists(tag: str) -> bool:
    return _docker("image", "inspect", "--format", "{{.Id}}", tag).returncode == 0


@contextmanager
def _file_lock(name: str) -> Iterator[None]:
    """Serialise builds of one image across threads and concurrent pytest runs."""
    locks = CACHE / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _ensure_image(tag: str, build: Callable[[], None]) -> str:
    """Build `tag` unless it exists; concurrent callers wait for one build."""
    if not image_exists(tag):
        with _file_lock(tag.replace(":", "-")):
            if not image_exists(tag):
                build()
    return tag


@cache
def apt_sources_parser():
    """The apt source parsing of the collection's apt_source_indexed module (one implementation)."""
    path = REPO_ROOT / "ansible_collections/jetson_env/jetson/plugins/modules/apt_source_indexed.py"
    spec = importlib.util.spec_from_file_location("apt_source_indexed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def debian_mirror() -> str:
    """The Debian mirror this machine's apt uses for SUITE (deb822 or one-line sources); it
    serves NEXT_SUITE too."""
    apt_dir = Path("/etc/apt")
    parser = apt_sources_parser()
    files = [
        *(
            (path, parser.deb822_entries)
            for path in sorted((apt_dir / "sources.list.d").glob("*.sources"))
        ),
        (apt_dir / "sources.list", parser.one_line_entries),
        *(
            (path, parser.one_line_entries)
            for path in sorted((apt_dir / "sources.list.d").glob("*.list"))
        ),
    ]
    for sources, entries in files:
        if not sources.exists():
            continue
        for uri, suite in entries(sources.read_text()):
            if suite == SUITE:
                return uri.rstrip("/")
    raise HostSetupError(
        f"no 'deb' source for {SUITE} in {apt_dir}/sources.list(.d): the test hosts are "
        "bootstrapped from the mirror this machine's apt uses"
    )


def _unmount_below(path: Path) -> None:
    """Undo mounts a killed debootstrap left in its chroot, so removing the tree is safe."""
    prefix = os.fspath(path.resolve()) + "/"
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p.startswith(prefix)), reverse=True):
        subprocess.run(["umount", "-l", point], check=False)


def _remove_tree(path: Path) -> None:
    if path.exists():
        _unmount_below(path)
        shutil.rmtree(path)


@dataclass(frozen=True)
class BaseImage:
    """Debian from debootstrap, imported into Docker; the tree is cached as a tarball."""

    debian_arch: str
    suite: str = SUITE

    @property
    def debootstrap_options(self) -> list[str]:
        return [
            f"--arch={self.debian_arch}",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
        ]

    @property
    def key(self) -> str:
        """Hash of what determines the tree; the mirror is left out, it serves the same suite."""
        return short_hash(BASE_RECIPE_VERSION, self.suite, *self.debootstrap_options)

    @property
    def tag(self) -> str:
        return f"jetson-env-base:{self.debian_arch}-{self.key}"

    @property
    def tarball(self) -> Path:
        return BASE_CACHE / f"{self.debian_arch}-{self.key}.tar"

    def ensure(self) -> str:
        return _ensure_image(self.tag, self._import)

    def _import(self) -> None:
        if not self.tarball.exists():
            self._bootstrap()
        _run_logged(["docker", "import", self.tarball, self.tag], _log_for(self.tag))

    def _bootstrap(self) -> None:
        if shutil.which("debootstrap") is None:
            raise HostSetupError(f"debootstrap is not installed. {ENGINE_HINT}")
        if self.debian_arch == "arm64" and not Path(AARCH64_BINFMT).exists():
            raise HostSetupError(f"aarch64 emulation is off ({AARCH64_BINFMT}). {ENGINE_HINT}")
        workdir = self.tarball.with_suffix(".work")
        _remove_tree(workdir)
        rootfs = workdir / "rootfs"
        log = _log_for(self.tag)
        try:
            _run_logged(
                ["debootstrap", *self.debootstrap_options, self.suite, rootfs, debian_mirror()],
                log,
            )
            for leftovers in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for path in (rootfs / leftovers).glob("*"):
                    if path.is_file():
                        path.unlink()
            # Like an image or a flashed device, the cache was made long before anything is
            # provisioned: apt's age test sees it stale whatever the age of the Docker image.
            (rootfs / "var/lib/apt/periodic/update-success-stamp").unlink(missing_ok=True)
            os.utime(rootfs / "var/lib/apt/lists", (APT_LISTS_MTIME, APT_LISTS_MTIME))
            partial = workdir / "rootfs.tar"
            _run_logged(["tar", "--numeric-owner", "-C", rootfs, "-cf", partial, "."], log)
            partial.replace(self.tarball)
        finally:
            _remove_tree(workdir)


def _log_for(tag: str) -> Path:
    return LOG_DIR / f"{tag.replace(':', '-')}.log"


def runtime_dependencies() -> list[str]:
    """The package's runtime requirements, as pyproject.toml declares them."""
    with (REPO_ROOT / "pyproject.toml").open("rb") as pyproject:
        return list(tomllib.load(pyproject)["project"]["dependencies"])


def provision_requirements() -> list[str]:
    """The `provision` extra's requirements (ansible-core), as pyproject.toml declares them."""
    with (REPO_ROOT / "pyproject.toml").open("rb") as pyproject:
        return list(tomllib.load(pyproject)["project"]["optional-dependencies"]["provision"])


@cache
def controller_pip_settings() -> dict[str, str]:
    """This machine's pip settings for reaching an index (its config files and PIP_* variables).

    The hosts reach the network like the machine does, and so need the same index, proxy
    and CA settings. Values naming the machine's own files (file:// indexes) stay behind.
    """
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    from_files, from_env = {}, {}
    for line in listing.splitlines():
        name, _, quoted = line.partition("=")
        section, _, key = name.rpartition(".")
        if key not in PIP_NETWORK_SETTINGS:
            continue
        words = [w for w in ast.literal_eval(quoted).split() if not w.startswith("file:")]
        if words:
            (from_env if section == ":env:" else from_files)[key] = " ".join(words)
    return from_files | from_env


def _tree_digest(root: Path) -> str:
    """Hash of a file tree as git sees it: paths, executable bits, symlink targets, contents."""
    parts = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink():
            parts += [relative, "->", os.readlink(path)]
        elif path.is_file():
            executable = bool(path.stat().st_mode & 0o111)
            parts += [relative, str(executable), path.read_bytes()]
        else:
            parts += [relative, "/"]
    return short_hash(*parts)


@dataclass(frozen=True)
class BuildContext:
    """A generated Dockerfile plus the files it copies; its digest keys the image."""

    dockerfile: str
    files: dict[str, bytes] = field(default_factory=dict)
    tree: Path | None = None  # copied into the context as rootfs/

    @property
    def digest(self) -> str:
        tree = _tree_digest(self.tree) if self.tree else ""
        return short_hash(
            self.dockerfile, tree, *(p for item in sorted(self.files.items()) for p in item)
        )

    def build(self, tag: str) -> None:
        with tempfile.TemporaryDirectory(prefix="jetson-env-build-") as directory:
            context = Path(directory)
            (context / "Dockerfile").write_text(self.dockerfile)
            for name, content in self.files.items():
                (context / name).write_bytes(content)
            if self.tree:
                shutil.copytree(
                    self.tree,
                    context / "rootfs",
                    symlinks=True,
                    ignore=shutil.ignore_patterns(".gitkeep"),
                )
            build = ["docker", "build", "--force-rm", "--network", "host", "--label", f"{LABEL}=1"]
            _run_logged([*build, "--tag", tag, context], _log_for(tag))


def with_controller_pip_settings(base: str) -> tuple[list[str], dict[str, bytes]]:
    """Dockerfile lines and files: FROM base, plus this machine's pip index/CA settings, so pip
    inside reaches the registry the way the controller does."""
    settings = dict(controller_pip_settings())
    files, lines = {}, [f"FROM {base}"]
    if "cert" in settings:
        files["pip-ca.pem"] = Path(settings["cert"]).read_bytes()
        settings["cert"] = HOST_PIP_CA
        lines.append(f"COPY pip-ca.pem {HOST_PIP_CA}")
    if settings:
        pip_conf = "[global]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(settings.items()))
        files["pip.conf"] = pip_conf.encode()
        lines.append("COPY pip.conf /etc/pip.conf")
    return lines, files


@dataclass(frozen=True)
class RuntimeImage:
    """The base plus the venv the package is later installed into, with its dependencies."""

    debian_arch: str
    suite: str = SUITE

    @cached_property
    def context(self) -> BuildContext:
        lines, files = with_controller_pip_settings(BaseImage(self.debian_arch, self.suite).tag)
        install = shlex.join(
            [f"{VENV}/bin/pip", "install", "--no-cache-dir", *runtime_dependencies()]
        )
        lines.append(f"RUN python3 -m venv {VENV} && {install}")
        return BuildContext("\n".join(lines) + "\n", files)

    @property
    def tag(self) -> str:
        return f"jetson-env-runtime:{self.debian_arch}-{self.context.digest}"

    def ensure(self) -> str:
        return _ensure_image(self.tag, self._build)

    def _build(self) -> None:
        BaseImage(self.debian_arch, self.suite).ensure()
        self.context.build(self.tag)


@dataclass(frozen=True)
class HostImage:
    """The runtime image plus the host's staged files (nv_tegra_release, device tree, CUDA)."""

    spec: HostSpec

    @cached_property
    def context(self) -> BuildContext:
        lines = [f"FROM {RuntimeImage(self.spec.debian_arch, self.spec.suite).tag}"]
        tree = self.spec.fixture_dir if self.spec.fixture_dir.is_dir() else None
        if tree:
            lines.append("COPY rootfs/ /")
        if tree and (tree / DEVICE_TREE_DIR.lstrip("/")).is_dir():
            lines.append(f"ENV JETSON_ENV_DEVICE_TREE={DEVICE_TREE_DIR}")
        return BuildContext("\n".join(lines) + "\n", tree=tree)

    @property
    def tag(self) -> str:
        return f"jetson-env-host:{self.spec.name}-{self.context.digest}"

    def ensure(self) -> str:
        return _ensure_image(self.tag, self._build)

    def _build(self) -> None:
        RuntimeImage(self.spec.debian_arch, self.spec.suite).ensure()
        self.context.build(self.tag)


@dataclass(frozen=True)
class DerivedHostImage:
    """A host image (`base_host`) with more in it: `context`, a Dockerfile FROM the host image's
    tag, tagged `jetson-env-host:<base_host>-<PART>-<digest>`."""

    PART: ClassVar[str]
    base_host: str

    @cached_property
    def context(self) -> BuildContext:
        raise NotImplementedError

    @property
    def tag(self) -> str:
        return f"jetson-env-host:{self.base_host}-{self.PART}-{self.context.digest}"

    def ensure(self) -> str:
        return _ensure_image(self.tag, self._build)

    def _build(self) -> None:
        HostImage(HOSTS[self.base_host]).ensure()
        self.context.build(self.tag)


@dataclass(frozen=True)
class ProvisionExtraImage(DerivedHostImage):
    """A host image (`base_host`) whose /opt/jetson-env venv also has the `provision` extra
    (ansible-core): a host that runs `jetson-env provision` or `doctor --fix` on itself, for the
    tests whose subject is not installing it (each still installs the working tree's jetson-env,
    Host.install_project). pip's resolution is an outside input, as for the runtime image."""

    PART = "provision-extra"

    @cached_property
    def context(self) -> BuildContext:
        install = shlex.join([f"{VENV}/bin/pip", "install", "--no-cache-dir",
                              *provision_requirements()])  # fmt: skip
        return BuildContext(f"FROM {HostImage(HOSTS[self.base_host]).tag}\nRUN {install}\n")


@dataclass(frozen=True)
class SshdImage(DerivedHostImage):
    """A host image (`base_host`) with Debian's openssh-server installed, not started: the SSH
    test hosts' (test_doctor_fix, test_provisioning_as_users_run_it), built once for every
    module and worker (a lock on the tag) instead of apt installing it in each host. Every
    container of it has the same host keys; each test still reads them from its own host."""

    PART = "sshd"

    @cached_property
    def context(self) -> BuildContext:
        install = (
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive"
            " apt-get install -y -qq --no-install-recommends openssh-server >/dev/null"
        )
        return BuildContext(f"FROM {HostImage(HOSTS[self.base_host]).tag}\nRUN {install}\n")


@cache
def fresh_clone(dest: Path) -> Path:
    """The checkout's files as a clone would have them (tracked and new, nothing ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.decode().split("\0")):
        source = REPO_ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return dest


@cache
def project_wheel() -> Path:
    """A wheel of the working tree, built once per session and worker on the controller (each
    build took 5-37 s on 2 shared cores, and some 30 tests install it), one build of the tree
    at a time, as `jetson-env bundle` builds its own (controller.one_build_of)."""
    wheel_dir = REPO_ROOT / ".cache" / f"project-wheel{XDIST_WORKER and '-' + XDIST_WORKER}"
    shutil.rmtree(wheel_dir, ignore_errors=True)  # the last session's, of an older tree
    wheel_dir.mkdir(parents=True)
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    with one_build_of(REPO_ROOT):
        _run_logged(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", wheel_dir,
             REPO_ROOT],
            LOG_DIR / "project-wheel.log",
        )  # fmt: skip
    (wheel,) = wheel_dir.glob("jetson_env-*.whl")
    return wheel


@dataclass
class Host:
    """A running test host; commands reach it through `docker exec`."""

    spec: HostSpec
    _installed: bool = field(default=False, repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def arch(self) -> str:
        """The machine architecture as `uname -m` prints it: aarch64 or x86_64."""
        return self.spec.machine

    @property
    def container(self) -> str:
        return self.spec.container

    def exec(
        self,
        cmd: Sequence[str],
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 600,
        user: str | None = None,
    ) -> subprocess.CompletedProcess:
        """`cmd` in the host, as root or as `user` (in their home, HOME set)."""
        if user is not None:
            env = {"HOME": f"/home/{user}", **(env or {})}
        env_args = [
            arg for key, value in (env or {}).items() for arg in ("--env", f"{key}={value}")
        ]
        as_user = ["--user", user, "--workdir", f"/home/{user}"] if user else []
        result = subprocess.run(
            ["docker", "exec", *env_args, *as_user, self.container, *cmd],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        result.args = list(cmd)
        if check and result.returncode != 0:
            raise HostCommandError(self.name, result)
        return result

    def copy_in(self, src: os.PathLike | str, dest: str) -> None:
        result = _docker("cp", os.fspath(src), f"{self.container}:{dest}")
        if result.returncode != 0:
            raise HostSetupError(f"docker cp {src} to {self.name}:{dest}: {result.stderr.strip()}")

    def install_project(self) -> None:
        """Install the working tree's package into /opt/jetson-env (once per session)."""
        if self._installed:
            return
        wheel = project_wheel()
        self.copy_in(wheel, f"/tmp/{wheel.name}")
        self.exec(
            [
                f"{VENV}/bin/pip",
                "install",
                "--quiet",
                "--no-deps",
                "--force-reinstall",
                f"/tmp/{wheel.name}",
            ]
        )
        self._installed = True


def start_container(spec: HostSpec, image: str) -> Host:
    """(Re)start the container `spec.container` from a local image; it idles until removed."""
    _docker("rm", "--force", spec.container)
    options = ["--detach", "--network", "host", "--name", spec.container]
    result = _docker("run", *options, image, "sleep", "infinity")
    if result.returncode != 0:
        raise HostSetupError(f"starting {spec.container} from {image}: {result.stderr.strip()}")
    return Host(spec)


class HostPool:
    """Builds host images in the background and starts each host on first use.

    Containers have fixed names (per pytest-xdist worker), so a session that starts
    hosts holds a machine-wide lock on its names until it ends: a second concurrent
    session waits instead of replacing the first one's containers under it.
    """

    def __init__(self, keep: bool = False):
        self.keep = keep
        self._executor = ThreadPoolExecutor(max_workers=len(HOSTS), thread_name_prefix="test-host")
        self._images: dict[str, Future] = {}
        self._running: dict[str, Host] = {}
        self._lock = threading.Lock()
        self._session_lock: IO[str] | None = None

    def prepare(self, names: Iterable[str]) -> None:
        """Start building these hosts' images now, ahead of the tests that need them."""
        for name in names:
            self._image(name)

    def _image(self, name: str) -> Future:
        with self._lock:
            if name not in self._images:
                self._images[name] = self._executor.submit(HostImage(HOSTS[name]).ensure)
            return self._images[name]

    def get(self, name: str) -> Host:
        image = self._image(name).result()
        with self._lock:
            if name not in self._running:
                self._claim_containers()
                self._running[name] = start_container(HOSTS[name], image)
            return self._running[name]

    def _claim_containers(self) -> None:
        if self._session_lock is not None:
            return
        (CACHE / "locks").mkdir(parents=True, exist_ok=True)
        lock = (CACHE / "locks" / f"{CONTAINER_PREFIX}containers.lock").open("a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            print(
                f"waiting for another session using the test hosts to end (pid {holder})",
                file=sys.__stderr__,
                flush=True,
            )
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        self._session_lock = lock

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        if not self.keep:
            for host in self._running.values():
                _docker("rm", "--force", host.container)
        self._running.clear()
        if self._session_lock is not None:
            self._session_lock.close()
            self._session_lock = None


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, seconds: float = 30) -> None:
    """Until something (a test host's sshd) accepts connections on loopback's `port`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)


# A lived-in host (issue 24): a machine as users have it, built on a clean host image.
LIVED_IN_USER = "jetson"  # uid 1000, passwordless sudo
LIVED_IN_VENV = "/opt/torch-venv"  # root's venv holding a working torch: the roles' target
LIVED_IN_WHEELHOUSE = "/opt/wheelhouse"  # the host's only package source (pip.conf)
# The CUDA release NVIDIA's installer left on a lived-in host: the stand-in toolkit's.
LIVED_IN_CUDA = cuda_release(STAGED_CUDA_VERSION)
LIVED_IN_NVCC = (
    f'#!/bin/sh\n# my nvcc: the toolkit I use\nexec /usr/local/cuda-{LIVED_IN_CUDA}/bin/nvcc "$@"\n'
)
LIVED_IN_DAEMON_JSON = '{\n  "log-level": "warn",\n  "data-root": "/srv/docker"\n}\n'


def lived_in_cuda_tar(work: Path) -> Path:
    """work/cuda.tar: the stand-in toolkit (cuda-LIVED_IN_CUDA/), packed deterministically
    (LivedInImage's cuda_tar: the image's key hashes it)."""
    tree = build_cuda_toolkit(work / "toolkit")
    return deterministic_tar(tree, tree.name, work / "cuda.tar")


@dataclass(frozen=True)
class LivedInImage(DerivedHostImage):
    """A clean host image (`base_host`) lived in: a non-root user with sudo, PEP 668's marker
    on the system Python, a root-made venv (LIVED_IN_VENV) with a working torch (`torch_wheel`,
    or none) and numpy, the user's own /usr/local/bin/nvcc wrapper script, what NVIDIA's CUDA
    installer leaves (cuda-LIVED_IN_CUDA under /usr/local, its ld.so.conf.d file, a
    /usr/local/cuda link managed by update-alternatives), a daemon.json with other keys, no
    Docker engine, ansible-core in /opt/jetson-env (the host's own jetson-env can --fix),
    a wheelhouse with termcolor as pip's only source (/etc/pip.conf: no index), and no apt
    package lists. Start it with start_lived_in(), its network cut."""

    PART = "lived-in"
    cuda_tar: Path  # deterministic (deterministic_tar): cuda-LIVED_IN_CUDA/
    torch_wheel: Path | None = None
    numpy: str = "numpy>=1.26,<3"  # the matrix row's pin, so that it is met

    @cached_property
    def context(self) -> BuildContext:
        files = {"cuda.tar": self.cuda_tar.read_bytes(), "nvcc": LIVED_IN_NVCC.encode(),
                 "daemon.json": LIVED_IN_DAEMON_JSON.encode()}  # fmt: skip
        machine = HOSTS[self.base_host].machine
        cuda, priority = f"/usr/local/cuda-{LIVED_IN_CUDA}", LIVED_IN_CUDA.replace(".", "")
        torch = ""
        if self.torch_wheel is not None:
            files[self.torch_wheel.name] = self.torch_wheel.read_bytes()
            torch = f"/tmp/{self.torch_wheel.name}"
        lines = [
            f"FROM {HostImage(HOSTS[self.base_host]).tag}",
            "COPY . /tmp/",
            "RUN set -eu; apt-get update -qq;"
            " DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sudo;"
            f" useradd -m -u 1000 -s /bin/bash {LIVED_IN_USER};"
            f" echo '{LIVED_IN_USER} ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/{LIVED_IN_USER};"
            f" chmod 0440 /etc/sudoers.d/{LIVED_IN_USER};"
            " echo 'Defaults logfile=/var/log/sudo.log' >/etc/sudoers.d/log;"
            " tar -C /usr/local -xf /tmp/cuda.tar; rm -rf /usr/local/cuda;"
            f" update-alternatives --install /usr/local/cuda cuda {cuda} {priority};"
            f" echo {cuda}/targets/{machine}-linux/lib"
            f" >/etc/ld.so.conf.d/cuda-{LIVED_IN_CUDA.replace('.', '-')}.conf;"
            " install -m 0755 /tmp/nvcc /usr/local/bin/nvcc;"
            " mkdir -p /etc/docker; install -m 0644 /tmp/daemon.json /etc/docker/daemon.json;"
            " test -e /usr/lib/python3.11/EXTERNALLY-MANAGED;"
            f" python3 -m venv {LIVED_IN_VENV};"
            f" {LIVED_IN_VENV}/bin/pip install -q --no-cache-dir {torch} {shlex.quote(self.numpy)};"
            f" {VENV}/bin/pip install -q --no-cache-dir {shlex.join(provision_requirements())};"
            # The roles' x86 requirements beyond the venv's numpy: termcolor (python_base's),
            # and onnx (the tensorrt role's: what the smoke's ONNX export needs) with its
            # dependencies.
            f" {VENV}/bin/pip download -q -d {LIVED_IN_WHEELHOUSE} termcolor onnx;"
            f" printf '[global]\\nno-index = true\\nfind-links = {LIVED_IN_WHEELHOUSE}\\n'"
            " >/etc/pip.conf;"
            " rm -f /tmp/*.whl /tmp/cuda.tar; apt-get clean; rm -rf /var/lib/apt/lists/*",
        ]
        return BuildContext("\n".join(lines) + "\n", files)


# The facts `jetson-env bundle -i` reads from a lived-in host (Debian SUITE's Python 3.11 and
# glibc 2.36, the stand-in CUDA), as the manifest writes them: test_lived_in.py's default
# bundle asserts its target's `args` are these.
LIVED_IN_BUNDLE_ARGS = ("--x86", "--python-version", "3.11", "--glibc", "2.36",
                        "--distribution", f"debian/{SUITE}", "--cuda", LIVED_IN_CUDA)  # fmt: skip
LIVED_IN_BUNDLE_LOCK = "lived-in-default-bundle"


def fetch_lived_in_bundle() -> None:
    """Fill jetson-env's download cache with what a default bundle for a lived-in host
    fetches (the matrix's CUDA torch and its nvidia wheels, about 4 GB: on a fresh machine
    the network's time, which the default run spends here, beside the image builds, and not
    in the test); the bundle itself is thrown away, the sha256 of its files kept, so that a
    kept machine whose cache still holds them does nothing. The test takes the same lock, so
    it never downloads beside this."""
    from jetson_env.bundle.fetching import cache_path

    fetched = TESTS_CACHE / f"{LIVED_IN_BUNDLE_LOCK}-{short_hash(*LIVED_IN_BUNDLE_ARGS)}.json"
    with _file_lock(LIVED_IN_BUNDLE_LOCK):
        if fetched.exists() and all(cache_path(sha).exists()
                                    for sha in json.loads(fetched.read_text())):  # fmt: skip
            return
        TESTS_CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=TESTS_CACHE) as folder:
            bundle = Path(folder) / "bundle"
            command = [sys.executable, "-m", "jetson_env.cli", "--no-color", "bundle", "-q",
                       bundle, *LIVED_IN_BUNDLE_ARGS]  # fmt: skip
            _run_logged(command, LOG_DIR / "lived-in-default-bundle.log")
            manifest = json.loads((bundle / "manifest.json").read_text())
        fetched.write_text(json.dumps(sorted(a["sha256"] for a in manifest["artifacts"].values())))


def start_lived_in(image: LivedInImage, name: str, derived: str | None = None) -> Host:
    """A container `<prefix><name>` of a lived-in image (or of `derived`, an image made from
    it: a kept provisioned state) with its network cut (`--network none`): `docker exec` (and
    so Ansible's docker connection) still reaches it; nothing on it reaches a package index or
    mirror."""
    tag = derived or image.ensure()
    spec = HostSpec(name, HOSTS[image.base_host].debian_arch)
    _docker("rm", "--force", spec.container)
    options = ["--detach", "--network", "none", "--name", spec.container]
    result = _docker("run", *options, tag, "sleep", "infinity")
    if result.returncode != 0:
        raise HostSetupError(f"starting {spec.container} from {tag}: {result.stderr.strip()}")
    return Host(spec)


def prepare_default_run() -> int:
    """Build every test host's image (Debian's torch host among them) and install both Ansible
    venvs, concurrently, and fill the download cache for the lived-in default bundle: what the
    default run needs before its first host test. scripts/test runs this beside lint
    (`python -m support.hosts`, tests/ on the path); pytest's HostPool then finds the images
    built or waits on the same build locks. Exits 1 if anything failed (pytest reports it)."""
    from support.ansible_envs import ANSIBLE_ENDS, CONTROLLER, JETPACK5
    from support.debian_torch import debian_torch_image

    jobs = [HostImage(spec).ensure for spec in HOSTS.values()]
    jobs += [ProvisionExtraImage("x86-debian12").ensure, SshdImage("x86-debian12").ensure]
    jobs += [end.ensure for end in (*ANSIBLE_ENDS.values(), JETPACK5, CONTROLLER)]
    jobs += [debian_torch_image, fetch_lived_in_bundle]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
    failed = [future.exception() for future in futures if future.exception()]
    for error in failed:
        print(error, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(prepare_default_run())
