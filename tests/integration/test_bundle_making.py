"""`jetson-env bundle` for real: pip's resolution against the indexes this machine reaches,
files fetched into a folder and read back by pip with --no-index, --verify, re-runs that add
and never replace, bad input refused with nothing made, and the rules the playbook's bundle
preflight uses (jetson_env.bundle.host_plan)."""

import functools
import hashlib
import json
import os
import shlex
import shutil
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.hosts import REPO_ROOT, fresh_clone
from support.standin_apt import tls_files
from support.standins import build_jetson_torch_wheel, build_standin_wheel

from jetson_env import bundle
from jetson_env import matrix as matrix_mod
from jetson_env.bundle import fetching, pip_resolution, targets
from jetson_env.bundle.manifest import entry_roles
from jetson_env.bundle.needs import needs_for
from jetson_env.probes._runner import children
from jetson_env.sizes import size

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
X86_KEY = f"x86_64-x86-cp{PY.replace('.', '')}"
ORIN_KEY = "aarch64-l4t36.4.3-cp311"
X86_FACTS = (
    {"machine": "x86_64", "is_jetson": False, "l4t": None},
    {"major_minor": PY, "version": f"{PY}.0", "libc": "2.36"},
)
ORIN_FACTS = (
    {"machine": "aarch64", "is_jetson": True, "l4t": "36.4.3"},
    {"major_minor": "3.11", "version": "3.11.2", "libc": "2.36"},
)


