"""SSH transport: run probes in a remote host's Python, over paramiko, with verified host keys.

Nothing is installed on the target: each probe is sent on stdin to `python3 -`, as
locally. Host keys are checked against the system's and the user's known_hosts; an
unknown key is refused with its SHA256 fingerprint (as `ssh` prints it) and the
option that accepts it, `--accept-new-host-key`, which records it in ~/.ssh/known_hosts
like ssh's StrictHostKeyChecking=accept-new. A changed key is always refused.
Authentication: keys and the agent by default; a password only when asked for.
"""

from __future__ import annotations

import getpass
import logging
import os
import shlex
import threading
import time
from pathlib import Path

import paramiko

from jetson_env import host_keys, installed
from jetson_env.ssh_address import Address, UsageError, parse_address
from jetson_env.targets import (
    CANCELLATION,
    POLL_SECONDS,
    Cancelled,
    Completed,
    Deadline,
    ExitStatus,
    LineCallback,
    StreamCollector,
    Unreachable,
    cancel_all,
    framed,
    launch_command,
)
from jetson_env.user_files import read_bounded

CONNECT_TIMEOUT = 15
CHANNEL_CLOSE_WAIT = 5  # seconds an interrupted run waits for its channel to close
IDENTITY_LIMIT = 1 << 20  # bytes: a private key is a few KB
KNOWN_HOSTS_LIMIT = 64 << 20  # bytes read of a known_hosts file
REASON_CHARS = 200  # of what a peer said, in a finding
SYSTEM_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")
# paramiko logs a failed negotiation (a garbage banner) with a traceback: we report it once.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


class ConnectError(Unreachable):
    """The target could not be reached or refused us; the message says why, `remedy` how."""

    def __init__(self, message: str, remedy: str | None = None, target: str = ""):
        super().__init__(message, remedy)
        self.target = target


class UnknownHostKey(ConnectError):
    pass


def check_identity(path: str) -> bool:
    """--identity must be a private key paramiko can read; True when it needs a
    passphrase (ssh-agent can hold it unlocked: the doctor asks for none)."""
    file = Path(path).expanduser()
    if not file.is_file():
        what = (
            "is a directory" if file.is_dir()
            else "is not a regular file" if file.exists()
            else "does not exist"
        )  # fmt: skip
        raise UsageError(f"--identity {path} {what}", hint="give the private key's file")
    try:
        if file.stat().st_size > IDENTITY_LIMIT:
            raise ValueError(f"it is larger than {IDENTITY_LIMIT} bytes")
        paramiko.PKey.from_path(file)
    except paramiko.PasswordRequiredException:
        return True
    except TypeError as exc:  # cryptography's word for an OpenSSH key with a passphrase
        if "password" in str(exc).lower():
            return True
        raise UsageError(f"--identity {path} is not a private key: {exc}") from None
    except (paramiko.SSHException, OSError, ValueError) as exc:
        raise UsageError(
            f"--identity {path} is not a private key: {exc}",
            hint="give the private key (not the .pub); make one with ssh-keygen -t ed25519",
        ) from None
    return False


def ask_password(address: Address) -> str:
    try:
        return getpass.getpass(f"password for {address}: ")
    except EOFError:
        raise UsageError(
            "--password: no terminal to ask on and no password on stdin",
            hint="run it in a terminal, or use a key (--identity, ssh-agent)",
        ) from None


def fingerprint(key: paramiko.PKey) -> str:
    """SHA256:... as `ssh` and `ssh-keygen -lf` print it."""
    return host_keys.fingerprint(key.asbytes())


def known_hosts_name(address: Address) -> str:
    return host_keys.known_hosts_name(address.host, address.port)


def known_hosts_problem(path: Path) -> str | None:
    """Why a new host key could not be recorded in path; None where it could."""
    if path.is_symlink() and not path.exists():
        return None
    if path.exists() and not path.is_file():
        return f"{path} is not a regular file"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable"
    folder = path.parent
    if folder.exists() and (not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK)):
        return f"{folder} is not a folder you can write to"
    return None


