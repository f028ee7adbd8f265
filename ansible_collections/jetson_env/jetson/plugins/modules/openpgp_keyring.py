#!/usr/bin/python
"""Verify an ASCII-armored OpenPGP public key and write it as a binary keyring for apt."""

import base64
import hashlib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: openpgp_keyring
short_description: Verify an armored OpenPGP public key and write its binary form for apt
description:
  - Decodes the ASCII armor of I(src) and checks the result against a pinned sha256 and
    a pinned v4 fingerprint before writing it to I(dest), the file a C(signed-by=) option
    of an apt source names.
  - The sha256 is taken of the binary (dearmored) key, so it does not depend on how the
    armor is wrapped or on trailing blank lines. Needs no gpg.
options:
  src: {description: The armored key file, type: path, required: true}
  dest: {description: Where the binary keyring is written (mode 0644), type: path, required: true}
  sha256: {description: Expected sha256 of the binary key, type: str, required: true}
  fingerprint: {description: Expected v4 fingerprint (40 hex digits), type: str, required: true}
"""

RETURN = r"""
sha256: {description: sha256 of the binary key, type: str, returned: always}
fingerprint: {description: fingerprint of the primary key, type: str, returned: always}
"""

BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
END = "-----END PGP PUBLIC KEY BLOCK-----"
PUBLIC_KEY_TAG = 6


class NotAKey(ValueError):
    """The file is not an armored v4 public key."""


def dearmor(text):
    """The binary packets inside an armored public key block (RFC 4880, section 6.2)."""
    lines = [line.strip() for line in text.splitlines()]
    try:
        start = lines.index(BEGIN)
        end = lines.index(END, start)
    except ValueError:
        raise NotAKey(f"no '{BEGIN}' ... '{END}' block") from None
    body = lines[start + 1 : end]
    # Armor headers ("Comment: ...") end at the first blank line.
    if "" in body:
        body = body[body.index("") + 1 :]
    data = "".join(line for line in body if line and not line.startswith("="))
    try:
        return base64.b64decode(data, validate=True)
    except ValueError as exc:
        raise NotAKey(f"the armor is not valid base64: {exc}") from None


def fingerprint(packets):
    """The v4 fingerprint of the first packet, which must be a public key (RFC 4880, 12.2)."""
    if not packets or not packets[0] & 0x80:
        raise NotAKey("the data does not start with an OpenPGP packet")
    first = packets[0]
    if first & 0x40:  # new format: tag in the low 6 bits, then a variable length
        tag = first & 0x3F
        length_octet = packets[1]
        if length_octet < 192:
            length, offset = length_octet, 2
        elif length_octet < 224:
            length, offset = ((length_octet - 192) << 8) + packets[2] + 192, 3
        elif length_octet == 255:
            length, offset = int.from_bytes(packets[2:6], "big"), 6
        else:
            raise NotAKey("a public key packet cannot have a partial length")
    else:  # old format: tag in bits 5-2, length type in bits 1-0
        tag = (first >> 2) & 0x0F
        size = {0: 1, 1: 2, 2: 4}.get(first & 0x03)
        if size is None:
            raise NotAKey("a public key packet cannot have an indeterminate length")
        length, offset = int.from_bytes(packets[1 : 1 + size], "big"), 1 + size
    if tag != PUBLIC_KEY_TAG:
        raise NotAKey(f"the first packet is not a public key (tag {tag})")
    body = packets[offset : offset + length]
    if len(body) != length:
        raise NotAKey("the public key packet is truncated")
    if body[0] != 4:
        raise NotAKey(f"a version {body[0]} key: only v4 fingerprints are checked")
    digest = hashlib.sha1(b"\x99" + length.to_bytes(2, "big") + body)
    return digest.hexdigest().upper()


def main():
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "dest": {"type": "path", "required": True},
            "sha256": {"type": "str", "required": True},
            "fingerprint": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    src, dest = module.params["src"], module.params["dest"]
    try:
        with open(src, encoding="ascii", errors="replace") as handle:
            packets = dearmor(handle.read())
        found_fingerprint = fingerprint(packets)
    except (OSError, NotAKey) as exc:
        module.fail_json(msg=f"{src} is not a usable OpenPGP public key: {exc}")
    found_sha256 = hashlib.sha256(packets).hexdigest()
    expected_sha256 = module.params["sha256"].lower()
    expected_fingerprint = module.params["fingerprint"].upper().replace(" ", "")
    result = {"sha256": found_sha256, "fingerprint": found_fingerprint, "changed": False}
    if (found_sha256, found_fingerprint) != (expected_sha256, expected_fingerprint):
        module.fail_json(
            msg=(
                f"the key in {src} is not the pinned one: sha256 {found_sha256} (expected "
                f"{expected_sha256}), fingerprint {found_fingerprint} (expected "
                f"{expected_fingerprint}). Nothing was changed. If the repository's key really "
                "changed, check the new one independently, then update the pin; otherwise "
                f"delete {src} to download it again."
            ),
            **result,
        )
    try:
        with open(dest, "rb") as handle:
            current = handle.read()
    except OSError:
        current = None
    if current != packets:
        result["changed"] = True
        if not module.check_mode:
            folder = os.path.dirname(dest) or "."
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".openpgp_keyring.")
            with os.fdopen(fd, "wb") as handle:
                handle.write(packets)
            os.chmod(tmp, 0o644)
            os.replace(tmp, dest)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
