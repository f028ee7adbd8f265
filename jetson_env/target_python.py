"""The one rule for the target Python: the interpreter jetson-env checks and provisions.

- This machine (doctor, info, provision and --fix without -i, images): `python3` on the
  caller's PATH, or the `--python` given, resolved to the executable it runs as
  (its `sys.executable`: a venv's own bin/python3, pyenv's real interpreter behind its
  shim). The doctor probes it, and provision tells Ansible to use it
  (`jetson_facts_python` and `ansible_python_interpreter`), so neither relies on
  Ansible's discovery picking the same one (it may pick a broken pyenv shim).
- A host of an inventory (doctor -i, bundle -i, provision -i): the host's
  `jetson_facts_python`, else the interpreter Ansible runs modules with there
  (`ansible_python_interpreter`, `interpreter_python`, discovery): `for_host()`, which
  the collection's `facts` module and `probe` action call.

And the one PEP 668 decision for pip (`overrides_pep668`), which the doctor's remedies
and the roles' pip path (the pip_packages role, through a filter) both read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping
from typing import Any

from jetson_env.collection import Data

# python3: kept in targets, where jetson_env.head_start reads it without PyYAML
from jetson_env.targets import DEFAULT_PYTHON as DEFAULT

# interpreter_python's values that ask Ansible to discover the host's Python.
DISCOVERY_MODES = ("auto", "auto_legacy", "auto_silent", "auto_legacy_silent")
# JSON: a path with a newline stays one line (and is then refused by checked()).
_EXECUTABLE = "import json, sys; print(json.dumps(sys.executable))"
# C0 and C1 control characters and DEL: no path of an interpreter has them (a newline in
# one would start another line of whatever reads it).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# What Ansible can run modules with: it puts ansible_python_interpreter into a shell
# command line unquoted (ansible-core 2.16) and templates it, so only plain path characters.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+@%,:=~-]+")
OUTPUT_LIMIT = 1 << 16  # bytes read of what the interpreter prints for _EXECUTABLE


class NoPython(Exception):
    """The target Python cannot be found or does not run: nothing was changed."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


def checked(path: object, what: str = "the target Python") -> str:
    """`path`, a Python's path that a target, an inventory or the user named, when it is a
    path: absolute, no control characters; else NoPython, before Ansible sees it."""
    hint = "give the interpreter with --python PATH (an absolute path, e.g. a venv's bin/python3)"
    text = path if isinstance(path, str) else ""
    if not text or not os.path.isabs(text) or _CONTROL.search(text):
        raise NoPython(f"{what} {path!r} is not an absolute path without control characters",
                       hint)  # fmt: skip
    return text


def checked_interpreter(path: object, what: str = "the target Python") -> str:
    """`path` checked (checked()) for Ansible to run its modules with: plain path characters
    only, as Ansible puts it into a shell command line and templates it."""
    text = checked(path, what)
    if not _PLAIN_PATH.fullmatch(text):
        raise NoPython(
            f"{what} {text!r} has characters Ansible cannot run modules with (spaces, quotes, "
            "shell or template characters)",
            "give --python a path without them (a symlink to it, e.g. /opt/py/bin/python3)",
        )
    return text


