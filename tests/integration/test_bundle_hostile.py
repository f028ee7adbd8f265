"""Hostile input, round 3 (issue 37): a bundle is untrusted input. Bundles that lie in their
manifest, point out of their folder, link out of it, are FIFOs, /dev/zero or 200,000 deep;
bundles signed, unsigned, signed by another key and changed after signing; two makers on
one folder; Ctrl-C and SIGTERM in the middle of a download; a full disk; a --verify remedy;
inventories that are missing, empty or read only in part; an unknown --tags role; a planted
command in a manifest; control characters in a fleet page. The real CLI each time: the
documented exit code, no traceback, a message that says what to do, nothing read or
written outside the bundle. No Docker (the traversal cases that provision a real host are
in test_bundle_offline.py); bundles are made offline from local files (`--x86 --roles
tensorrt --file tensorrt=PATH`: the x86 TensorRT tarball, which nothing downloads).
"""

import fcntl
import hashlib
import json
import os
import pty
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonschema
import pytest
from support.bounds import cli_with_bound
from support.signals import sigint_as_in_a_terminal
from support.standin_apt import tls_files

from jetson_env.fleet import page as fleet_page

TARBALL = "TensorRT-10.0.0.Linux.x86_64-gnu.cuda-12.4.tar.gz"


def jetson_env(*args: object, timeout: float = 120, env: dict | None = None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr


def tarball(folder: Path, size: int = 4096, name: str = TARBALL) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(os.urandom(size))
    return path


def make_bundle(directory: Path, source: Path) -> dict:
    proc = jetson_env("bundle", directory, "--x86", "--roles", "tensorrt", "--no-controller",
                      "--file", f"tensorrt={source}", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads((directory / "manifest.json").read_text())


@pytest.fixture(scope="module")
def made_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's bundle, made once (each making resolves and reads the role's onnx set:
    seconds); tests get copies of it (`bundle`)."""
    folder = tmp_path_factory.mktemp("bundle")
    make_bundle(folder / "b", tarball(folder / "src"))
    return folder / "b"


@pytest.fixture
def bundle(made_bundle: Path, tmp_path: Path) -> Path:
    """A copy of the module's bundle of this test's own, to change as it likes: its verdict
    depends on no other test's changes or order."""
    directory = tmp_path / "b"
    shutil.copytree(made_bundle, directory, symlinks=True)
    return directory


def tarball_of(manifest: dict) -> list[str]:
    """The bundle's TensorRT tarball (beside it: the wheels of the role's onnx set)."""
    return [path for path in manifest["artifacts"] if path.startswith("files/")]


def write_manifest(directory: Path, manifest: dict) -> None:
    (directory / "manifest.json").write_text(json.dumps(manifest))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 1, 2: paths outside the bundle -------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["pip/../../../../../../../../../etc/passwd", "/etc/passwd", "files/../../../etc/passwd",
     "pip/./../../etc/passwd", "pip/.hidden", "etc/passwd"],
)  # fmt: skip
def test_a_manifest_path_outside_the_bundle_is_refused_unread(bundle: Path, path: str):
    """--verify said "all 3 artifact(s) match" for pip/../../etc/passwd, printed its sha256
    and told the user to delete it."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    passwd = Path("/etc/passwd")
    entry = next(iter(manifest["artifacts"].values()))
    manifest["artifacts"][path] = {**entry, "sha256": sha256(passwd),
                                   "size": passwd.stat().st_size}  # fmt: skip
    write_manifest(bundle, manifest)
    for proc in (jetson_env("bundle", "--verify", bundle),
                 jetson_env("bundle", "--verify", bundle, "--json")):  # fmt: skip
        no_traceback(proc)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "not a plain path inside the bundle" in " ".join(proc.stderr.split())
        assert sha256(passwd) not in proc.stdout + proc.stderr
    proc = jetson_env("provision", "--bundle", bundle, "--check")
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "running:" not in proc.stderr  # refused before ansible-playbook started


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_symlink_out_of_the_bundle_is_never_followed(bundle: Path, tmp_path: Path, link: str):
    """A symlinked file and a symlinked files/ were followed by --verify, the doctor and
    provision."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    (path,) = tarball_of(manifest)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / TARBALL).write_bytes((bundle / path).read_bytes())  # same bytes, same sha256
    if link == "file":
        (bundle / path).unlink()
        (bundle / path).symlink_to(outside / TARBALL)
    else:
        for file in (bundle / "files").iterdir():
            file.unlink()
        (bundle / "files").rmdir()
        (bundle / "files").symlink_to(outside)
    proc = jetson_env("bundle", "--verify", bundle)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "symbolic link" in proc.stderr


