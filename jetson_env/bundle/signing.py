"""Signing a bundle with the SSH keys a team already has: OpenSSH's `ssh-keygen -Y sign`
and `-Y verify` (namespace jetson-env-bundle), no new dependency.

What is signed is the manifest (every key but `signature`, as canonical JSON), and the
manifest pins every file of the bundle by size and sha256 (the apt repositories' Packages
too), so the signature covers every byte a host gets from the bundle. It says who made the
bundle; it does not say that what they put in it is good, and it does not stop someone who
holds the private key. A run with `--trust KEY.pub` refuses an unsigned or wrongly signed
bundle before any host is touched.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from jetson_env import installed
from jetson_env.bundle.errors import BundleError
from jetson_env.bundle.manifest import load_manifest, read_manifest, write_manifest
from jetson_env.checks.context import shell_word
from jetson_env.user_files import NotAFile, check_named, read_named

NAMESPACE = "jetson-env-bundle"
SIGNER = "jetson-env-bundle-signer"
SSH_KEYGEN_TIMEOUT_S = 120
PUBLIC_KEY_MAX_BYTES = 16384
KEY_MAX_BYTES = 1 << 20  # a private key is a few KB


def signed_bytes(manifest: dict[str, Any]) -> bytes:
    """What the signature covers: the manifest without its signature, canonical JSON."""
    body = {key: value for key, value in manifest.items() if key != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise BundleError(
            "ssh-keygen (OpenSSH) is not installed on this machine: it signs and checks bundles",
            hint="install OpenSSH's client (Debian and Ubuntu: apt-get install openssh-client)",
        )
    return found


def check_key(key: Path) -> None:
    """BundleError unless `key` (--sign) is a regular file of a key's size: a FIFO or a
    device is refused before ssh-keygen reads it (user_files)."""
    try:
        check_named(key, "--sign", KEY_MAX_BYTES)
    except NotAFile as exc:
        raise BundleError(str(exc), hint="give an OpenSSH private key file") from None


def sign(directory: Path, key: Path) -> dict[str, str]:
    """Sign the bundle's manifest with the OpenSSH private key `key` (ssh-keygen asks for
    its passphrase, or uses ssh-agent for a key whose public half is given). Returns the
    signing key's fingerprint and the signed manifest's sha256."""
    check_key(key)
    manifest = load_manifest(directory)
    if not manifest["artifacts"]:
        raise BundleError(f"{directory} holds no artifact to sign")
    try:
        proc = subprocess.run(
            [_ssh_keygen(), "-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE],
            input=signed_bytes(manifest),
            capture_output=True,
            timeout=SSH_KEYGEN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:  # a passphrase asked on the terminal, never typed
        raise BundleError(
            f"ssh-keygen did not sign with {key} within {SSH_KEYGEN_TIMEOUT_S} s: it waited "
            "for the key's passphrase on the terminal. Nothing was signed.",
            hint=f"type the passphrase when asked, or add the key to ssh-agent first (ssh-add "
            f"{shell_word(str(key))}) and sign again",
        ) from None
    signature = proc.stdout.decode("ascii", "replace")
    if proc.returncode != 0 or "BEGIN SSH SIGNATURE" not in signature:
        raise BundleError(
            f"ssh-keygen could not sign with {key}: "
            + (proc.stderr.decode(errors="replace").strip()[-300:] or f"exit {proc.returncode}"),
            hint="give an OpenSSH private key (ssh-keygen -t ed25519 makes one)",
        )
    manifest_sha256 = write_manifest(directory, {**manifest, "signature": signature})
    return {"fingerprint": signer_fingerprint(signature), "manifest_sha256": manifest_sha256}


def signer_fingerprint(signature: str) -> str:
    """The fingerprint of the public key an OpenSSH signature carries (its SSHSIG blob:
    magic, version, then the key)."""
    body = "".join(line for line in signature.splitlines() if line and "-----" not in line)
    blob = base64.b64decode(body)
    size = int.from_bytes(blob[10:14], "big")
    digest = hashlib.sha256(blob[14 : 14 + size]).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def check(directory: Path, public_key: Path, manifest: dict[str, Any] | None = None) -> str:
    """BundleError unless the bundle's manifest (`manifest`, as the caller read it once,
    else read here) is signed by `public_key`'s private half. Returns the key's fingerprint
    (`SHA256:...`, as `ssh-keygen -l` prints it)."""
    if manifest is None:
        manifest = read_manifest(directory)
    if manifest is None:
        raise BundleError(f"{directory} is not a jetson-env bundle (no manifest.json)")
    trusted = _public_key_line(public_key)
    quoted = shell_word(str(directory))
    if not manifest.get("signature"):
        raise BundleError(
            f"the bundle {directory} is not signed, and --trust {public_key} asks for its "
            "signature. Nothing was changed.",
            hint="sign it where it was made: "
            f"`{installed.command(f'jetson-env bundle {quoted} --sign KEY')}`",
        )
    with tempfile.TemporaryDirectory(prefix="jetson-env-trust-") as tmp:
        allowed = Path(tmp) / "allowed_signers"
        allowed.write_text(f'{SIGNER} namespaces="{NAMESPACE}" {trusted}\n')
        signature = Path(tmp) / "manifest.sig"
        signature.write_text(manifest["signature"])
        verify = ["-Y", "verify", "-f", str(allowed), "-I", SIGNER, "-n", NAMESPACE]
        proc = subprocess.run(
            [_ssh_keygen(), *verify, "-s", str(signature)],
            input=signed_bytes(manifest),
            capture_output=True,
            timeout=SSH_KEYGEN_TIMEOUT_S,
            check=False,
        )
    if proc.returncode != 0:
        raise BundleError(
            f"the bundle {directory} is not signed by {public_key} (or was changed after it "
            "was signed). Nothing was changed.",
            hint="get the bundle again from its maker, or check that this is their key",
        )
    return fingerprint(trusted)


def fingerprint(key_line: str) -> str:
    """`SHA256:...` of an OpenSSH public key line (`TYPE BASE64`), as `ssh-keygen -l`."""
    digest = hashlib.sha256(base64.b64decode(key_line.split()[1])).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _public_key_line(path: Path) -> str:
    """`TYPE BASE64` of an OpenSSH public key file."""
    try:
        text = read_named(path, "--trust", PUBLIC_KEY_MAX_BYTES).decode("ascii")
    except NotAFile as exc:
        raise BundleError(
            str(exc), hint="give the .pub file of the key that signed the bundle"
        ) from None
    except UnicodeDecodeError as exc:
        raise BundleError(f"--trust {path}: cannot be read as a public key: {exc}") from None
    words = text.split()
    if (
        len(words) < 2
        or not re.fullmatch(r"(ssh-|ecdsa-|sk-)[a-z0-9@.-]{1,64}", words[0])
        or not re.fullmatch(r"[A-Za-z0-9+/]{16,8192}={0,2}", words[1])
    ):
        raise BundleError(
            f"--trust {path} is not an OpenSSH public key (like `ssh-ed25519 AAAA... user`)",
            hint="give the .pub file of the key that signed the bundle",
        )
    return f"{words[0]} {words[1]}"
