"""Hostile input, round 4 (issue 48): what a user names is read with a bound, and the
command's answer is one whole thing. An inventory that is /dev/zero or a FIFO, a --trust
key that is a FIFO, a --sign key that is /dev/zero, a --python that prints without end;
inventories Ansible reads only in part (doctor, plan and bundle -i, as provision); --sign
while another `bundle` adds to the folder; --json on failure and on SIGTERM; stdout that is
/dev/full or closed. The real CLI each time: the documented exit code, no traceback, a
message that says what to do, within seconds. No Docker: every case ends before a host is
reached.
"""

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TARBALL = "TensorRT-10.0.0.Linux.x86_64-gnu.cuda-12.4.tar.gz"


def jetson_env(*args: object, timeout: float = 60, env: dict | None = None, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "jetson_env.cli", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, **(env or {})}, **kwargs,
    )  # fmt: skip


def no_traceback(proc) -> None:
    assert "Traceback" not in (proc.stderr or "") + (proc.stdout or ""), proc.stderr


def said(proc) -> str:
    return " ".join(proc.stderr.split())


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    source = tmp_path / "src" / TARBALL
    source.parent.mkdir()
    source.write_bytes(os.urandom(4096))
    directory = tmp_path / "b"
    proc = jetson_env("bundle", directory, "--x86", "--roles", "tensorrt", "--no-controller",
                      "--file", f"tensorrt={source}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return directory


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def ssh_key(folder: Path, name: str) -> Path:
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
                   check=True)  # fmt: skip
    return key


# -- 5: unbounded reads and hangs ---------------------------------------------------------

INVENTORY_COMMANDS = [
    ("doctor", "--no-smoke"),
    ("plan", "--to", "R36.4.3"),
    ("bundle", "{dir}", "--roles", "python_base", "--no-controller"),
    ("provision", "--check"),
]


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
@pytest.mark.parametrize("command", INVENTORY_COMMANDS, ids=lambda c: c[0])
def test_an_inventory_that_is_no_file_is_refused_before_it_is_read(
    tmp_path: Path, fifo: Path, kind: str, command: tuple
):
    """`-i /dev/zero` read 6 GB in 5 s; `doctor -i FIFO` hung forever."""
    inventory = "/dev/zero" if kind == "dev-zero" else fifo
    args = [a.format(dir=tmp_path / "b") for a in command]
    start = time.monotonic()
    proc = jetson_env(*args, "-i", inventory, timeout=60, cwd=tmp_path)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "is not a regular file or folder" in said(proc), proc.stderr
    assert time.monotonic() - start < 30


@pytest.mark.parametrize(
    "command",
    [("bundle", "--verify", "{dir}"), ("provision", "--check", "--bundle", "{dir}"),
     ("doctor", "--fix", "--yes", "--no-smoke", "--bundle", "{dir}")],
    ids=lambda c: c[0],
)  # fmt: skip
def test_a_trust_key_that_is_a_fifo_is_refused_not_waited_on(bundle: Path, fifo: Path, command):
    """--trust FIFO hung forever (bundle --verify, provision, doctor --fix)."""
    args = [a.format(dir=bundle) for a in command]
    proc = jetson_env(*args, "--trust", fifo, timeout=30)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "is not a regular file" in said(proc), proc.stderr


def test_a_sign_key_that_is_a_device_is_refused_before_it_is_read(bundle: Path):
    """`bundle D --sign /dev/zero` read 6 GB."""
    start = time.monotonic()
    proc = jetson_env("bundle", bundle, "--sign", "/dev/zero", timeout=30)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "--sign /dev/zero is not a regular file" in said(proc), proc.stderr
    assert time.monotonic() - start < 10


def test_a_python_that_prints_without_end_is_read_with_a_bound(tmp_path: Path):
    """`provision --check --python X` read all X printed (3 GB in 4 s)."""
    chatty = tmp_path / "python3"
    chatty.write_text("#!/bin/sh\nhead -c 20000000 /dev/zero | tr '\\0' x\n")
    chatty.chmod(0o755)
    proc = jetson_env("provision", "--check", "--python", chatty, timeout=60)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "printed more than" in said(proc), proc.stderr[-2000:]
    assert len(proc.stderr) < 10_000


# -- 7: errors that looked like success ---------------------------------------------------