def test_a_packages_file_naming_a_file_outside_its_repository_is_refused(tmp_path: Path):
    """The preflight's rule for an apt repository (the real provision is in
    test_bundle_offline.py): a Filename that climbs out is refused, not handed to a copy."""
    from jetson_env import bundle

    directory = tmp_path / "b"
    repo = directory / "apt" / "debian-bookworm-amd64"
    repo.mkdir(parents=True)
    packages = b"Package: python3-pip\nFilename: ./../../../../etc/shadow\nSHA256: 00\n"
    (repo / "Packages").write_bytes(packages)
    manifest = {
        "schema": 1, "manual": [], "artifacts": {},
        "targets": {"x86_64-x86-cp311": {"machine": "x86_64", "python": "3.11", "glibc": "2.36",
                                         "l4t": "", "distribution": "debian/bookworm",
                                         "roles": ["python_base"]}},
        "apt": {"x86_64-x86-cp311": {"distribution": "debian/bookworm",
                                     "roles": {"python_base": ["python3-pip"]},
                                     "packages": ["python3-pip"],
                                     "repo": "apt/debian-bookworm-amd64", "not_bundled": [],
                                     "why_not": {}, "download": ""}},
        "apt_repos": {"apt/debian-bookworm-amd64": {"packages_sha256":
                                                    hashlib.sha256(packages).hexdigest()}},
    }  # fmt: skip
    write_manifest(directory, manifest)
    plan = bundle.host_plan(
        directory,
        {"machine": "x86_64", "is_jetson": False, "l4t": None,
         "os": {"id": "debian", "version_codename": "bookworm"}},
        {"major_minor": "3.11", "version": "3.11.2", "libc": "2.36"},
        {"python_base": True},
    )  # fmt: skip
    assert plan["error"] and "not a plain file name" in plan["error"], plan


# -- 6: malformed manifests and folders ---------------------------------------------------


def _nested(depth: int) -> str:
    return '{"schema": 1, "targets": {}, "artifacts": {}, "manual": [], "apt": {}, "x": ' + (
        "[" * depth + "]" * depth + "}"
    )


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("list", "is not a jetson-env bundle manifest"),
        ("wrong-shape", "is not a jetson-env bundle manifest"),
        ("nested", "is not JSON"),
        ("nan", "is not JSON"),
        ("dev-zero", "cannot be read"),
        ("fifo", "cannot be read"),
        ("huge", "larger than"),
    ],
)
def test_a_malformed_manifest_is_bad_input_not_a_traceback_or_a_hang(
    bundle: Path, kind: str, message: str
):
    manifest = bundle / "manifest.json"
    manifest.unlink()
    if kind == "list":
        manifest.write_text("[1, 2]")
    elif kind == "wrong-shape":
        manifest.write_text(json.dumps({"schema": 1, "targets": [], "artifacts": {},
                                        "manual": [], "apt": {}}))  # fmt: skip
    elif kind == "nested":
        manifest.write_text(_nested(200_000))
    elif kind == "nan":
        manifest.write_text('{"schema": 1, "targets": {}, "artifacts": {"files/a": {"size": NaN}}}')
    elif kind == "dev-zero":
        manifest.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(manifest)
    else:
        with manifest.open("wb") as out:
            out.truncate(40 << 20)
    start = time.monotonic()
    adding = ("bundle", bundle, "--x86", "--roles", "tensorrt", "--no-controller")
    for args in (("bundle", "--verify", bundle), ("provision", "--bundle", bundle, "--check"),
                 adding):  # fmt: skip
        proc = jetson_env(*args, timeout=30)
        no_traceback(proc)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in " ".join(proc.stderr.split()), proc.stderr
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("kind", ["file", "fifo", "read-only"])
def test_a_bundle_folder_that_cannot_be_one_is_bad_input(tmp_path: Path, kind: str):
    if kind == "read-only" and os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")
    directory = tmp_path / "b"
    if kind == "file":
        directory.write_text("x")
    elif kind == "fifo":
        os.mkfifo(directory)
    else:
        directory.mkdir()
        directory.chmod(0o555)
    proc = jetson_env("bundle", directory, "--x86", "--roles", "tensorrt", "--no-controller",
                      "--file", f"tensorrt={tarball(tmp_path / 'src')}", timeout=30)  # fmt: skip
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "cannot be used as a bundle folder" in proc.stderr


