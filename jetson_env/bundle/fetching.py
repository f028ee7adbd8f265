"""Fetching files into a bundle: https only (or local files), in parallel, each checked
against its sha256 through a temporary name, from the controller's cache where it is there."""

from __future__ import annotations

import hashlib
import os
import queue
import shutil
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from jetson_env import controller_files
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.manifest import disk_error
from jetson_env.bundle.untrusted import NewFile, open_inside, plain_path, remove_inside
from jetson_env.sizes import size

FETCH_WORKERS = 4
SOCKET_TIMEOUT_S = 60
# Read at a time: a stop (Ctrl-C) is seen between blocks.
BLOCK = 1 << 16
CACHE = controller_files.cache_root() / "bundle"


class Progress:
    """Files and bytes fetched so far, on one line of stderr (or handed to a callback), of
    the total said before the first byte (before)."""

    def __init__(self, report: Callable[[str], None] | None):
        self.report = report
        self.lock = threading.Lock()
        self.files = self.total_files = 0
        self.bytes = 0
        self.expected = 0  # bytes, where every file's size is known before; else 0
        self.last = 0.0

    def add_files(self, count: int) -> None:
        with self.lock:
            self.total_files += count

    def before(self, todo: list[Fetch], workers: int, later: str = "") -> None:
        """Count `todo` in, and say how much it is before anything is fetched (a full --l4t
        bundle is gigabytes): the sizes the sources give (HEAD), the cache's and local
        files' own; `later`, what is not counted in it."""
        self.add_files(len(todo))
        if not todo or self.report is None:
            return
        download, local, unknown = source_sizes(todo, workers)
        self.expected = 0 if unknown else download + local
        said = [f"{size(download)} to download"] if download else []
        if local:
            said.append(f"{size(local)} from this machine (the cache, local files)")
        if unknown:
            said.append(f"{unknown} of unknown size")
        if later:
            said[-1] += f"; {later}"
        self.report(f"to fetch: {len(todo)} file(s): {', '.join(said)}")

    def advance(self, nbytes: int, done: bool = False) -> None:
        with self.lock:
            self.bytes += nbytes
            self.files += done
            now = time.monotonic()
            if self.report and (done or now - self.last > 0.5):
                self.last = now
                of = f" of {size(self.expected)}" if self.expected else ""
                self.report(
                    f"fetched {self.files}/{self.total_files} files, {size(self.bytes)}{of}"
                )


@dataclass
class Fetch:
    """One file to put into the bundle."""

    url: str
    dest: str  # path inside the bundle: pip/NAME or files/NAME
    sha256: str | None
    role: str
    what: str
    target: str


def check_url(url: str, signed_index: bool = False) -> None:
    """https or a local file; plain http only for a .deb whose sha256 comes from an apt
    mirror's index that apt verified against the source's keyring (apt's own model)."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("https", "file") and not (signed_index and scheme == "http"):
        raise BundleError(f"{url} is not https: only https downloads (or local files) are allowed")


def cache_path(sha256: str) -> Path:
    return CACHE / "files" / sha256[:2] / sha256


def partial_name(fetch: Fetch) -> str:
    """The name a file is written under, in its own folder, until its sha256 is checked."""
    return f".{plain_path(fetch.dest).rpartition('/')[2]}.part"


def partial_path(fetch: Fetch) -> str:
    """partial_name's path inside the bundle (for remove_inside)."""
    return f"{fetch.dest.rpartition('/')[0]}/{partial_name(fetch)}"


def fetch_file(
    fetch: Fetch, directory: Path, progress: Progress, stop: threading.Event | None = None
) -> tuple[str, int]:
    """Download (or copy) one file into the bundle through a temporary name, checking its
    sha256, written without following a link (untrusted.NewFile); a file with a known sha256
    comes from the controller's cache when it is there. Returns (sha256, size). `stop` set:
    the partial file is removed and Interrupted raised within a block. A source that fails
    is FetchFailed (the manifest's manual list); a write that fails (a full disk) is a
    BundleError of a failed run."""
    check_url(fetch.url, signed_index=fetch.dest.startswith("apt/") and bool(fetch.sha256))
    # A download with a known sha256 comes from the cache (same content by definition); a
    # local file is always read, so that the file given is the one checked.
    local = fetch.url.startswith("file:")
    cached = fetch.sha256 and not local and cache_path(fetch.sha256).is_file()
    source_url = cache_path(fetch.sha256).as_uri() if cached else fetch.url
    digest = hashlib.sha256()
    size = 0
    try:
        out = NewFile(directory, fetch.dest, partial_name(fetch))
    except OSError as exc:
        raise disk_error(directory, exc) from None
    with out:
        try:
            handle = _open_source(source_url)
        except (OSError, ValueError) as exc:
            progress.advance(0, done=True)  # counted: it goes to the manifest's manual list
            raise FetchFailed(fetch, str(exc)) from None
        with handle:
            while True:
                if stop is not None and stop.is_set():
                    raise Interrupted(fetch.dest)
                try:
                    block = handle.read(BLOCK)
                except (OSError, ValueError) as exc:
                    progress.advance(0, done=True)
                    raise FetchFailed(fetch, str(exc)) from None
                if not block:
                    break
                try:
                    out.write(block)
                except OSError as exc:
                    raise disk_error(directory, exc) from None
                digest.update(block)
                size += len(block)
                progress.advance(len(block))
            announced = _content_length(handle)
            if announced is not None and size < announced:  # a connection that dropped
                progress.advance(0, done=True)
                raise FetchFailed(fetch, f"the download ended after {size} of {announced} bytes")
        actual = digest.hexdigest()
        if fetch.sha256 and actual != fetch.sha256:
            raise BundleError(
                # The run stops; the files fetched before this one stay, in the manifest.
                f"sha256 mismatch for {fetch.url}: expected {fetch.sha256}, got {actual}; "
                f"{fetch.dest} was not added (the files fetched before it are in the "
                "manifest)",
                hint="check the source (the pin comes from the index or the matrix), then run "
                "the same command again: it fetches only what the bundle lacks",
            )
        progress.advance(0, done=True)
        try:
            out.commit()
        except OSError as exc:
            raise disk_error(directory, exc) from None
    if not cached:
        _keep_in_cache(directory, fetch.dest, actual)
    return actual, size