@pytest.mark.parametrize("command", INVENTORY_COMMANDS[:3], ids=lambda c: c[0])
def test_an_inventory_read_in_part_is_bad_input_everywhere(tmp_path: Path, command: tuple):
    """doctor, plan and bundle -i ran 2 of 5 hosts without a word about the other 3 (only
    provision refused)."""
    part = tmp_path / "part.yml"  # Ansible reads a and b and drops c, d and e with a warning
    part.write_text("all:\n  hosts:\n    a: {ansible_host: 127.0.0.1}\n    b:\n"
                    "  children:\n    g:\n      hosts: [c, d, e]\n")  # fmt: skip
    args = [a.format(dir=tmp_path / "b") for a in command]
    proc = jetson_env(*args, "-i", part, timeout=300, cwd=tmp_path)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "cannot read the whole inventory" in said(proc), proc.stderr
    assert "ansible-inventory" in said(proc)


def test_sign_waits_for_the_bundle_run_that_holds_the_folder(bundle: Path, tmp_path: Path):
    """--sign during another `bundle` run said "signed" and the bundle ended unsigned (the
    other run wrote its manifest after the signature)."""
    keys = tmp_path / "keys"
    keys.mkdir()
    team = ssh_key(keys, "team")
    lock = os.open(bundle / ".jetson-env-bundle.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another `jetson-env bundle` adding to the folder
    try:
        signer = subprocess.Popen(
            [sys.executable, "-m", "jetson_env.cli", "bundle", str(bundle), "--sign", str(team)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(2)
        assert signer.poll() is None, signer.communicate()
        manifest = json.loads((bundle / "manifest.json").read_text())
        manifest["manual"] = []  # the other run's last write of the manifest
        (bundle / "manifest.json").write_text(json.dumps(manifest))
    finally:
        os.close(lock)
    _out, err = signer.communicate(timeout=60)
    assert signer.returncode == 0, err
    assert "waiting for another jetson-env bundle" in err
    proc = jetson_env("bundle", "--verify", bundle, "--trust", f"{team}.pub")
    assert proc.returncode == 0, proc.stderr


def test_sign_json_prints_one_json_document(bundle: Path, tmp_path: Path):
    """`--sign --json` printed text on stdout."""
    keys = tmp_path / "keys"
    keys.mkdir()
    team = ssh_key(keys, "team")
    proc = jetson_env("bundle", bundle, "--sign", team, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["signed"] is True and data["bundle"] == str(bundle.resolve())
    assert data["fingerprint"].startswith("SHA256:")


@pytest.mark.parametrize(
    ("args", "code"),
    [(("bundle", "{tmp}/b", "--x86", "--roles", "nosuchrole", "--json"), 2),
     (("plan", "--to", "R99.9.9", "--json"), 2),
     (("doctor", "--json", "--python", "{tmp}/missing-python", "--no-smoke"), 3)],
)  # fmt: skip
def test_json_is_one_document_also_on_failure(tmp_path: Path, args: tuple, code: int):
    """--json stdout was empty on a failed run."""
    proc = jetson_env(*[a.format(tmp=tmp_path) for a in args], timeout=120)
    no_traceback(proc)
    assert proc.returncode == code, proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit_code"] == code
    assert data.get("error") or data.get("errors") or data.get("findings"), data


def test_json_is_one_document_when_terminated(tmp_path: Path):
    """--json stdout was empty on exits 130 and 143."""
    slow = tmp_path / "python3"
    slow.write_text("#!/bin/sh\nsleep 60\n")
    slow.chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jetson_env.cli", "info", "--json", "--python", str(slow)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    data = json.loads(out)
    assert data["exit_code"] == 143 and "terminated" in data["error"]


@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_a_stdout_that_cannot_be_written_is_a_clear_error(stdout: str):
    """A traceback when stdout was /dev/full or closed."""
    argv = [sys.executable, "-m", "jetson_env.cli", "matrix", "--json"]
    if stdout == "full":
        with open("/dev/full", "w") as full:
            proc = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True,
                                  timeout=60, check=False)  # fmt: skip
    else:
        proc = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *argv], stderr=subprocess.PIPE,
                              text=True, timeout=60, check=False)  # fmt: skip
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode in (1, 2), proc.stderr
    assert "stdout" in proc.stderr and "error:" in proc.stderr, proc.stderr