def jetson_env(*args):
    """The CLI; `bundle` leaves the controller's wheels out (their own test is below)."""
    if args[0] == "bundle" and "--verify" not in args:
        args = (*args, "--no-controller")
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A bundle of python_base for this x86 machine and the emulated Orin (Python 3.11,
    Debian's glibc), made with the CLI: numpy and termcolor from the real indexes."""
    directory = tmp_path_factory.mktemp("bundle") / "b"
    proc = jetson_env(
        "bundle",
        directory,
        "--x86",
        "--glibc",
        "2.36",
        "--l4t",
        "R36.4.3",
        "--python-version",
        "3.11",
        "--roles",
        "python_base",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    return directory, json.loads(proc.stdout)


def test_manifest_lists_every_artifact_with_its_sha256_size_and_source(made):
    directory, data = made
    manifest = json.loads((directory / "manifest.json").read_text())
    assert set(manifest["targets"]) == {ORIN_KEY, "x86_64-x86-cp311"}
    assert (
        manifest["targets"][ORIN_KEY]["args"]
        == "--l4t R36.4.3 --python-version 3.11 --glibc 2.36 --distribution ubuntu/jammy"
    )
    names = {Path(p).name.split("-")[0] for p in manifest["artifacts"]}
    assert {"numpy", "termcolor"} <= names
    for path, entry in manifest["artifacts"].items():
        file = directory / path
        assert hashlib.sha256(file.read_bytes()).hexdigest() == entry["sha256"]
        assert file.stat().st_size == entry["size"]
        # http only for .debs, whose sha256 is from the mirror's signed index.
        assert entry["source"].startswith(("https://", "file://")) or (
            path.startswith("apt/") and entry["source"].startswith("http://")
        ), entry
        assert entry["role"] == "python_base"
    # The Orin's numpy is the row's pin, for aarch64; the x86 one for x86_64.
    numpys = {p: e["targets"] for p, e in manifest["artifacts"].items() if "numpy" in p}
    assert any("1.26.1" in p and "aarch64" in p and e == [ORIN_KEY] for p, e in numpys.items())
    assert any("x86_64" in p for p in numpys)
    # termcolor is one file for both targets.
    (termcolor,) = [e for p, e in manifest["artifacts"].items() if "termcolor" in p]
    assert sorted(termcolor["targets"]) == sorted(manifest["targets"])
    # Sizes per target and in total.
    assert data["total_bytes"] == sum(e["size"] for e in manifest["artifacts"].values())
    assert data["targets"][ORIN_KEY]["bytes"] < data["total_bytes"]
    # The Orin's apt packages (Ubuntu's; this machine's mirrors serve Debian) are listed,
    # with the line that downloads them.
    orin_apt = manifest["apt"][ORIN_KEY]
    assert orin_apt["repo"] is None and "libopenblas-dev" in orin_apt["not_bundled"]
    assert "apt-get download" in orin_apt["download"] and "libopenblas-dev" in orin_apt["download"]
    assert "do not serve ubuntu/jammy" in orin_apt["why_not"]["python_base"]


def test_the_x86_targets_apt_packages_are_a_flat_repository(made):
    """This machine is Debian 12 and so is the x86 target: its mirrors serve the .debs."""
    directory, _ = made
    manifest = json.loads((directory / "manifest.json").read_text())
    x86_apt = manifest["apt"]["x86_64-x86-cp311"]
    assert x86_apt["distribution"] == "debian/bookworm" and x86_apt["not_bundled"] == []
    repo = directory / x86_apt["repo"]
    debs = {p for p in manifest["artifacts"] if p.startswith(x86_apt["repo"] + "/")}
    stanzas = (repo / "Packages").read_text().strip().split("\n\n")
    listed = {}
    for stanza in stanzas:
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line)
        listed[f"{x86_apt['repo']}/{fields['Filename'].removeprefix('./')}"] = fields
    # Every .deb is listed once, with the manifest's sha256; python3-pip and its dependencies.
    assert set(listed) == debs
    for path, fields in listed.items():
        assert fields["SHA256"] == manifest["artifacts"][path]["sha256"]
        assert int(fields["Size"]) == manifest["artifacts"][path]["size"]
    packages = {fields["Package"] for fields in listed.values()}
    assert {"python3-pip", "python3-setuptools", "libc6"} <= packages
    release = (repo / "Release").read_text()
    packages_sha = hashlib.sha256((repo / "Packages").read_bytes()).hexdigest()
    assert f" {packages_sha} " in release
    assert manifest["apt_repos"][x86_apt["repo"]]["packages_sha256"] == packages_sha


def test_pip_installs_from_the_index_with_no_other_source(made, tmp_path: Path):
    directory, _ = made
    for source in (["--no-index", "--find-links", str(directory / "pip")],):
        dest = tmp_path / source[0].strip("-")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--isolated",
                "--no-deps",
                "--dest",
                str(dest),
                *source,
                "termcolor",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        (wheel,) = dest.glob("termcolor-*.whl")
        assert (directory / "pip" / wheel.name).read_bytes() == wheel.read_bytes()


def test_verify_passes_then_names_a_corrupted_and_a_missing_file(made, tmp_path: Path):
    directory, _ = made
    assert jetson_env("bundle", "--verify", directory).returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    termcolor = next(p for p in manifest["artifacts"] if "termcolor" in p)
    numpy = next(p for p in manifest["artifacts"] if "numpy" in p)
    data = bytearray((copy / termcolor).read_bytes())
    data[100] ^= 0xFF
    (copy / termcolor).write_bytes(bytes(data))
    (copy / numpy).unlink()

    proc = jetson_env("bundle", "--verify", copy, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    problems = {p["path"]: p for p in report["problems"]}
    assert set(problems) == {termcolor, numpy}
    assert problems[termcolor]["problem"].startswith("sha256 ")
    assert problems[numpy]["problem"] == "missing"
    assert problems[numpy]["fix"].startswith(f"jetson-env bundle {copy} --")
    assert "--roles python_base" in problems[numpy]["fix"]


def test_running_again_adds_and_never_replaces(made, tmp_path: Path):
    directory, _ = made
    copy = tmp_path / "again"
    shutil.copytree(directory, copy)
    before = (copy / "manifest.json").read_text()
    # Same targets again: nothing new, nothing rewritten.
    proc = jetson_env(
        "bundle",
        copy,
        "--l4t",
        "R36.4.3",
        "--python-version",
        "3.11",
        "--roles",
        "python_base",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["added"] == []
    assert (
        json.loads((copy / "manifest.json").read_text())["artifacts"]
        == json.loads(before)["artifacts"]
    )
    # The index now serving another file under a name the bundle holds: refused, kept.
    manifest = json.loads(before)
    termcolor = next(p for p in manifest["artifacts"] if "termcolor" in p)
    manifest["artifacts"][termcolor]["sha256"] = "0" * 64
    (copy / "manifest.json").write_text(json.dumps(manifest))
    kept = (copy / termcolor).read_bytes()
    proc = jetson_env(
        "bundle", copy, "--l4t", "R36.4.3", "--python-version", "3.11", "--roles", "python_base"
    )
    assert proc.returncode == 2
    assert "the bundle keeps the file it has" in proc.stderr
    assert (copy / termcolor).read_bytes() == kept
    assert json.loads((copy / "manifest.json").read_text()) == manifest


def test_a_file_in_the_way_is_not_overwritten(tmp_path: Path):
    directory = tmp_path / "b"
    (directory / "pip").mkdir(parents=True)
    resolved = pip_resolution.resolve(
        targets.BundleTarget("aarch64", "3.11", "2.36", "36.4.3"), ["termcolor"], no_deps=True
    )
    in_the_way = directory / "pip" / resolved[0]["filename"]
    in_the_way.write_bytes(b"not termcolor")
    proc = jetson_env(
        "bundle",
        directory,
        "--l4t",
        "R36.4.3",
        "--python-version",
        "3.11",
        "--roles",
        "python_base",
    )
    assert proc.returncode == 2
    assert "move" in proc.stderr and in_the_way.name in proc.stderr.replace("\n", "")
    assert in_the_way.read_bytes() == b"not termcolor"
    assert not (directory / "manifest.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--l4t", "R99.1.0"], "supported releases: R32.4.3"),
        (["--x86", "--python-version", "three"], "is not a Python version"),
        (["--x86", "--glibc", "2"], "is not a glibc version"),
        (["--x86", "--cuda", "12"], "is not a CUDA version like 12.6"),
        (["--x86", "--roles", "python_base,kernel"], "unknown role(s) kernel"),
        (["--x86", "--file", "torch=/nonexistent/torch.whl"], "no such file"),
        (["--x86", "--file", "kernel=/etc/hostname"], "unknown kind"),
        (["--x86", "--file", "torch"], "is not KIND=PATH"),
    ],
)
def test_bad_input_is_refused_and_makes_nothing(tmp_path: Path, args, message):
    directory = tmp_path / "b"
    proc = jetson_env("bundle", directory, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert not directory.exists()


def test_verify_of_a_folder_that_is_no_bundle(tmp_path: Path):
    proc = jetson_env("bundle", "--verify", tmp_path)
    assert proc.returncode == 2
    assert "is not a bundle" in proc.stderr and "jetson-env bundle" in proc.stderr


def test_only_https_or_local_files_are_fetched(tmp_path: Path):
    fetch = fetching.Fetch("http://example.org/x.whl", "pip/x.whl", None, "torch", "x", "t")
    with pytest.raises(bundle.BundleError, match="not https"):
        fetching.fetch_file(fetch, tmp_path, fetching.Progress(None))
    assert not list(tmp_path.rglob("*.whl*"))


def test_a_file_that_cannot_be_fetched_is_named_with_its_place(tmp_path: Path):
    """NVIDIA's Jetson torch wheel and cuSPARSELt cannot be reached here: the manifest names
    them, where they go and the --file that adds them; a stand-in given with --file replaces
    the entry for that target. The size said first says torch's dependencies are not in it
    (a wheel URL's are only inside the wheel)."""
    matrix = matrix_mod.load()
    target = targets.BundleTarget("aarch64", "3.11", "2.36", "36.4.3")
    said: list[str] = []
    result = bundle.make(tmp_path / "b", matrix, [target], ["torch"], report=said.append, workers=2)
    (preview,) = [line for line in said if line.startswith("to fetch: ")]
    assert preview.endswith("; torch's dependencies are counted after the torch wheel arrives "
                            "(only it names them)"), preview  # fmt: skip
    manual = {m["what"]: m for m in result.manifest["manual"]}
    assert set(manual) == {"torch wheel", "cuSPARSELt archive"}
    assert manual["torch wheel"]["expected"].startswith("pip/torch-2.5.0a0+872d972e41.nv24.08")
    assert manual["torch wheel"]["where_from"].startswith("https://developer.download.nvidia.com/")
    assert manual["cuSPARSELt archive"]["kind"] == "cusparselt"
    # The preflight skips torch and names it, with where its file goes (issue 34).
    plan = bundle.host_plan(tmp_path / "b", *ORIN_FACTS, {"torch": True})
    assert plan["error"] is None
    assert "torch wheel is not in the bundle" in plan["skipped"]["torch"]
    assert "--file torch=PATH" in plan["skipped"]["torch"]

    standin = tmp_path / "cusparselt-standin.tar.xz"
    subprocess.run(
        ["tar", "-cJf", str(standin), "-C", str(tmp_path), "b/manifest.json"], check=True
    )
    result = bundle.make(tmp_path / "b", matrix, [target], ["torch"], files={"cusparselt": standin})
    assert [m["what"] for m in result.manifest["manual"]] == ["torch wheel"]
    assert "files/cusparselt-standin.tar.xz" in result.manifest["artifacts"]


STANDIN_TORCH_DEPS = {"standin-nvidia-cublas": "13.0.1", "standin-filelock": "3.20.0"}


def standin_torch_index(index: Path) -> list[Path]:
    """A pip index in `index` (simple/ and files/) of STAND-IN wheels: the matrix's x86 torch
    for this Python, requiring STANDIN_TORCH_DEPS, and those; the torch wheel first."""
    version = matrix_mod.load().x86.torch.version
    tag = f"cp{PY.replace('.', '')}"
    wheels = [
        build_jetson_torch_wheel(
            f"torch-{version}-{tag}-{tag}-linux_x86_64.whl",
            index / "files",
            tuple(f"{n}=={v}" for n, v in STANDIN_TORCH_DEPS.items()),
        )
    ]
    wheels += [
        build_standin_wheel(name, v, index / "files") for name, v in STANDIN_TORCH_DEPS.items()
    ]
    for wheel in wheels:
        project = index / "simple" / wheel.name.split("-")[0].replace("_", "-")
        project.mkdir(parents=True)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        (project / "index.html").write_text(
            f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a>\n'
        )
    return wheels


def test_an_index_torchs_dependencies_are_in_the_size_said_first(tmp_path: Path):
    """Issue 59, item 7: x86's torch comes from pip's configured index, and its dependencies
    (the nvidia-* wheels: the gigabytes) are resolved from the index before anything is
    fetched: the one `to fetch` line said before the first `fetched` counts torch and its
    dependencies (here a local index of STAND-IN wheels, pip's only index)."""
    wheels = standin_torch_index(tmp_path / "index")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, XDG_CACHE_HOME=str(tmp_path / "cache"),
               PIP_INDEX_URL=(tmp_path / "index" / "simple").as_uri())  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "jetson_env.cli", "bundle", "b", "--x86",
                           "--roles", "torch", "--no-controller"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert sorted(manifest["artifacts"]) == sorted(f"pip/{w.name}" for w in wheels)
    lines = done.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("fetched "))
    said = [line for line in lines[:first] if line.startswith("to fetch: ")]
    total = sum(entry["size"] for entry in manifest["artifacts"].values())
    assert said == [f"to fetch: 3 file(s): {size(total)} from this machine (the cache, local "
                    "files)"], done.stderr  # fmt: skip
    assert not [line for line in lines[first:] if line.startswith("to fetch: ")], done.stderr
    for name in STANDIN_TORCH_DEPS:  # still torch's, as when they were resolved from the wheel
        (entry,) = [e for p, e in manifest["artifacts"].items() if name.replace("-", "_") in p]
        assert entry["role"] == "torch" and entry["what"].endswith(" (torch's)"), entry
    # One deleted: --verify's line fetches it again from the index (it said `--file
    # torch=` with the dependency's path in the index: added as the torch wheel).
    (tmp_path / "b" / f"pip/{wheels[1].name}").unlink()
    verify = subprocess.run([sys.executable, "-m", "jetson_env.cli", "bundle", "--verify", "b",
                             "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    (problem,) = json.loads(verify.stdout)["problems"]
    assert problem["path"] == f"pip/{wheels[1].name}" and "--file" not in problem["fix"], problem
    again = subprocess.run(shlex.split(problem["fix"].rpartition(": ")[2]), cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=900)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "b" / f"pip/{wheels[1].name}").read_bytes() == wheels[1].read_bytes()


class TamperingIndex(SimpleHTTPRequestHandler):
    """A pip index over HTTPS (its folder) that serves pip `state["path"]`'s file whole, and
    jetson-env's own download of it as `state["serve"]` says: "changed" (its last byte: a
    file that changed after pip resolved it, or mangled on the way), "cut" (the connection
    closes halfway through, the whole size announced) or "whole"."""

    def __init__(self, *args, state: dict, **kwargs):
        self.state = state
        super().__init__(*args, **kwargs)

    def do_GET(self):
        ours = self.headers.get("User-Agent", "") == "jetson-env-bundle"
        if not (ours and self.state["serve"] != "whole" and self.path == self.state["path"]):
            return super().do_GET()
        data = bytearray((Path(self.directory) / self.path.lstrip("/")).read_bytes())
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.state["serve"] == "cut":
            self.wfile.write(bytes(data[: len(data) // 2]))
        else:
            data[-1] ^= 1
            self.wfile.write(bytes(data))
        return None

    def log_message(self, *args):
        return


@pytest.fixture
def torch_index(tmp_path: Path) -> Iterator[tuple[str, dict, dict, list[Path]]]:
    """standin_torch_index served by TamperingIndex over HTTPS (the stand-in CA) as pip's
    only index, its torch wheel the file tampered with: (its URL, the environment that
    makes it pip's index and trusts it, TamperingIndex's state, the wheels)."""
    index = tmp_path / "index"
    wheels = standin_torch_index(index)
    tls = tls_files()
    state = {"serve": "whole", "path": f"/files/{wheels[0].name}"}
    handler = functools.partial(TamperingIndex, directory=str(index), state=state)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert, tls.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{server.server_address[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, XDG_CACHE_HOME=str(tmp_path / "cache"),
               PIP_INDEX_URL=f"{url}/simple/", PIP_CERT=str(tls.bundle),
               REQUESTS_CA_BUNDLE=str(tls.bundle), SSL_CERT_FILE=str(tls.bundle))  # fmt: skip
    try:
        yield url, env, state, wheels
    finally:
        server.shutdown()
        server.server_close()


def bundle_torch(folder: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    """`jetson-env bundle b --x86 --roles torch` (or `bundle ARGS`) in `folder`."""
    args = args or ("b", "--x86", "--roles", "torch", "--no-controller")
    return subprocess.run([sys.executable, "-m", "jetson_env.cli", "bundle", *args],
                          cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip


def test_a_torch_wheel_refused_after_its_dependencies_leaves_a_bundle_a_rerun_completes(
    tmp_path: Path, torch_index
):
    """x86's torch from pip's configured index: its dependencies are resolved from the index
    and fetched with it. When the torch wheel is then refused (not the index's sha256), the
    run stops (exit 2) as docs/playbook.md says of a failed run: every file it fetched is in
    the manifest with its sha256 (--verify passes), no target is recorded, and the message
    says what happened to them and to run the same command again (it said "nothing was
    added" with the dependencies in the folder), which then adds torch and the target."""
    url, env, state, wheels = torch_index
    torch, deps = wheels[0], sorted(f"pip/{w.name}" for w in wheels[1:])
    directory = tmp_path / "b"
    state["serve"] = "changed"
    failed = bundle_torch(tmp_path, env)
    assert failed.returncode == 2, failed.stderr
    text = " ".join(failed.stderr.split())
    assert f"sha256 mismatch for {url}/files/{torch.name}" in text, text
    assert "nothing was added" not in text, text
    assert "run the same command again" in text, text
    manifest = json.loads((directory / "manifest.json").read_text())
    assert sorted(manifest["artifacts"]) == deps and manifest["targets"] == {}, manifest
    assert sorted(str(p.relative_to(directory)) for p in (directory / "pip").iterdir()) == deps
    for path in deps:
        digest = hashlib.sha256((directory / path).read_bytes()).hexdigest()
        assert manifest["artifacts"][path]["sha256"] == digest
    verify = bundle_torch(tmp_path, env, "--verify", "b")
    assert verify.returncode == 0, verify.stdout + verify.stderr

    state["serve"] = "whole"  # the source serves the index's file again
    again = bundle_torch(tmp_path, env)
    assert again.returncode == 0, again.stderr
    manifest = json.loads((directory / "manifest.json").read_text())
    assert sorted(manifest["artifacts"]) == sorted([f"pip/{torch.name}", *deps])
    assert manifest["artifacts"][f"pip/{torch.name}"]["sha256"] == (
        hashlib.sha256(torch.read_bytes()).hexdigest()
    )
    assert list(manifest["targets"]) == [X86_KEY] and manifest["manual"] == [], manifest


def test_a_torch_download_cut_short_is_a_failed_download_the_same_line_fetches_again(
    tmp_path: Path, torch_index
):
    """The torch wheel's connection closes halfway (its whole size announced): http.client
    ends such a body as if complete, so it was said to be a sha256 mismatch ("check the
    source", exit 2; an unpinned file would have been recorded cut short). It is a download
    that failed (docs/json.md, `manual`): the run completes with torch's dependencies in the
    bundle and torch in `manual`, saying why, no partial file left; the same line then
    fetches it."""
    url, env, state, wheels = torch_index
    torch, deps = wheels[0], sorted(f"pip/{w.name}" for w in wheels[1:])
    directory = tmp_path / "b"
    state["serve"] = "cut"
    cut = bundle_torch(tmp_path, env, "b", "--x86", "--roles", "torch", "--no-controller",
                       "--json")  # fmt: skip
    assert cut.returncode == 0, cut.stderr
    (manual,) = json.loads(cut.stdout)["manual"]
    size = torch.stat().st_size
    assert manual["expected"] == f"pip/{torch.name}", manual
    assert manual["where_from"] == (
        f"{url}/files/{torch.name} (the download ended after {size // 2} of {size} bytes)"
    )
    manifest = json.loads((directory / "manifest.json").read_text())
    assert sorted(manifest["artifacts"]) == deps, manifest
    assert sorted(str(p.relative_to(directory)) for p in (directory / "pip").iterdir()) == deps

    state["serve"] = "whole"
    again = bundle_torch(tmp_path, env)
    assert again.returncode == 0, again.stderr
    manifest = json.loads((directory / "manifest.json").read_text())
    assert sorted(manifest["artifacts"]) == sorted([f"pip/{torch.name}", *deps])
    assert manifest["manual"] == [], manifest


def test_a_torch_dependency_that_failed_is_fetched_again_never_added_as_torch(
    tmp_path: Path, torch_index
):
    """One of torch's dependencies (resolved from pip's index) fails to download: its
    `manual` entry said to add it with `--file torch=PATH`, which records that wheel as the
    torch wheel and leaves the entry there for good. It is a download the same line fetches
    again (kind "pip", no --file), as `bundle` and `--verify` say; then it is in."""
    _url, env, state, wheels = torch_index
    dep = wheels[1]
    state.update(path=f"/files/{dep.name}", serve="cut")
    cut = bundle_torch(tmp_path, env)
    assert cut.returncode == 0, cut.stderr
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    (manual,) = manifest["manual"]
    assert (manual["expected"], manual["kind"]) == (f"pip/{dep.name}", "pip"), manual
    verify = bundle_torch(tmp_path, env, "--verify", "b")
    for said in (cut.stdout, verify.stdout):
        said = " ".join(said.split())
        assert "fetch it again once its source answers: " in said, said
        assert "--file" not in said, said

    state["serve"] = "whole"
    again = bundle_torch(tmp_path, env)
    assert again.returncode == 0, again.stderr
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    name = dep.name.split("-")[0].replace("_", "-")
    assert manifest["manual"] == [], manifest
    assert manifest["artifacts"][f"pip/{dep.name}"]["what"] == (
        f"{name} {STANDIN_TORCH_DEPS[name]} (torch's)"
    )


def test_a_download_cut_short_without_a_pin_is_never_recorded(
    tmp_path: Path, torch_index, monkeypatch: pytest.MonkeyPatch
):
    """A file with no sha256 to check (torch2trt's source archive) whose connection closed
    halfway was kept as complete, its sha256 the half's: --verify then passed a bundle that
    pip or tar cannot read. It is a download that failed, its partial file removed."""
    url, env, state, wheels = torch_index
    monkeypatch.setenv("SSL_CERT_FILE", env["SSL_CERT_FILE"])
    monkeypatch.setattr(fetching, "CACHE", tmp_path / "cache")  # what was kept stays here
    state["serve"] = "cut"
    fetch = fetching.Fetch(f"{url}{state['path']}", "files/archive.tar.gz", None, "torch2trt",
                           "torch2trt source archive", X86_KEY)  # fmt: skip
    size = wheels[0].stat().st_size
    (tmp_path / "b" / "files").mkdir(parents=True)
    with pytest.raises(fetching.FetchFailed, match=f"ended after {size // 2} of {size} bytes"):
        fetching.fetch_file(fetch, tmp_path / "b", fetching.Progress(None))
    assert not list((tmp_path / "b" / "files").iterdir())


def test_host_plan_matches_the_host_and_checks_files_and_the_lock_file(made):
    directory, _ = made
    plan = bundle.host_plan(directory, *ORIN_FACTS, {"python_base": True})
    assert plan["error"] is None
    assert plan["target"] == ORIN_KEY
    assert any("numpy-1.26.1" in p["name"] and "aarch64" in p["name"] for p in plan["pip"])
    # A host with an older glibc than the bundle's target cannot use its wheels.
    old = (ORIN_FACTS[0], {**ORIN_FACTS[1], "libc": "2.31"})
    assert (
        "has nothing for aarch64-l4t36.4.3-cp311"
        in bundle.host_plan(directory, *old, {"python_base": True})["error"]
    )
    # A role the bundle was not made for.
    # A role the bundle was not made for is skipped and named, the others still served.
    plan = bundle.host_plan(directory, *ORIN_FACTS, {"python_base": True, "torch": True})
    assert plan["error"] is None and plan["artifacts"]["python_base"]
    assert "not made with torch" in plan["skipped"]["torch"]
    assert "--roles torch" in plan["skipped"]["torch"]
    # A role's files are checked when it asks (check_role): the lock file pins another
    # sha256 for a file of the bundle.
    termcolor = next(Path(p).name for p in plan_files(directory) if "termcolor" in p)
    assert bundle.check_role(plan, "python_base")["error"] is None
    check = bundle.check_role(plan, "python_base", {termcolor: "f" * 64})
    assert f"the lock file pins sha256 {'f' * 64}" in check["error"], check


def plan_files(directory: Path) -> list[str]:
    return list(json.loads((directory / "manifest.json").read_text())["artifacts"])


def test_pycuda_sdist_comes_with_its_build_requirements(tmp_path: Path):
    """pycuda is built on the host: its sdist, its runtime requirements and its PEP 517
    build requirements, as wheels for the target, so pip builds it with --no-index. Its
    setup reads its build defaults as on a host (the pycuda role writes them to
    /etc/aksetup-defaults.py; here the user's ~/.aksetup-defaults.py in a HOME of the
    test's): without any, it counts down 10 s, twice, for a Ctrl-C."""
    matrix = matrix_mod.load()
    target = targets.BundleTarget("x86_64", PY, targets.controller_glibc())
    result = bundle.make(tmp_path / "b", matrix, [target], ["pycuda"])
    names = {pip_resolution.project_of(Path(p).name) for p in result.manifest["artifacts"]}
    assert {"pycuda", "pytools", "platformdirs", "mako", "setuptools", "numpy"} <= names
    sdist = next(p for p in result.manifest["artifacts"] if p.startswith("pip/pycuda-"))
    assert sdist.endswith(f"pycuda-{matrix.pycuda_for(PY)}.tar.gz")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".aksetup-defaults.py").write_text("# pycuda's defaults, as its role's siteconf\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--isolated",
            "--no-index",
            "--find-links",
            str(tmp_path / "b" / "pip"),
            "--no-deps",
            "--dest",
            str(tmp_path / "d"),
            "pycuda",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr


def test_the_hosts_cuda_major_picks_the_bundles_cuda_python(tmp_path: Path):
    """The pycuda role installs the cuda-python of the host's CUDA major (its toolkit), not
    the row's torch's: a bundle for a CUDA 12 x86 host carries cuda-python 12 and records the
    CUDA it was made for (bundle -i reads it from each host)."""
    directory = tmp_path / "b"
    proc = jetson_env("bundle", directory, "--x86", "--python-version", PY, "--cuda", "12.6",
                      "--roles", "pycuda", "--no-controller", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((directory / "manifest.json").read_text())
    (entry,) = manifest["targets"].values()
    assert entry["cuda"] == "12.6" and "--cuda 12.6" in entry["args"]
    names = [Path(p).name for p in manifest["artifacts"]]
    cuda_python = [n for n in names if pip_resolution.project_of(n) == "cuda-python"]
    assert cuda_python and all(n.startswith("cuda_python-12.") for n in cuda_python), names


def test_a_supplied_file_must_match_the_matrixs_pin(tmp_path: Path):
    """Debian's pytorch-vision_0.21.0.orig.tar.gz is pinned in the matrix: a file of that
    name with other content is refused, and nothing of it stays in the bundle."""
    (tmp_path / "vision-0.21.0").mkdir()
    (tmp_path / "vision-0.21.0" / "version.txt").write_text("0.21.0\n")
    fake = tmp_path / "pytorch-vision_0.21.0.orig.tar.gz"
    subprocess.run(["tar", "-czf", str(fake), "-C", str(tmp_path), "vision-0.21.0"], check=True)
    directory = tmp_path / "b"
    proc = jetson_env(
        "bundle", directory, "--x86", "--roles", "torchvision", "--file", f"torchvision={fake}"
    )
    assert proc.returncode == 2
    pin = matrix_mod.load().raw["torchvision_archives"]["sha256"]["0.21.0"]
    assert f"expected {pin}" in " ".join(proc.stderr.split())
    assert not (directory / "files" / fake.name).exists()
    assert not list(directory.rglob("*.part"))
    manifest = json.loads((directory / "manifest.json").read_text())
    assert "files/" + fake.name not in manifest["artifacts"]
    assert bundle.verify(directory) == []  # what was fetched is consistent


def test_provision_refuses_a_folder_that_is_no_bundle(tmp_path: Path):
    proc = jetson_env("provision", "--bundle", tmp_path, "--check")
    assert proc.returncode == 2
    assert "is not a jetson-env bundle" in proc.stderr and "jetson-env bundle" in proc.stderr


def test_a_file_two_roles_need_reaches_a_host_that_runs_either(tmp_path: Path):
    """numpy is python_base's and pycuda's (its build and its runtime): fetched once, it is
    every such role's, so a host that runs only pycuda gets it too. (Seen on the offline H100:
    `provision --bundle --tags python_base,pycuda` after a bundle for python_base, torchvision
    and pycuda had setuptools, which torchvision's build needs too, only as torchvision's;
    pip's isolated build of pycuda found no setuptools.)"""
    target = targets.BundleTarget("x86_64", PY, targets.controller_glibc())
    result = bundle.make(tmp_path / "b", matrix_mod.load(), [target], ["python_base", "pycuda"])
    numpy = next(p for p in result.manifest["artifacts"] if p.startswith("pip/numpy-"))
    assert set(entry_roles(result.manifest["artifacts"][numpy])) == {"python_base", "pycuda"}
    glibc = targets.controller_glibc()
    facts = ({"machine": "x86_64", "is_jetson": False, "l4t": None},
             {"major_minor": PY, "version": f"{PY}.0", "libc": glibc})  # fmt: skip
    plan = bundle.host_plan(tmp_path / "b", *facts, {"pycuda": True})
    assert plan["error"] is None, plan["error"]
    names = {pip_resolution.project_of(item["name"]) for item in plan["pip"]}
    assert {"pycuda", "numpy", "setuptools"} <= names, names


def test_every_matrix_release_has_its_ubuntus_suite_and_glibc():
    """Each row's target takes its Ubuntu's apt suite and glibc from the matrix."""
    m = matrix_mod.load()
    for key, release in m.releases.items():
        (target,) = bundle.targets_from_args(m, [key], False, None, None)
        ubuntu = m.ubuntu[release.ubuntu]
        assert (target.distribution, target.glibc) == (f"ubuntu/{ubuntu.codename}", ubuntu.glibc)


def test_the_bundle_carries_the_controller(tmp_path: Path):
    """Issue 34: the wheels that install jetson-env[provision] for the controller's Python,
    installed into an empty venv with no index at all, and the line that does it."""
    directory = tmp_path / "b"
    proc = subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", "bundle", str(directory), "--x86", "--roles",
         "tensorrt", "--file", "tensorrt=/etc/hostname", "--controller-python", PY, "--json"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout)["controller"]
    assert line == (
        f"pip install --no-index --find-links {directory}/controller 'jetson-env[provision]'"
    )
    manifest = json.loads((directory / "manifest.json").read_text())
    names = {pip_resolution.project_of(Path(p).name) for p in manifest["artifacts"]
             if p.startswith("controller/")}  # fmt: skip
    assert {"jetson-env", "ansible-core", "rich", "paramiko", "pyyaml"} <= names, names
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --isolated: this machine's pip configuration (its indexes and find-links) is not read.
    argv = [str(venv / "bin" / "pip"), "--isolated", *shlex.split(line)[1:]]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)
    out = subprocess.run([str(venv / "bin" / "jetson-env"), "--version"], capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.startswith("jetson-env ")
    assert (venv / "bin" / "ansible-playbook").exists()
    assert jetson_env("bundle", "--verify", directory).returncode == 0


def readme_quick_start_install() -> list[str]:
    """The README's first command up to its install: `python3 -m venv .venv && .venv/bin/pip
    install -q .`, the commands in order."""
    readme = (REPO_ROOT / "README.md").read_text()
    block = readme[readme.index("```sh\n") + len("```sh\n") :]
    commands = block.splitlines()[0].split(" && ")
    return commands[: next(i for i, c in enumerate(commands) if " install " in c) + 1]


def test_a_controller_installed_the_readmes_way_puts_its_own_wheel_into_the_bundle(
    tmp_path: Path,
):
    """Issue 44, case 4: jetson-env installed by the README's `pip install .` (a wheel install,
    no source tree) makes a bundle whose controller/ installs jetson-env[provision] into an
    empty venv with no index, and that jetson-env runs: its collection's playbook loads."""
    clone = fresh_clone(tmp_path / "jetson-env")
    install = readme_quick_start_install()
    assert install == ["python3 -m venv .venv", ".venv/bin/pip install -q ."], install
    for command in install:
        subprocess.run(shlex.split(command), cwd=clone, check=True, capture_output=True,
                       timeout=900)  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    directory = tmp_path / "b"
    proc = subprocess.run(
        [str(clone / ".venv" / "bin" / "jetson-env"), "bundle", str(directory), "--x86",
         "--roles", "tensorrt", "--file", "tensorrt=/etc/hostname", "--json"],
        cwd=elsewhere, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = json.loads(proc.stdout)["controller"]
    venv = tmp_path / "offline-controller"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    argv = [str(venv / "bin" / "pip"), "--isolated", *shlex.split(line)[1:]]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)
    # An installed file edited since: not the wheel pip installed, refused with nothing made.
    (installed,) = (clone / ".venv").glob("lib/python3*/site-packages/jetson_env/data/matrix.yml")
    installed.write_text(installed.read_text() + "# edited\n")
    edited = subprocess.run(
        [str(clone / ".venv" / "bin" / "jetson-env"), "bundle", str(tmp_path / "b2"), "--x86",
         "--roles", "tensorrt", "--file", "tensorrt=/etc/hostname"],
        cwd=elsewhere, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert edited.returncode == 2, edited.stderr
    assert "jetson_env/data/matrix.yml is not the file pip installed" in edited.stderr
    assert f"-m pip install --force-reinstall {clone})" in edited.stderr  # where it came from
    assert not (tmp_path / "b2" / "manifest.json").exists()
    shutil.rmtree(clone)  # nothing of the checkout is left to lean on

    def offline(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(venv / "bin" / "jetson-env"), *args], cwd=elsewhere,
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip

    assert "provision" in offline("--help").stdout
    tasks = offline("provision", "--", "--list-tasks")
    assert tasks.returncode == 0, tasks.stdout[-2000:] + tasks.stderr[-2000:]
    assert "jetson_env.jetson.tensorrt : " in tasks.stdout, tasks.stdout[-2000:]
    assert jetson_env("bundle", "--verify", directory).returncode == 0


def test_x86_tensorrt_is_the_matrix_pin_from_pip_or_named_as_supply_by_hand(tmp_path: Path):
    """x86's TensorRT is the matrix's pip pin. PyPI (all pip reaches here) has tensorrt-cu13
    only as an sdist and none of its -libs wheels: pip resolves wheels only, so the manifest
    names the wheels as supplied by hand and where they come from; the bundle is still made."""
    matrix = matrix_mod.load()
    target = targets.BundleTarget("x86_64", "3.12", "2.39")
    sets = needs_for(matrix, target, ["tensorrt"], {}).pip
    (pip_set,) = [p for p in sets if p.unresolved is not None]
    assert pip_set.requirements == ["tensorrt-cu13==10.16.1.11"]
    # The role's onnx set beside it (ONNX export's, for the ONNX converter), which pip resolves.
    assert [p.requirements for p in sets if p.unresolved is None] == [["numpy>=1.26,<3", "onnx"]]
    result = bundle.make(tmp_path / "b", matrix, [target], ["tensorrt"], workers=2)
    (manual,) = result.manifest["manual"]
    assert manual["what"] == (
        "TensorRT wheels (tensorrt-cu13==10.16.1.11 with its -libs and -bindings)"
    )
    assert manual["expected"] == "pip/tensorrt_cu13*-*.whl"
    assert "NVIDIA's pip index" in manual["where_from"]
    assert "--file tensorrt=PATH" in manual["where_from"]


def test_the_bundles_own_wheel_waits_for_another_build_of_the_checkout(tmp_path: Path):
    """setuptools builds a checkout in its build/ folder, and two builds at once remove each
    other's files there: `jetson-env bundle` building its own wheel beside another build of
    the same checkout failed with "jetson-env's own wheel could not be made for the bundle"
    (test_bundle_pip_fit, in the complete run on 44c83bf). While another process builds the
    checkout, the bundle's build waits (pip not even started), then builds."""
    from jetson_env.bundle import controller

    build = ("import sys; from pathlib import Path; from jetson_env.bundle import controller; "
             "print(controller._built_from(Path(sys.argv[1]), Path(sys.argv[2])))")  # fmt: skip
    with controller.one_build_of(REPO_ROOT):
        waiting = subprocess.Popen([sys.executable, "-c", build, str(REPO_ROOT), str(tmp_path)],
                                   stdout=subprocess.PIPE, text=True)  # fmt: skip
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=3)
        assert children(waiting.pid) == []  # no pip: it waits for the build held here
    out, _ = waiting.communicate(timeout=600)
    assert waiting.returncode == 0
    assert Path(out.strip()).name.startswith("jetson_env-"), out