def load_known_hosts(keys: paramiko.HostKeys, path: Path) -> list[str]:
    """Add path's entries to keys, skipping what ssh would skip; returns what was skipped."""
    try:
        text = read_bounded(path, KNOWN_HOSTS_LIMIT).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"{path} was not read: {exc.strerror or exc}"]
    skipped = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entry = paramiko.hostkeys.HostKeyEntry.from_line(line, number)
        except Exception:  # bad base64, a key paramiko cannot parse: ssh skips the line too
            entry = None
        if entry is None or entry.key is None:
            skipped.append(f"{path} line {number} is not a host key entry: skipped")
            continue
        for name in entry.hostnames:
            keys.add(name, entry.key.get_name(), entry.key)
    return skipped


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    def __init__(self, known_hosts: Path, again: list[str] | None = None):
        self.known_hosts = known_hosts
        self.again = again

    def missing_host_key(self, client, hostname, key):
        short = key.get_name().removeprefix("ssh-").split("-")[0]  # ed25519, ecdsa, rsa
        verify = (f"compare it with the host's own (on the host: `ssh-keygen -lf "
                  f"/etc/ssh/ssh_host_{short}_key.pub`)")  # fmt: skip
        again = [*(self.again or ()), "--accept-new-host-key"]
        accept = (f"`{installed.command(shlex.join(again))}`" if self.again
                  else "the same command with --accept-new-host-key")  # fmt: skip
        problem = known_hosts_problem(self.known_hosts)
        then = (
            f"; {problem}: make it a file you can write to, then run {accept}" if problem
            else f"; only if they match, run {accept}, which records it in {self.known_hosts}"
        )  # fmt: skip
        raise UnknownHostKey(
            f"host key of {hostname} is not in known_hosts: {key.get_name()} {fingerprint(key)}",
            remedy=verify + then,
        )


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """Like ssh's StrictHostKeyChecking=accept-new: record an unknown key, refuse a changed one."""

    def __init__(self, known_hosts: Path):
        self.known_hosts = known_hosts

    def missing_host_key(self, client, hostname, key):
        try:
            self.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with self.known_hosts.open("a") as handle:
                handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        except OSError as exc:
            raise ConnectError(
                f"the new host key of {hostname} ({key.get_name()} {fingerprint(key)}) cannot "
                f"be recorded in {self.known_hosts}: {exc.strerror or exc}",
                remedy=f"make {self.known_hosts} a file you can write to",
            ) from None
        client.get_host_keys().add(hostname, key.get_name(), key)


def _reason(exc: BaseException) -> str:
    """'Connection refused', 'timed out', 'Name or service not known' rather than paramiko's;
    what a peer said cut to REASON_CHARS."""
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError) and exc.errors:
        first = next(iter(exc.errors.values()))
        return first.strerror or str(first)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return _said(exc)


