"""SSH transport: run probes in a remote host's Python, over paramiko, with verified host keys.

Nothing is installed on the target: each probe is sent on stdin to `python3 -`, as
locally. Host keys are checked against the system's and the user's known_hosts; an
unknown key is refused with its SHA256 fingerprint (as `ssh` prints it) and the
option that accepts it, `--accept-new-host-key`, which records it in ~/.ssh/known_hosts
like ssh's StrictHostKeyChecking=accept-new. A changed key is always refused.
Authentication: keys and the agent by default; a password only when asked for.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shlex
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import paramiko

from jetson_env.targets import Completed, LineCallback

DEFAULT_PORT = 22
CONNECT_TIMEOUT = 15
_HOST = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[^\]]+\]|[^:\s]+)(?::(?P<port>\d+))?$")


class ConnectError(Exception):
    """The target could not be reached or refused us; the message says why, `remedy` how."""

    def __init__(self, message: str, remedy: str | None = None):
        super().__init__(message)
        self.remedy = remedy


class UnknownHostKey(ConnectError):
    pass


@dataclass(frozen=True)
class Address:
    user: str | None
    host: str
    port: int

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        return f"{user}{self.host}" + (f":{self.port}" if self.port != DEFAULT_PORT else "")


def parse_address(text: str) -> Address:
    """'user@host[:port]' -> Address; ValueError with the expected form otherwise."""
    match = _HOST.match(text.strip())
    if not match:
        raise ValueError(f"--host {text!r} is not user@host[:port]")
    port = int(match.group("port") or DEFAULT_PORT)
    if not 0 < port < 65536:
        raise ValueError(f"--host {text!r}: port {port} is out of range")
    return Address(match.group("user"), match.group("host").strip("[]"), port)


def fingerprint(key: paramiko.PKey) -> str:
    """SHA256:... as `ssh` and `ssh-keygen -lf` print it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_name(address: Address) -> str:
    return address.host if address.port == DEFAULT_PORT else f"[{address.host}]:{address.port}"


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    def missing_host_key(self, client, hostname, key):
        raise UnknownHostKey(
            f"host key of {hostname} is not in known_hosts: {key.get_name()} {fingerprint(key)}",
            remedy="verify the fingerprint on the host (`ssh-keygen -lf "
            "/etc/ssh/ssh_host_*_key.pub`), then run again with --accept-new-host-key",
        )


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """Like ssh's StrictHostKeyChecking=accept-new: record an unknown key, refuse a changed one."""

    def __init__(self, known_hosts: Path):
        self.known_hosts = known_hosts

    def missing_host_key(self, client, hostname, key):
        self.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        client.get_host_keys().add(hostname, key.get_name(), key)
        with self.known_hosts.open("a") as handle:
            handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def _reason(exc: Exception) -> str:
    """'Connection refused', 'timed out', 'Name or service not known' rather than paramiko's."""
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError) and exc.errors:
        first = next(iter(exc.errors.values()))
        return first.strerror or str(first)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class SSHTarget:
    """targets.Target over SSH: `python - args` runs in the remote interpreter."""

    def __init__(
        self,
        address: Address,
        python: str = "python3",
        *,
        password: str | None = None,
        identity: str | None = None,
        accept_new_host_key: bool = False,
        known_hosts: Path | None = None,
    ):
        self.address = address
        self.python = python
        self.description = f"{address} ({python})"
        self._password = password
        self._identity = identity
        self._accept_new = accept_new_host_key
        self._known_hosts = known_hosts or Path.home() / ".ssh" / "known_hosts"
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()

    def connect(self) -> None:
        client = paramiko.SSHClient()
        client.load_system_host_keys()
        if self._known_hosts.exists():
            client.load_host_keys(str(self._known_hosts))
        policy = _AcceptNew(self._known_hosts) if self._accept_new else _RefuseUnknown()
        client.set_missing_host_key_policy(policy)
        where = f"{self.address.host}:{self.address.port}"
        try:
            client.connect(
                self.address.host,
                port=self.address.port,
                username=self.address.user,
                password=self._password,
                key_filename=self._identity,
                look_for_keys=self._password is None,
                allow_agent=self._password is None,
                timeout=CONNECT_TIMEOUT,
                banner_timeout=CONNECT_TIMEOUT,
                auth_timeout=CONNECT_TIMEOUT,
            )
        except UnknownHostKey:
            client.close()
            raise
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise ConnectError(
                f"the host key of {where} CHANGED: got {exc.key.get_name()} "
                f"{fingerprint(exc.key)}, known_hosts has {fingerprint(exc.expected_key)}",
                remedy="if the host was reinstalled, remove the old key: "
                f"ssh-keygen -R {shlex.quote(known_hosts_name(self.address))}",
            ) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            raise ConnectError(
                f"authentication to {self.address} failed: {exc}",
                remedy="load a key into ssh-agent or give one with --identity; "
                "or use --password to be asked for a password",
            ) from None
        except (OSError, paramiko.SSHException) as exc:
            client.close()
            reason = _reason(exc)
            login = f"{self.address.user}@{self.address.host}" if self.address.user else where
            raise ConnectError(
                reason,
                remedy="check that the host is up and sshd listens: "
                f"ssh -p {self.address.port} {login} true",
            ) from None
        self._client = client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def run_python(
        self, source: str, args: list[str], timeout: float, on_stderr: LineCallback | None = None
    ) -> Completed:
        if self._client is None:
            self.connect()
        # `timeout` ends the remote interpreter too, not only our wait for it.
        command = shlex.join(["timeout", "-s", "KILL", f"{timeout:g}", self.python, "-", *args])
        with self._lock:  # opening channels concurrently on one transport is safe; be gentle
            transport = self._client.get_transport()
            if transport is None or not transport.is_active():
                raise OSError(f"the SSH connection to {self.address} is closed")
            channel = transport.open_session(timeout=CONNECT_TIMEOUT)
        try:
            channel.exec_command(command)
            channel.sendall(source.encode())
            channel.shutdown_write()
            return self._collect(channel, timeout, on_stderr)
        finally:
            channel.close()

    @staticmethod
    def _collect(channel, timeout: float, on_stderr: LineCallback | None) -> Completed:
        start = time.monotonic()
        deadline = start + timeout
        stdout, stderr = bytearray(), bytearray()
        pending = ""
        while True:
            progressed = False
            while channel.recv_ready():
                stdout += channel.recv(65536)
                progressed = True
            while channel.recv_stderr_ready():
                chunk = channel.recv_stderr(65536)
                stderr += chunk
                progressed = True
                if on_stderr is not None:
                    pending += chunk.decode(errors="replace")
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        on_stderr(line)
            if channel.exit_status_ready() and not (
                channel.recv_ready() or channel.recv_stderr_ready()
            ):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:g}s")
            if not progressed:
                time.sleep(0.02)
        status = channel.recv_exit_status()
        if status == 137 and time.monotonic() - start >= timeout - 1:
            # `timeout -s KILL` ended the remote interpreter at its limit.
            raise TimeoutError(f"timed out after {timeout:g}s")
        if status > 128:  # the remote shell reports death by signal N as 128 + N
            status = -(status - 128)
        return Completed(status, stdout.decode(errors="replace"), stderr.decode(errors="replace"))