def test_deeply_nested_or_nan_playbook_vars_are_bad_input():
    for text in ("[" * 50_000 + "]" * 50_000, '{"a": NaN}'):
        proc = jetson_env("doctor", "--fix", "--yes", "--playbook-vars", text, timeout=60)
        no_traceback(proc)
        assert proc.returncode == 2, proc.stderr
        assert "--playbook-vars is not JSON" in proc.stderr


# -- signatures ---------------------------------------------------------------------------


def ssh_key(folder: Path, name: str) -> Path:
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
                   check=True)  # fmt: skip
    return key


def test_a_signed_bundle_is_trusted_and_anything_else_refused(bundle: Path, tmp_path: Path):
    keys = tmp_path / "keys"
    keys.mkdir()
    team, other = ssh_key(keys, "team"), ssh_key(keys, "other")
    pub = f"{team}.pub"

    # provision and doctor --fix: one check of the bundle, before any probe or change.
    for command in (("provision", "--check"), ("doctor", "--fix", "--yes", "--no-smoke")):
        unsigned = jetson_env(*command, "--bundle", bundle, "--trust", pub)
        no_traceback(unsigned)
        assert unsigned.returncode == 2 and "is not signed" in unsigned.stderr, unsigned.stderr
        assert "running:" not in unsigned.stderr

    assert jetson_env("bundle", bundle, "--sign", team).returncode == 0
    assert "BEGIN SSH SIGNATURE" in json.loads((bundle / "manifest.json").read_text())["signature"]
    proc = jetson_env("bundle", "--verify", bundle, "--trust", pub)
    assert proc.returncode == 0, proc.stderr

    proc = jetson_env("bundle", "--verify", bundle, "--trust", f"{other}.pub")
    no_traceback(proc)
    assert proc.returncode == 2 and "is not signed by" in proc.stderr, proc.stderr
    for command in (("provision", "--check"), ("doctor", "--fix", "--yes", "--no-smoke")):
        proc = jetson_env(*command, "--bundle", bundle, "--trust", f"{other}.pub")
        assert proc.returncode == 2 and "running:" not in proc.stderr, proc.stderr
        assert "is not signed by" in proc.stderr, proc.stderr

    # A file swapped after signing, its manifest entry changed to match: the signature no
    # longer covers it.
    manifest = json.loads((bundle / "manifest.json").read_text())
    (path,) = tarball_of(manifest)
    (bundle / path).write_bytes(b"swapped")
    manifest["artifacts"][path].update(sha256=sha256(bundle / path), size=7)
    write_manifest(bundle, manifest)
    assert jetson_env("bundle", "--verify", bundle).returncode == 0  # consistent, but ...
    proc = jetson_env("bundle", "--verify", bundle, "--trust", pub)
    assert proc.returncode == 2 and "changed after it was signed" in proc.stderr, proc.stderr


# -- 4: two makers, Ctrl-C and SIGTERM ----------------------------------------------------