def _said(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "... (cut)"


def open_target(
    host: str,
    python: str,
    *,
    identity: str | None = None,
    ask_for_password: bool = False,
    accept_new_host_key: bool = False,
    again: list[str] | None = None,
) -> SSHTarget:
    """A connected SSHTarget; UsageError for what the user must change in the command,
    ConnectError (with .target) when the host cannot be reached or refuses us. `again`: the
    user's command line, which an unknown host key's remedy repeats with
    --accept-new-host-key."""
    address = parse_address(host)
    locked = check_identity(identity) if identity else False
    password = ask_password(address) if ask_for_password else None
    target = SSHTarget(
        address,
        python,
        password=password,
        identity=identity,
        accept_new_host_key=accept_new_host_key,
        identity_locked=locked,
        again=again,
    )
    try:
        target.connect()
    except ConnectError as exc:
        exc.target = str(address)
        raise
    return target


class SSHTarget:
    """targets.Target over SSH: the probe script runs in the remote interpreter."""

    remote = True
    login_shell = True  # sshd runs the command through the user's login shell

    def __init__(
        self,
        address: Address,
        python: str = "python3",
        *,
        password: str | None = None,
        identity: str | None = None,
        accept_new_host_key: bool = False,
        known_hosts: Path | None = None,
        identity_locked: bool = False,
        again: list[str] | None = None,
    ):
        self.address = address
        self.python = python
        self.user = address.user
        self.description = f"{address} ({python})"
        self._password = password
        self._identity = identity
        self._identity_locked = identity_locked
        self._accept_new = accept_new_host_key
        self._again = again
        self._known_hosts = known_hosts or Path.home() / ".ssh" / "known_hosts"
        self._client: paramiko.SSHClient | None = None
        self.notes: list[str] = []  # known_hosts lines skipped, files not read
        self._lock = threading.Lock()

    def connect(self) -> None:
        client = paramiko.SSHClient()
        self.notes = [
            note
            for path in (SYSTEM_KNOWN_HOSTS, self._known_hosts)
            for note in load_known_hosts(client.get_host_keys(), path)
        ]
        policy = (_AcceptNew(self._known_hosts) if self._accept_new
                  else _RefuseUnknown(self._known_hosts, self._again))  # fmt: skip
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
        except ConnectError:
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
        except (paramiko.AuthenticationException, TypeError) as exc:
            # TypeError: cryptography's, for a key with a passphrase the agent does not hold
            client.close()
            if self._identity_locked:
                key = shlex.quote(self._identity or "")
                raise ConnectError(
                    f"authentication to {self.address} failed: --identity {self._identity} "
                    "needs a passphrase, and ssh-agent does not hold the key",
                    remedy=f"load it into ssh-agent (`ssh-add {key}`), then run again",
                ) from None
            raise ConnectError(
                f"authentication to {self.address} failed: {_said(exc)}",
                remedy="load a key into ssh-agent or give one with --identity; "
                "or use --password to be asked for a password",
            ) from None
        except (OSError, paramiko.SSHException) as exc:
            transport = client.get_transport()
            silent = transport is not None and not getattr(transport, "remote_version", "")
            client.close()
            command = shlex.join(["ssh", "-p", str(self.address.port), self.address.login, "true"])
            reason = _reason(exc)
            if silent and reason in ("No existing session", "Error reading SSH protocol banner"):
                reason = (
                    f"{where} accepted the connection but sent no SSH banner within "
                    f"{CONNECT_TIMEOUT}s: no SSH server answers there"
                )
            raise ConnectError(
                reason, remedy=f"check that the host is up and sshd listens: {command}"
            ) from None
        self._client = client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def run_python(
        self, script: str, deadline: Deadline, on_line: LineCallback, budget: float
    ) -> Completed:
        if self._client is None:
            self.connect()
        command = launch_command(self.python, budget, deadline.seconds)
        with self._lock:  # opening channels concurrently on one transport is safe; be gentle
            transport = self._client.get_transport()
            if transport is None or not transport.is_active():
                raise ConnectError(
                    f"the SSH connection to {self.address} is closed", remedy=self._retry()
                )
        status = ExitStatus(on_line)
        answer: list = []

        def work() -> None:
            try:
                channel = self._open(transport, command, framed(script), deadline)
                try:
                    answer.append(self._collect(channel, deadline, status))
                finally:
                    channel.close()  # the remote `cat` sees EOF: what the command started ends
            except BaseException as exc:  # raised below, in the caller's thread
                answer.append(exc)

        # paramiko runs in a thread of its own, so that Ctrl-C (or SIGTERM) lands in this
        # wait, never between one of paramiko's lock acquires and its `try`: that left the
        # channel's buffer locked, and closing the channel then waited on it forever.
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        try:
            while worker.is_alive():
                worker.join(POLL_SECONDS * 5)
        except BaseException:
            cancel_all()  # the worker sees it, ends its collecting and closes the channel
            worker.join(CHANNEL_CLOSE_WAIT)
            raise
        (result,) = answer
        if isinstance(result, BaseException):
            raise result
        return result

    def _open(self, transport, command: str, data: bytes, deadline: Deadline):
        """A session channel running `command`, `data` sent on its stdin: every step
        (opening, the exec request, the window for the data) within `deadline` and
        cancellable; a server that stalls is a ConnectError, not the interpreter's fault.
        A command that exits before reading its stdin (a login shell of /bin/false) closes the
        channel under sendall: that channel is returned, its exit status and output the answer."""
        opened: list = []
        failed: list[BaseException] = []
        step = ["open a session"]

        def start() -> None:
            try:
                channel = transport.open_session(timeout=max(deadline.at - time.monotonic(), 0.1))
                opened.append(channel)
                step[0] = "answer the exec request"
                channel.exec_command(command)
                step[0] = "take the probes on stdin"
                channel.sendall(data)  # the channel stays open: the probe's lifeline
                step[0] = ""
            except Exception as exc:  # reported below, in the caller's thread
                failed.append(exc)

        worker = threading.Thread(target=start, daemon=True)
        worker.start()
        while worker.is_alive():
            if CANCELLATION.event.is_set() or deadline.expired():
                for channel in opened:
                    channel.close()  # wakes the worker
                if CANCELLATION.event.is_set():
                    raise Cancelled()
                raise ConnectError(
                    f"{self.address}'s SSH server did not {step[0]} within {deadline.seconds:g}s",
                    remedy=self._retry(),
                )
            worker.join(POLL_SECONDS * 5)
        if failed and step[0] == "take the probes on stdin" and opened[0].exit_status_ready():
            return opened[0]  # the command ended before reading them: what it said decides
        if failed:
            for channel in opened:
                channel.close()
            raise ConnectError(
                f"{self.address}'s SSH server did not {step[0]}: {_reason(failed[0])}",
                remedy=self._retry(),
            )
        return opened[0]

    def _retry(self) -> str:
        command = shlex.join(["ssh", "-p", str(self.address.port), self.address.login, "true"])
        return f"check that the host's sshd runs commands: {command}"

    @staticmethod
    def _collect(channel, deadline: Deadline, status: ExitStatus) -> Completed:
        collectors = {"stdout": StreamCollector("stdout", status.on_line),
                      "stderr": StreamCollector("stderr", status.on_line)}  # fmt: skip
        receivers = {"stdout": (channel.recv_ready, channel.recv),
                     "stderr": (channel.recv_stderr_ready, channel.recv_stderr)}  # fmt: skip
        while True:
            progressed = False
            for name, (ready, receive) in receivers.items():
                if ready():
                    collectors[name].feed(receive(65536))
                    progressed = True
            if deadline.finished or any(c.overflow for c in collectors.values()):
                break
            if channel.exit_status_ready() and not (
                channel.recv_ready() or channel.recv_stderr_ready()
            ):
                break
            if CANCELLATION.event.is_set():
                raise Cancelled()
            if deadline.expired():
                raise TimeoutError(f"timed out after {deadline.seconds:g}s")
            if not progressed:
                time.sleep(POLL_SECONDS)
        for collector in collectors.values():
            collector.finish()
        overflow = next((c.name for c in collectors.values() if c.overflow), None)
        fallback = channel.recv_exit_status() if channel.exit_status_ready() else None
        return status.completed(collectors["stdout"].text, collectors["stderr"].text, overflow,
                                None if fallback == -1 else fallback)  # fmt: skip
