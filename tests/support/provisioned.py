"""A provisioned host of kind K at inputs I, whatever test, worker or order asks for it.

A test whose precondition is "a host provisioned by the playbook" (the second run, --check
after it, the doctor inside it) gets it from `ProvisionedState.host()`: a container of the
kept image `jetson-env-provisioned:<kind>-<end>-<key>` when one exists, else a host it
provisions itself (and keeps). So running one test id alone, or any selection on any
pytest-xdist worker, gives the verdict of the whole run. Tests ABOUT the first run still
provision from nothing, and keep what they made (`keep()`) for the others.

A provisioned host is the host and the controller that provisioned it: the state is the
committed container plus the controller's folder of that run (lock file, key and wheel
caches, the stand-ins it installed from) and the play's variables, kept under
~/.cache/jetson-env/provisioned/<tag>/; the variables' paths into that folder are moved to
the folder a reuse restores it in.

The key is a hash of what decides the state: the host image's tag (itself a hash of its
recipe), the Ansible end's versions, the checkout's input files (path and content), the
checkout's place (the variables name files in it) and `recipe`, values of the session that
reach the host (a stand-in repository's URL and key). A change in any is a new key, and
so a fresh provisioning; kept states of old keys are never read again.
"""

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import (
    CACHE,
    HOSTS,
    REPO_ROOT,
    Host,
    HostImage,
    HostSetupError,
    _file_lock,
    image_exists,
    short_hash,
)

KEPT = CACHE / "provisioned"
IMAGE = "jetson-env-provisioned"
COMMIT_TIMEOUT_S = 900


def input_files(inputs: tuple[str, ...]) -> list[str]:
    """The inputs' files as git sees them (tracked and untracked, not ignored)."""
    for name in inputs:
        if not (REPO_ROOT / name).exists():
            raise FileNotFoundError(f"provisioning input {name} does not exist in {REPO_ROOT}")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *inputs],
        cwd=REPO_ROOT, capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return sorted({name for name in listed.decode().split("\0") if name})


def _moved(value, old: str, new: str):
    """`value` (the play's variables) with paths under `old` moved under `new`."""
    if isinstance(value, str):
        return new + value[len(old) :] if value == old or value.startswith(old + "/") else value
    if isinstance(value, list):
        return [_moved(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _moved(item, old, new) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class ProvisionedState:
    """A host of kind `kind` (tests/support/hosts.py's HOSTS, or a name for the image `base`)
    provisioned at Ansible end `end` with the files `inputs` of the checkout and the session's
    values `recipe`."""

    kind: str
    end: str
    inputs: tuple[str, ...]
    recipe: dict = field(default_factory=dict)
    base: str = ""  # the image hosts start from when it is not the kind's (a lived-in host's)

    @cached_property
    def key(self) -> str:
        parts: list[str | bytes] = [
            self.base or HostImage(HOSTS[self.kind]).tag,
            ANSIBLE_ENDS[self.end].ensure().versions,
            str(REPO_ROOT),
            json.dumps(self.recipe, sort_keys=True),
        ]
        for relative in input_files(self.inputs):
            path = REPO_ROOT / relative
            if path.is_symlink():
                parts += [relative, "->", os.readlink(path)]
            elif path.is_file():
                parts += [relative, path.read_bytes()]
        return short_hash(*parts)

    @property
    def tag(self) -> str:
        return f"{IMAGE}:{self.kind}-{self.end}-{self.key}"

    @property
    def _lock(self) -> str:
        return self.tag.replace(":", "-")

    @property
    def _folder(self) -> Path:
        return KEPT / self.tag.replace(":", "-")

    def kept(self) -> bool:
        """Whether the whole state is kept: the image is committed last, so its presence
        says the controller's folder beside it is complete."""
        return (self._folder / "vars.json").exists() and image_exists(self.tag)

    def keep(self, host: Host, work: Path, playbook_vars: dict) -> None:
        """Keep `host`, just provisioned from the controller folder `work` with
        `playbook_vars`, as this state, unless it is kept (a test of the first run calls it
        once it passed)."""
        with _file_lock(self._lock):
            if not self.kept():
                self._keep(host, work, playbook_vars)

    def _keep(self, host: Host, work: Path, playbook_vars: dict) -> None:
        folder = self._folder
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(work, folder / "controller", symlinks=True)
        (folder / "vars.json").write_text(json.dumps({"work": str(work), "vars": playbook_vars}))
        committed = subprocess.run(
            ["docker", "commit", host.container, self.tag],
            capture_output=True, text=True, timeout=COMMIT_TIMEOUT_S, check=False,
        )  # fmt: skip
        if committed.returncode != 0:
            raise HostSetupError(f"docker commit {host.container} {self.tag}: {committed.stderr}")

    def _restore(self, work: Path) -> dict:
        """The kept controller folder copied to `work`; the kept variables, moved there."""
        saved = json.loads((self._folder / "vars.json").read_text())
        shutil.copytree(self._folder / "controller", work, symlinks=True, dirs_exist_ok=True)
        return _moved(saved["vars"], saved["work"], str(work))

    def host(
        self,
        work: Path,
        start: Callable[[str | None], Host],
        provision: Callable[[Host, Path], dict],
    ) -> tuple[Host, dict]:
        """A provisioned host of this state and the variables to run the playbook on it with,
        the controller's side in `work` (an empty folder). `start(image)` starts a container
        (of `image`, else of the kind's fresh image); `provision(host, work)` provisions it
        from nothing, asserting that the run succeeded, and returns its variables. Workers
        wanting the same state wait for one provisioning (a lock on the tag)."""
        with _file_lock(self._lock):
            if self.kept():
                return start(self.tag), self._restore(work)
            host = start(None)
            try:
                playbook_vars = provision(host, work)
                self._keep(host, work, playbook_vars)
            except BaseException:
                subprocess.run(["docker", "rm", "--force", host.container], capture_output=True,
                               check=False)  # fmt: skip
                raise
            return host, playbook_vars