def test_two_bundle_runs_on_one_folder_keep_both(tmp_path: Path):
    """Two team members (or CI jobs) adding to one folder at once: one role's entries were
    lost, both exiting 0."""
    directory = tmp_path / "b"
    sources = [tarball(tmp_path / f"src{i}", 64 << 20, f"TensorRT-10.{i}.0.tar.gz")
               for i in range(2)]  # fmt: skip
    argv = [sys.executable, "-m", "jetson_env.cli", "bundle", str(directory), "--x86",
            "--roles", "tensorrt", "--no-controller", "--file"]  # fmt: skip
    procs = [
        subprocess.Popen(
            [*argv, f"tensorrt={source}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for source in sources
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        no_traceback(subprocess.CompletedProcess(proc.args, proc.returncode, "", err))
        assert proc.returncode == 0, err
    manifest = json.loads((directory / "manifest.json").read_text())
    assert {f"files/{s.name}" for s in sources} <= set(manifest["artifacts"])
    assert jetson_env("bundle", "--verify", directory).returncode == 0


class Trickle(BaseHTTPRequestHandler):
    """A download that never ends: a byte every 50 ms."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 30))
        self.end_headers()
        try:
            while True:
                self.wfile.write(b"x" * 1024)
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            return

    def log_message(self, *args):
        return


@pytest.fixture
def trickle_url() -> Iterator[str]:
    tls = tls_files()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert, tls.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


# The CLI's own `bundle` command, its x86 TensorRT tarball's source one that never ends
# (jetson-env fetches only the matrix's URLs: the one thing replaced here is that URL).
SLOW_BUNDLE = """
import sys
from pathlib import Path
from jetson_env import cli
try:
    from jetson_env.bundle import making, needs as needs_mod
except ImportError:  # one bundle.py (before the split): shown failing there
    import jetson_env.bundle as making
    needs_mod = making

def needs_for(matrix, target, roles, files):
    found = needs_mod.Needs()
    found.urls.append(needs_mod.UrlFile("tensorrt", "TensorRT tarball", sys.argv[2],
                                        "TensorRT-slow.tar.gz", None))
    return found

making.needs_for = needs_for
sys.exit(cli.main(["bundle", sys.argv[1], "--x86", "--roles", "tensorrt", "--no-controller"]))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_ends_a_download_within_a_second(
    tmp_path: Path, trickle_url: str, sig: signal.Signals
):
    """Ctrl-C waited for every download in flight (163 s) and left no manifest."""
    directory = tmp_path / "b"
    make_bundle(directory, tarball(tmp_path / "src"))
    before = json.loads((directory / "manifest.json").read_text())
    env = {**os.environ, "SSL_CERT_FILE": str(tls_files().bundle)}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_BUNDLE, str(directory), trickle_url],
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=sigint_as_in_a_terminal)  # fmt: skip
    part = directory / "files" / ".TensorRT-slow.tar.gz.part"
    deadline = time.monotonic() + 60
    while not (part.exists() and part.stat().st_size > 4096):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(sig)
    start = time.monotonic()
    try:
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert time.monotonic() - start < 1.5
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), err
    assert "Traceback" not in err
    assert not part.exists()
    after = json.loads((directory / "manifest.json").read_text())
    assert after["artifacts"] == before["artifacts"]
    assert jetson_env("bundle", "--verify", directory).returncode == 0


# -- 5: errors that looked like success ---------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_a_failed_run_that_says_so(tmp_path: Path, small_disk: Path):
    """A full disk exited 0 with "supply by hand" and an invalid --file python_base=; with
    the cache on the same disk, a traceback."""
    source = tarball(tmp_path / "src", 8 << 20)
    cache = {"XDG_CACHE_HOME": str(small_disk / "cache")}  # the cache on the same disk
    proc = jetson_env("bundle", small_disk / "b", "--x86", "--roles", "tensorrt",
                      "--no-controller", "--file", f"tensorrt={source}", env=cache)  # fmt: skip
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "No space left on device" in text and "free some space" in text
    assert "supply by hand" not in text
    assert not list((small_disk / "b").rglob("*.part"))