def local(python: str | None = None, timeout: float = 30.0) -> str:
    """The executable this machine's target Python runs as: `python` (default: `python3`
    on PATH), started once to ask its sys.executable."""
    given = python or DEFAULT
    found = given if os.sep in given else shutil.which(given)
    hint = "give the interpreter to provision with --python PATH (e.g. a venv's bin/python3)"
    if found is None:
        raise NoPython(f"no {given} on PATH", hint)
    try:
        proc = _bounded_run([found, "-c", _EXECUTABLE], timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NoPython(f"the Python {found} does not run: {exc}", hint) from None
    if proc is None:
        raise NoPython(f"the Python {found} printed more than {OUTPUT_LIMIT} bytes when asked "
                       "for its sys.executable: it is not a Python", hint)  # fmt: skip
    executable = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
    try:
        executable = [json.loads(executable[0])] if executable else []
    except ValueError:
        executable = []
    if not executable or not isinstance(executable[0], str) or not os.path.isabs(executable[0]):
        why = proc.stderr.strip() or proc.stdout.strip() or f"exit code {proc.returncode}"
        raise NoPython(f"the Python {found} does not run: {why.splitlines()[-1]}", hint)
    return checked(executable[0], f"the Python {found} runs as")


def _bounded_run(argv: list[str], timeout: float) -> subprocess.CompletedProcess | None:
    """`argv` run with at most OUTPUT_LIMIT bytes of each stream read (the process is killed
    past it: None); TimeoutExpired past `timeout`."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    read: dict[str, bytes] = {}

    def drain(name: str, stream) -> None:
        read[name] = stream.read(OUTPUT_LIMIT + 1)
        if len(read[name]) > OUTPUT_LIMIT:
            proc.kill()

    threads = [threading.Thread(target=drain, args=item, daemon=True)
               for item in (("out", proc.stdout), ("err", proc.stderr))]  # fmt: skip
    for thread in threads:
        thread.start()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    finally:
        for thread in threads:
            thread.join(5)
        proc.stdout.close()
        proc.stderr.close()
    if any(len(data) > OUTPUT_LIMIT for data in read.values()):
        return None
    out, err = (read.get(name, b"").decode(errors="replace") for name in ("out", "err"))
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def for_host(action: Any, task_vars: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A host's target Python inside an Ansible action plugin: its `jetson_facts_python`,
    else the one Ansible runs modules with; and the discovery fact when it discovered one.
    jetson_facts_python is templated as Ansible would (a user's inventory may build it from
    other variables); what a target said reaches it as data (`!unsafe`, collection.Data), which
    templating leaves as it is. NoPython when the result is no path."""
    given = action._templar.template(task_vars.get("jetson_facts_python") or "")
    if given:
        return checked(str(given), "jetson_facts_python"), {}
    return modules_interpreter(action, task_vars)


def modules_interpreter(action: Any, task_vars: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The interpreter Ansible would run a module with on this host, and the discovery fact
    when it discovered one: Ansible's own rule, in order: a connection that runs modules on
    the controller (network_cli) uses the playbook's Python; else the host's
    ansible_python_interpreter (templated), else ansible.cfg's or the environment's
    interpreter_python (ansible.constants); `auto*` or none: the host's discovered one, else
    Ansible's discovery (discover_interpreter, what ActionBase itself calls)."""
    from ansible import constants
    from ansible.executor.interpreter_discovery import discover_interpreter

    if getattr(action._connection, "_remote_is_local", False):
        return str(task_vars["ansible_playbook_python"]), {}
    given = task_vars.get("ansible_python_interpreter")
    configured = str(action._templar.template(given) if given else constants.INTERPRETER_PYTHON)
    configured = configured.strip()
    if configured and configured not in DISCOVERY_MODES:
        return configured, {}
    key = "discovered_interpreter_python"
    discovered = (task_vars.get("ansible_facts") or {}).get(key)
    if discovered:
        return str(discovered), {}
    mode = configured or "auto"
    python = discover_interpreter(
        action=action, interpreter_name="python", discovery_mode=mode, task_vars=task_vars
    )
    return python, {key: python}


def overrides_pep668(python: Mapping[str, Any]) -> bool:
    """Whether pip must be told --break-system-packages for this interpreter: PEP 668's
    marker applies to the interpreter itself, never inside a venv (pip's own rule).
    `python`: the probe's or the facts module's record (externally_managed, in_venv)."""
    return bool(python.get("externally_managed")) and not python.get("in_venv", False)


def local_variables(executable: str) -> dict[str, str]:
    """The playbook's variables for this machine's target Python `executable` (local()):
    the roles install into it and Ansible runs its modules with it, so no discovery can
    pick another (a pyenv shim for a version pyenv has not selected). Checked
    (checked_interpreter) and marked as data, which Ansible never templates."""
    executable = Data(checked_interpreter(executable))
    return {"jetson_facts_python": executable, "ansible_python_interpreter": executable}
