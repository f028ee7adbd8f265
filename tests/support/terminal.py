"""A command run on a pseudo-terminal, as typed in one: what it wrote there, escape sequences
included (the output options and the quiet tests read it as a user sees it)."""

import errno
import os
import pty
import subprocess
from collections.abc import Sequence
from pathlib import Path


def on_a_pty(
    argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int, str]:
    """`argv` with stdin, stdout and stderr on a pseudo-terminal: its exit code and all it
    wrote there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(list(argv), stdin=follower, stdout=follower, stderr=follower,
                            cwd=cwd, env=env)  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError as exc:  # EIO: the process closed its end
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")