def _keep_in_cache(directory: Path, path: str, sha256: str) -> None:
    """A copy of the bundle's file `path` in the controller's cache, where there is room
    (the cache only saves time)."""
    cached = cache_path(sha256)
    part = cached.with_suffix(".part")
    if cached.exists():
        return
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(open_inside(directory, path), "rb") as source, part.open("wb") as out:
            shutil.copyfileobj(source, out)
        part.replace(cached)
    except OSError:
        part.unlink(missing_ok=True)


def _content_length(handle) -> int | None:
    """The size an https response announced (None for a local file, or none said):
    http.client ends a body cut short as if it were complete."""
    length = getattr(handle, "headers", {}).get("Content-Length", "")
    return int(length) if length.isdigit() else None


def _open_source(url: str):
    """A readable stream of an https URL or a local file: URL (checked by check_url)."""
    if url.startswith("file:"):
        return Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path)).open("rb")
    request = urllib.request.Request(url, headers={"User-Agent": "jetson-env-bundle"})
    return urllib.request.urlopen(request, timeout=SOCKET_TIMEOUT_S)


HEAD_TIMEOUT_S = 15  # a source that does not say its size in time is of unknown size


def source_sizes(todo: list[Fetch], workers: int) -> tuple[int, int, int]:
    """(bytes to download, bytes read from this machine: the cache's and local files, files
    of unknown size), asked of each source in parallel before anything is fetched."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, min(workers, len(todo)))) as pool:
        sized = list(pool.map(_source_size, todo))
    download = sum(n for local, n in sized if n is not None and not local)
    here = sum(n for local, n in sized if n is not None and local)
    return download, here, sum(n is None for _, n in sized)


def _source_size(fetch: Fetch) -> tuple[bool, int | None]:
    """(read from this machine, its size or None): a cached or local file's own; an https
    source's Content-Length, asked with HEAD (the URL checked as fetch_file checks it)."""
    try:
        if fetch.sha256 and not fetch.url.startswith("file:"):
            cached = cache_path(fetch.sha256)
            if cached.is_file():
                return True, cached.stat().st_size
        if fetch.url.startswith("file:"):
            path = Path(urllib.request.url2pathname(urllib.parse.urlsplit(fetch.url).path))
            return True, path.stat().st_size
        check_url(fetch.url, signed_index=fetch.dest.startswith("apt/") and bool(fetch.sha256))
        request = urllib.request.Request(fetch.url, method="HEAD",
                                         headers={"User-Agent": "jetson-env-bundle"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=HEAD_TIMEOUT_S) as response:
            return False, _content_length(response)
    except (OSError, ValueError, BundleError):  # unknown here; fetch_file says what fails
        return False, None


class Interrupted(Exception):
    """A fetch ended by Ctrl-C or SIGTERM (its partial file removed)."""


class FetchFailed(Exception):
    def __init__(self, fetch: Fetch, reason: str):
        super().__init__(f"{fetch.url}: {reason}")
        self.fetch = fetch
        self.reason = reason


def fetch_all(
    todo: list[Fetch], directory: Path, progress: Progress, workers: int
) -> Iterator[tuple[Fetch, tuple[str, int] | BaseException]]:
    """Each fetch with its (sha256, size) or its error, as they complete, from `workers`
    threads. Ctrl-C or SIGTERM in the caller stops every download within a block, removes
    the partial files and lets the signal's exception go on: the threads are daemons, so
    nothing waits for a download in flight."""
    pending: queue.Queue[Fetch] = queue.Queue()
    for fetch in todo:
        pending.put(fetch)
    done: queue.Queue[tuple[Fetch, tuple[str, int] | BaseException]] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                fetch = pending.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((fetch, fetch_file(fetch, directory, progress, stop)))
            except Interrupted:
                return
            except (FetchFailed, BundleError) as exc:
                done.put((fetch, exc))

    for _ in range(max(1, min(workers, len(todo)))):
        threading.Thread(target=work, name="jetson-env-fetch", daemon=True).start()
    try:
        for _ in todo:
            while True:
                try:
                    item = done.get(timeout=0.2)
                    break
                except queue.Empty:
                    continue
            yield item
    except BaseException:
        stop.set()
        for fetch in todo:
            remove_inside(directory, partial_path(fetch))
        raise