def test_the_verify_remedy_repairs_what_it_names(bundle: Path, tmp_path: Path):
    """--verify's remedy added 0 files, and --verify then failed again."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    (path,) = tarball_of(manifest)
    (bundle / path).unlink()
    proc = jetson_env("bundle", "--verify", bundle, "--json")
    assert proc.returncode == 1
    (problem,) = json.loads(proc.stdout)["problems"]
    assert problem["path"] == path and problem["problem"] == "missing"
    words = shlex.split(problem["fix"])
    assert words[:2] == ["jetson-env", "bundle"]
    proc = jetson_env(*words[1:])
    assert proc.returncode == 0, proc.stderr
    assert jetson_env("bundle", "--verify", bundle).returncode == 0


def test_a_planted_command_in_a_manifest_stays_text(bundle: Path, tmp_path: Path):
    """--verify built its fix line from the manifest's target arguments: pasting it ran a
    planted `touch`."""
    pwned = tmp_path / "pwned"
    manifest = json.loads((bundle / "manifest.json").read_text())
    (path,) = tarball_of(manifest)
    (key,) = manifest["targets"]
    manifest["targets"][key]["args"] = f"--x86 $(touch {pwned})"
    manifest["artifacts"][path]["role"] = f"tensorrt;touch {pwned}"
    write_manifest(bundle, manifest)
    (bundle / path).unlink()
    proc = jetson_env("bundle", "--verify", bundle, "--json")
    no_traceback(proc)
    if proc.returncode == 1:  # the fix line, pasted into a shell whose jetson-env does nothing
        stub = tmp_path / "bin"
        stub.mkdir()
        (stub / "jetson-env").write_text("#!/bin/sh\nexit 0\n")
        (stub / "jetson-env").chmod(0o755)
        for problem in json.loads(proc.stdout)["problems"]:
            subprocess.run(["sh", "-c", problem["fix"]], env={"PATH": f"{stub}:/usr/bin:/bin"},
                           check=False)  # fmt: skip
    else:
        assert proc.returncode == 2 and "not of the documented form" in proc.stderr
    assert not pwned.exists()


MANIFEST_SCHEMA = json.loads(
    (Path(__file__).parents[2] / "docs" / "bundle-manifest.schema.json").read_text()
)


@pytest.mark.parametrize(
    ("field", "value"),
    [("glibc", "2.36; rm"), ("roles", ["tensorrt;touch x"]), ("machine", 7), ("args", ["--x86"])],
)
def test_the_manifest_has_the_published_shape_and_readers_refuse_another(
    bundle: Path, field: str, value: object
):
    """The manifest `jetson-env bundle` writes is valid against
    docs/bundle-manifest.schema.json (checked here with jsonschema, the tests' validator),
    and what that schema refuses --verify and the preflight refuse, as not of the
    documented form, before reading anything through it."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    jsonschema.Draft7Validator.check_schema(MANIFEST_SCHEMA)
    jsonschema.Draft7Validator(MANIFEST_SCHEMA).validate(manifest)
    (key,) = manifest["targets"]
    manifest["targets"][key][field] = value
    assert not jsonschema.Draft7Validator(MANIFEST_SCHEMA).is_valid(manifest)
    write_manifest(bundle, manifest)
    for args in (("bundle", "--verify", bundle), ("provision", "--bundle", bundle, "--check")):
        proc = jetson_env(*args, timeout=60)
        no_traceback(proc)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "not of the documented form" in " ".join(proc.stderr.split()), proc.stderr


def test_inventories_that_are_missing_empty_or_read_in_part_are_bad_input(tmp_path: Path):
    empty = tmp_path / "empty.yml"
    empty.write_text("")
    part = tmp_path / "part.yml"  # Ansible reads a and b and drops c, d and e with a warning
    part.write_text("all:\n  hosts:\n    a: {ansible_host: 127.0.0.1}\n    b:\n"
                    "  children:\n    g:\n      hosts: [c, d, e]\n")  # fmt: skip
    for inventory, message in (
        (tmp_path / "missing.yml", "cannot read the whole inventory"),
        (empty, "has no host"),
        (part, "cannot read the whole inventory"),
    ):
        proc = jetson_env("provision", "-i", inventory, "--check", cwd=tmp_path, timeout=300)
        no_traceback(proc)
        assert proc.returncode == 2, (inventory, proc.stderr)
        assert message in proc.stderr and "ansible-inventory" in proc.stderr
        assert "running:" not in proc.stderr


def test_an_unknown_role_in_tags_is_bad_input(tmp_path: Path):
    proc = jetson_env("provision", "--tags", "python_base,pyton_base", "--check", cwd=tmp_path)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "no role pyton_base" in proc.stderr and "python_base" in proc.stderr
    assert "running:" not in proc.stderr


def test_the_doctors_bundle_command_has_no_empty_glibc(bundle: Path):
    """doctor --bundle printed `--glibc ` with nothing after it: a usage error itself."""
    proc = jetson_env("doctor", "--json", "--no-smoke", "--check", "termcolor", "--bundle",
                      bundle, "--python", sys.executable, timeout=120)  # fmt: skip
    report = json.loads(proc.stdout)
    reasons = [fix["why"] for fix in report["bundle"]["fixes"]]
    lines = [why.split("`")[1] for why in reasons if "`jetson-env bundle" in why]
    lines += [report["bundle"]["add"]["command"]] if report["bundle"]["add"] else []
    assert lines, report["bundle"]  # termcolor's role is not in a tensorrt bundle
    for line in lines:
        words = shlex.split(line)
        for option in ("--glibc", "--python-version", "--distribution"):
            if option in words:
                assert words[words.index(option) + 1][:1].isalnum(), line


# -- files for people ---------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_a_fleet_page_shows_control_characters_as_the_terminal_does(suffix: str):
    """Raw ESC and BEL from a target reached --report's HTML and Markdown files."""
    hostile = "torch \x1b[2J\x1b]0;owned\x07 \x9b31m"
    report = {"findings": [{"check": "torch", "status": "fail", "summary": hostile}],
              "fixes": [{"number": 1, "checks": ["torch"], "command": f"pip install {hostile}"}],
              "platform": {}}  # fmt: skip
    host = {"host": f"h{hostile}", "status": "fail", "platform_label": hostile, "report": report}
    grouped = {
        **report["fixes"][0],
        "words": False,
        "note": None,
        "hosts": [host["host"]],
        "role": None,
        "where": "host",
    }  # the fleet's fixes, each once with its hosts
    fleet = {"inventory": "fleet.yml", "status": "fail", "exit_code": 1, "counts": {"fail": 1},
             "hosts": [host], "fix": None, "fixes": [grouped]}  # fmt: skip
    page = fleet_page.render(fleet, suffix)
    assert not any(ch in page for ch in "\x1b\x07\x9b"), repr(page)
    assert "\\x1b[2J" in page


# -- round 4 (issue 48): writes into a bundle folder ---------------------------------------


@pytest.mark.parametrize("planted", ["manifest-temp", "part-file", "files-folder"])
def test_a_link_planted_in_a_bundle_folder_is_never_written_through(
    bundle: Path, tmp_path: Path, planted: str
):
    """A link at `.manifest.json.tmp`, at `files/.NAME.part` or as `files/` itself: the
    manifest and the file's bytes went to the link's target (the victim was overwritten)."""
    victim = tmp_path / "victim"
    victim.write_text("the user's own file\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    new = tarball(tmp_path / "new", name="TensorRT-10.1.0.Linux.x86_64-gnu.cuda-12.4.tar.gz")
    if planted == "manifest-temp":
        (bundle / ".manifest.json.tmp").symlink_to(victim)
    elif planted == "part-file":
        (bundle / "files" / f".{new.name}.part").symlink_to(victim)
    else:
        for file in (bundle / "files").iterdir():
            (outside / file.name).write_bytes(file.read_bytes())
            file.unlink()
        (bundle / "files").rmdir()
        (bundle / "files").symlink_to(outside)
    before = (bundle / "manifest.json").read_bytes()
    proc = jetson_env("bundle", bundle, "--x86", "--roles", "tensorrt", "--no-controller",
                      "--file", f"tensorrt={new}")  # fmt: skip
    no_traceback(proc)
    assert victim.read_text() == "the user's own file\n"
    assert sorted(p.name for p in outside.iterdir()) == ([] if planted != "files-folder"
                                                         else [TARBALL])  # fmt: skip
    if planted == "files-folder":  # refused whole, before anything was fetched or written
        assert proc.returncode == 2, proc.stderr
        text = " ".join(proc.stderr.split())
        assert "files is a symbolic link" in text and "nothing was written" in text, text
        assert (bundle / "manifest.json").read_bytes() == before
    else:  # the planted link is removed, never followed; the run adds the file
        assert proc.returncode == 0, proc.stderr
        assert f"files/{new.name}" in json.loads((bundle / "manifest.json").read_text())[
            "artifacts"]  # fmt: skip
        assert (bundle / "files" / new.name).read_bytes() == new.read_bytes()
        assert jetson_env("bundle", "--verify", bundle).returncode == 0


# An Ansible callback that swaps the bundle's manifest for another once ansible-playbook has
# started (after `--trust` checked it, before any task reads it): deterministic, no race.
SWAPPER = """
import os
from ansible.plugins.callback import CallbackBase

class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "swap_manifest"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        os.replace(os.environ["SWAP_FROM"], os.environ["SWAP_TO"])
"""


def test_the_manifest_trust_verified_is_the_one_the_play_reads(bundle: Path, tmp_path: Path):
    """A manifest swapped for an unsigned one after `provision --bundle DIR --trust KEY.pub`
    had checked it was the one the playbook used."""
    keys = tmp_path / "keys"
    keys.mkdir()
    team = ssh_key(keys, "team")
    assert jetson_env("bundle", bundle, "--sign", team).returncode == 0
    manifest = json.loads((bundle / "manifest.json").read_text())
    del manifest["signature"]
    (path,) = tarball_of(manifest)
    manifest["artifacts"][path]["what"] = "swapped in"
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(manifest))
    plugins = tmp_path / "callbacks"
    plugins.mkdir()
    (plugins / "swap_manifest.py").write_text(SWAPPER)
    env = {"ANSIBLE_CALLBACK_PLUGINS": str(plugins), "ANSIBLE_CALLBACKS_ENABLED": "swap_manifest",
           "SWAP_FROM": str(swapped), "SWAP_TO": str(bundle / "manifest.json")}  # fmt: skip
    proc = jetson_env("provision", "--bundle", bundle, "--trust", f"{team}.pub", "--check",
                      "--python", sys.executable, env=env, timeout=600)  # fmt: skip
    no_traceback(proc)
    assert not swapped.exists()  # the swap happened, after the check
    assert "running:" in proc.stderr, proc.stderr
    assert proc.returncode != 0, proc.stdout
    text = " ".join(proc.stdout.split())
    assert "changed after --trust checked it" in text, proc.stdout[-3000:]


def test_verify_applies_the_preflights_apt_checks(tmp_path: Path):
    """--verify passed a bundle whose apt Packages names a file outside its repository,
    which the preflight refuses."""
    directory = tmp_path / "b"
    repo = directory / "apt" / "debian-bookworm-amd64"
    repo.mkdir(parents=True)
    packages = b"Package: python3-pip\nFilename: ./../../../../etc/shadow\nSHA256: 00\n"
    (repo / "Packages").write_bytes(packages)
    manifest = {
        "schema": 1, "manual": [], "artifacts": {},
        "targets": {"x86_64-x86-cp311": {"machine": "x86_64", "python": "3.11", "glibc": "2.36",
                                         "l4t": "", "distribution": "debian/bookworm",
                                         "roles": ["python_base"]}},
        "apt": {"x86_64-x86-cp311": {"distribution": "debian/bookworm",
                                     "roles": {"python_base": ["python3-pip"]},
                                     "packages": ["python3-pip"],
                                     "repo": "apt/debian-bookworm-amd64", "not_bundled": [],
                                     "why_not": {}, "download": ""}},
        "apt_repos": {"apt/debian-bookworm-amd64": {"packages_sha256":
                                                    hashlib.sha256(packages).hexdigest()}},
    }  # fmt: skip
    write_manifest(directory, manifest)
    proc = jetson_env("bundle", "--verify", directory, "--json")
    no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (problem,) = json.loads(proc.stdout)["problems"]
    assert "not a plain file name" in problem["problem"], problem


def test_verify_remedies_for_a_file_index_wheel_run(tmp_path: Path):
    """--verify's remedy for a wheel from a file: index was `--file python_base=...`, which
    `bundle` refuses ("unknown kind"). The printed remedy is run here."""
    directory = tmp_path / "b"
    proc = jetson_env("bundle", directory, "--x86", "--roles", "python_base", "--no-controller",
                      timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((directory / "manifest.json").read_text())
    local = [p for p, e in manifest["artifacts"].items() if e["source"].startswith("file:")]
    if not local:
        pytest.skip("pip's configured index here is not a file: index")
    wheel = local[0]
    (directory / wheel).unlink()
    proc = jetson_env("bundle", "--verify", directory, "--json")
    assert proc.returncode == 1, proc.stderr
    (problem,) = json.loads(proc.stdout)["problems"]
    words = shlex.split(problem["fix"])
    assert words[:2] == ["jetson-env", "bundle"], problem
    proc = jetson_env(*words[1:], timeout=900)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert jetson_env("bundle", "--verify", directory).returncode == 0


def test_verify_trust_says_what_it_verified(bundle: Path, tmp_path: Path):
    """Issue 47: `bundle --verify --trust` never said the signature was checked."""
    keys = tmp_path / "keys"
    keys.mkdir()
    team = ssh_key(keys, "team")
    assert jetson_env("bundle", bundle, "--sign", team).returncode == 0
    fingerprint = subprocess.run(["ssh-keygen", "-l", "-f", f"{team}.pub"], capture_output=True,
                                 text=True, check=True).stdout.split()[1]  # fmt: skip
    manifest_sha256 = sha256(bundle / "manifest.json")
    proc = jetson_env("bundle", "--verify", bundle, "--trust", f"{team}.pub")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "signature: good" in text and fingerprint in text and manifest_sha256 in text, text
    proc = jetson_env("bundle", "--verify", bundle, "--trust", f"{team}.pub", "--json")
    data = json.loads(proc.stdout)
    assert data["signature"] == {"key": f"{team}.pub", "fingerprint": fingerprint}
    assert data["manifest_sha256"] == manifest_sha256


SSH_KEYGEN_BOUND_S = 5  # jetson_env.bundle.signing's, 120 s for users (support.bounds)


def test_sign_with_a_passphrase_nobody_types_is_a_clear_error(bundle: Path, tmp_path: Path):
    """A terminal (a pty, the process's controlling one: ssh-keygen asks on /dev/tty) where
    nobody types the key's passphrase: after ssh-keygen's bound, a BundleError that says
    what it waited for, exit 2 (was a subprocess.TimeoutExpired traceback). The real
    ssh-keygen, pty and message; only the bound is lowered (support.bounds)."""
    key = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "not typed", "-f", str(key)],
                   check=True)  # fmt: skip
    master, slave = pty.openpty()

    def on_the_terminal() -> None:  # after setsid: the pty becomes the controlling terminal
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    sign = cli_with_bound("jetson_env.bundle.signing", "SSH_KEYGEN_TIMEOUT_S", SSH_KEYGEN_BOUND_S)
    proc = subprocess.Popen([*sign, "bundle", str(bundle), "--sign", str(key)], stdin=slave,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=on_the_terminal)  # fmt: skip
    os.close(slave)
    try:
        stdout, stderr = proc.communicate(timeout=SSH_KEYGEN_BOUND_S + 60)
    finally:
        os.close(master)
    assert "Traceback" not in stderr + stdout, stderr
    assert proc.returncode == 2, stderr
    said = " ".join(stderr.split())
    assert f"ssh-keygen did not sign with {key} within {SSH_KEYGEN_BOUND_S} s:" in said
    assert "waited for the key's passphrase on the terminal. Nothing was signed." in said
    assert "signature" not in json.loads((bundle / "manifest.json").read_text())
