"""The collection's openpgp_keyring module: the key pin that guards NVIDIA's Jetson apt repository.

Keys are real ones made by gpg (the stand-in repository's signing key); the module is
checked against gpg's own fingerprint and binary export, and run for real through
`ansible localhost -m openpgp_keyring`.
"""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.standin_apt import signing_key

REPO_ROOT = Path(__file__).resolve().parents[2]
LIBRARY = REPO_ROOT / "ansible_collections" / "jetson_env" / "jetson" / "plugins" / "modules"
ANSIBLE = Path(os.environ.get("VIRTUAL_ENV", REPO_ROOT / ".venv")) / "bin" / "ansible"

spec = importlib.util.spec_from_file_location("openpgp_keyring", LIBRARY / "openpgp_keyring.py")
keyring = importlib.util.module_from_spec(spec)
spec.loader.exec_module(keyring)


@pytest.fixture(scope="module")
def key():
    return signing_key()


def test_dearmored_key_is_gpgs_binary_export_whatever_the_wrapping(key):
    binary = keyring.dearmor(key.armored.decode())
    assert hashlib.sha256(binary).hexdigest() == key.binary_sha256
    text = key.armored.decode()
    rewrapped = "\r\n".join(text.splitlines()) + "\r\n\r\n\n"
    with_header = text.replace("\n\n", "\nComment: re-exported\n\n", 1)
    assert keyring.dearmor(rewrapped) == binary
    assert keyring.dearmor("leading text\n" + with_header) == binary


def test_fingerprint_matches_gpg_for_old_and_new_packet_headers(key):
    binary = keyring.dearmor(key.armored.decode())
    assert keyring.fingerprint(binary) == key.fingerprint
    # gpg writes the public key packet with an old-format header; re-encode it in the
    # new format (RFC 4880 4.2.2) and the fingerprint must not change.
    assert binary[0] & 0x40 == 0
    size = {0: 1, 1: 2, 2: 4}[binary[0] & 0x03]
    length = int.from_bytes(binary[1 : 1 + size], "big")
    assert length < 192
    new_format = bytes([0xC0 | 6, length]) + binary[1 + size :]
    assert keyring.fingerprint(new_format) == key.fingerprint


def test_what_is_not_a_v4_public_key_is_refused(key):
    binary = keyring.dearmor(key.armored.decode())
    with pytest.raises(keyring.NotAKey, match="no '-----BEGIN PGP PUBLIC KEY BLOCK-----'"):
        keyring.dearmor("<html>404 Not Found</html>")
    with pytest.raises(keyring.NotAKey, match="not valid base64"):
        keyring.dearmor(key.armored.decode().replace("\n\n", "\n\n*", 1))
    with pytest.raises(keyring.NotAKey, match="not a public key"):
        keyring.fingerprint(bytes([0x88]) + binary[1:])  # tag 2: a signature packet
    with pytest.raises(keyring.NotAKey, match="truncated"):
        keyring.fingerprint(binary[:20])
    size = {0: 1, 1: 2, 2: 4}[binary[0] & 0x03]
    v5 = bytearray(binary)
    v5[1 + size] = 5
    with pytest.raises(keyring.NotAKey, match="version 5"):
        keyring.fingerprint(bytes(v5))


def run_module(args: dict) -> dict:
    result = subprocess.run(
        [str(ANSIBLE), "localhost", "-m", "openpgp_keyring", "-a", json.dumps(args),
         "--module-path", str(LIBRARY), "-o", "-c", "local", "-i", "localhost,",
        "-e", f"ansible_python_interpreter={sys.executable}"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_FORCE_COLOR": "0"},
    )  # fmt: skip
    # One line: "localhost | SUCCESS => {...}" or "localhost | FAILED! => {...}".
    line = result.stdout.strip()
    return {
        "ok": " | SUCCESS" in line or " | CHANGED" in line,
        **json.loads(line.split("=>", 1)[1]),
    }


def test_the_module_writes_the_verified_key_once_and_refuses_another(key, tmp_path: Path):
    armored = tmp_path / "repo.asc"
    armored.write_bytes(key.armored)
    dest = tmp_path / "keyring.gpg"
    pins = {"sha256": key.binary_sha256, "fingerprint": key.fingerprint}

    first = run_module({"src": str(armored), "dest": str(dest), **pins})
    assert first["ok"] and first["changed"], first
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == key.binary_sha256
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    again = run_module({"src": str(armored), "dest": str(dest), **pins})
    assert again["ok"] and not again["changed"], again

    other = tmp_path / "other.gpg"
    wrong = run_module({"src": str(armored), "dest": str(other), **pins, "sha256": "0" * 64})
    assert not wrong["ok"]
    assert "is not the pinned one" in wrong["msg"]
    assert f"sha256 {key.binary_sha256} (expected {'0' * 64})" in wrong["msg"]
    assert "Nothing was changed." in wrong["msg"]
    assert not other.exists()
