"""The collection's provision playbook as `doctor --fix` runs it, one role at a time: how
ansible-playbook reaches the host (this machine, --host over ssh, or a host of the user's
inventory), the command, its variables in a file only the user can read, and what the
collection's results callback recorded (`provision` adds that callback the same way)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jetson_env import collection, lifeline
from jetson_env.ssh_address import DEFAULT_PORT, parse_address

RESULTS_CALLBACK = f"{collection.FQCN}.results"
# The callbacks jetson-env enables beside the user's: the results it reads, and the filters
# and matrix loaded once in ansible-playbook's main process (each task's worker is a fork).
OWN_CALLBACKS = (RESULTS_CALLBACK, f"{collection.FQCN}.preload")


@dataclass(frozen=True)
class Connection:
    """How ansible-playbook reaches the target: this machine, or USER@HOST[:PORT] over ssh,
    its host key checked against the known_hosts the doctor's SSH used ($HOME's, where
    ssh alone would read the passwd entry's home)."""

    host: str | None = None
    identity: str | None = None
    # --password: ssh asks for the password (ansible-playbook --ask-pass), as the doctor did.
    ask_pass: bool = False

    def arguments(self) -> list[str]:
        if self.host is None:
            return ["-i", "localhost,", "-l", "localhost", "-c", "local"]
        address = parse_address(self.host)
        known_hosts = shlex.quote(str(Path.home() / ".ssh" / "known_hosts"))
        args = ["-i", f"{address.host},", "-l", address.host, "-c", "ssh",
                "--ssh-common-args", f"-o UserKnownHostsFile={known_hosts}"]  # fmt: skip
        if address.user:
            args += ["-u", address.user]
        if self.identity:
            args += ["--private-key", self.identity]
        if self.ask_pass:
            args.append("--ask-pass")
        return args

    def variables(self) -> dict[str, Any]:
        """Connection variables that go with the others (the vars file)."""
        if self.host is None:
            return {}
        port = parse_address(self.host).port
        return {} if port == DEFAULT_PORT else {"ansible_port": port}


@dataclass(frozen=True)
class InventoryHost:
    """One host of the user's inventory (`doctor -i INVENTORY --fix`): its connection, become
    and interpreter are the inventory's, as for `ansible-playbook -i INVENTORY --limit HOST`."""

    inventory: str
    host: str

    def arguments(self) -> list[str]:
        return ["-i", self.inventory, "--limit", self.host]

    def variables(self) -> dict[str, Any]:
        return {}


def command(
    ansible_playbook: str,
    connection: Connection | InventoryHost,
    roles: list[str],
    variables_file: Path,
    *,
    check: bool,
    ask_become_pass: bool,
) -> list[str]:
    """The ansible-playbook command; its variables are in `variables_file` (variables_file()),
    never on the command line: they may hold a become password."""
    cmd = [ansible_playbook, collection.PROVISION, *connection.arguments(),
           "--tags", ",".join(roles), "-e", f"@{variables_file}"]  # fmt: skip
    if ask_become_pass:
        cmd.append("--ask-become-pass")
    if check:
        cmd += ["--check", "--diff"]
    return cmd


@contextlib.contextmanager
def variables_file(variables: dict[str, Any]) -> Iterator[Path]:
    """The playbook's variables as a YAML file only this user can read (mode 0600, as
    mkstemp makes it), removed afterwards; collection.Data in it tagged `!unsafe`."""
    fd, name = tempfile.mkstemp(prefix="jetson-env-fix-", suffix=".yml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(collection.extra_vars(variables) + "\n")
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def run_playbook(cmd: list[str]) -> PlaybookRun:
    """Run it as the user would (their ansible.cfg, stdout callback and current directory),
    its output on stderr (diagnostics); the exit code, the hosts' changed count and the
    failed tasks, read from the collection's results callback (no counts when the run ended
    before its stats)."""
    with tempfile.TemporaryDirectory(prefix="jetson-env-fix-") as tmp:
        results_file = Path(tmp) / "results.json"
        env = with_own_callbacks(cmd[0], collection.environment(cmd[0]), results_file)
        process = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=sys.stderr,
                                   text=True, preexec_fn=lifeline.ends_with_us())  # fmt: skip
        assert process.stdout is not None
        for line in process.stdout:
            sys.stderr.write(line)
        code = process.wait()
        try:
            results = json.loads(results_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return PlaybookRun(code, None, [])
    changed = sum(stats["changed"] for stats in results["hosts"].values())
    failures = [f"{f['task']}: {f['msg']}" if f.get("msg") else f["task"]
                for f in results["failed"]]  # fmt: skip
    return PlaybookRun(code, changed, failures)


@dataclass(frozen=True)
class PlaybookRun:
    code: int
    changed: int | None
    failures: list[str]  # "task: message" of each failed task

    def error(self) -> str:
        """The last failed task's message: the one that ended the run (a failure a block
        rescued comes before the rescue's own)."""
        if self.failures:
            return self.failures[-1][:600]
        return f"ansible-playbook exited {self.code} (its output is above)"


def with_own_callbacks(ansible_playbook: str, env: dict[str, str], results_file: Path) -> dict:
    """`env` with jetson-env's callbacks enabled beside the user's, the results callback
    writing to `results_file`."""
    env = dict(env)
    env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(
        [*callbacks_enabled(ansible_playbook, env), *OWN_CALLBACKS]
    )
    env["JETSON_ENV_RESULTS_FILE"] = str(results_file)
    return env


def callbacks_enabled(ansible_playbook: str, env: dict[str, str]) -> list[str]:
    """The callbacks the user's own settings enable (the environment, ANSIBLE_CONFIG,
    ./ansible.cfg, ~/.ansible.cfg), as `ansible-config dump` of the same Ansible says, so
    that --fix adds its results callback to them instead of replacing them."""
    if env.get("ANSIBLE_CALLBACKS_ENABLED"):
        return [name for name in env["ANSIBLE_CALLBACKS_ENABLED"].split(",") if name.strip()]
    ansible_config = str(Path(ansible_playbook).with_name("ansible-config"))
    return list(_configured_callbacks(ansible_config, os.getcwd(), tuple(sorted(env.items()))))


@cache
def _configured_callbacks(ansible_config: str, cwd: str, env: tuple) -> tuple[str, ...]:
    """CALLBACKS_ENABLED from `ansible-config dump --format json` (once per process: every
    role's run asks); none when that Ansible has no ansible-config or it fails."""
    try:
        done = subprocess.run([ansible_config, "dump", "--format", "json"], env=dict(env),
                              cwd=cwd, capture_output=True, text=True, timeout=120,
                              check=False)  # fmt: skip
        settings = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return ()
    for setting in settings if isinstance(settings, list) else ():
        if isinstance(setting, dict) and setting.get("name") == "CALLBACKS_ENABLED":
            return tuple(setting.get("value") or ())
    return ()
