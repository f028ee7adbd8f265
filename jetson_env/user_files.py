"""Files a user names on the command line (an inventory, `--trust KEY.pub`, `--sign KEY`,
known_hosts, provision's `-e @FILE` and the files it passes on to ansible-playbook): what
is not a regular file is refused before it is read (a FIFO would block for ever, a device
never ends), and a file is read with a bound. One rule for every command: each refusal is
bad input (exit 2) that names the path and what it is."""

from __future__ import annotations

import errno
import os
import stat

# An inventory larger than this is no inventory (Ansible would read it whole).
INVENTORY_LIMIT = 64 << 20
INVENTORY_FILES_LIMIT = 10_000


class NotAFile(Exception):
    """A named file that is not a regular file of a readable size: nothing was read."""

    hint = "give the path of a regular file"


def _open(path: str | os.PathLike) -> int:
    """A descriptor of `path` opened without blocking (a FIFO with no writer, a tty)."""
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)


def read_bounded(path: str | os.PathLike, limit: int) -> bytes:
    """A regular file's first `limit` bytes; OSError for anything else (a FIFO, a device, a
    directory), without blocking on it."""
    fd = _open(path)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return handle.read(limit)


def read_named(path: str | os.PathLike, what: str, limit: int) -> bytes:
    """The bytes of the file `what` names (e.g. `--trust KEY.pub`), at most `limit`: NotAFile
    for what is missing, not a regular file or larger."""
    try:
        data = read_bounded(path, limit + 1)
    except OSError as exc:
        raise NotAFile(_why(path, what, exc)) from None
    if len(data) > limit:
        raise NotAFile(f"{what} {path} is larger than {limit} bytes: not the file it names")
    return data


def check_named(path: str | os.PathLike, what: str, limit: int) -> None:
    """NotAFile unless `path` is a regular file of at most `limit` bytes (for a file another
    program reads, e.g. ssh-keygen's key)."""
    try:
        fd = _open(path)
    except OSError as exc:
        raise NotAFile(_why(path, what, exc)) from None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(info.st_mode):
        raise NotAFile(f"{what} {path} is not a regular file ({_kind(info.st_mode)})")
    if info.st_size > limit:
        raise NotAFile(f"{what} {path} is larger than {limit} bytes: not the file it names")


def inventory_problem(inventory: str) -> str | None:
    """Why the inventory `-i INVENTORY` names cannot be handed to Ansible, or None: a path
    must be a regular file (at most INVENTORY_LIMIT bytes) or a folder of such files; a
    host list (`a,b,`) is not a path."""
    if "," in inventory and not os.path.lexists(inventory):
        return None
    try:
        info = os.stat(inventory)
    except FileNotFoundError:
        return None  # Ansible's own word for a missing source (collection.inventory_hosts)
    except OSError as exc:
        return f"-i {inventory}: {exc.strerror or exc}"
    if stat.S_ISDIR(info.st_mode):
        count = 0
        for folder, _dirs, files in os.walk(inventory, followlinks=True):
            for name in files:
                count += 1
                problem = _inventory_file(os.path.join(folder, name))
                if count > INVENTORY_FILES_LIMIT:
                    return f"-i {inventory} holds more than {INVENTORY_FILES_LIMIT} files"
                if problem:
                    return problem
        return None
    return _inventory_file(inventory)


# ansible-playbook's options that name a file it reads (an inventory is a file or folder).
ANSIBLE_FILE_OPTIONS = (
    "--vault-password-file",
    "--vault-pass-file",
    "--private-key",
    "--key-file",
    "--become-password-file",
    "--connection-password-file",
)
ANSIBLE_INVENTORY_OPTIONS = ("-i", "--inventory", "--inventory-file")
ANSIBLE_VARS_OPTIONS = ("-e", "--extra-vars")


def extra_vars_problem(value: str) -> str | None:
    """Why `-e VALUE` cannot be handed to Ansible, or None: `@FILE` must name a regular file
    of at most INVENTORY_LIMIT bytes (a FIFO would block Ansible, /dev/zero never ends)."""
    if not value.startswith("@"):
        return None
    return _file_problem(value[1:], "-e @")


def ansible_arguments_problem(arguments: list[str]) -> str | None:
    """Why arguments passed on to ansible-playbook as they are (after `--`) cannot be: the
    files they name (-i, -e @FILE, a password or key file) are checked as jetson-env's own."""
    for index, word in enumerate(arguments):
        option, _eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        if not _eq and len(word) > 2 and word[:2] in ("-i", "-e") and word[1] != "-":
            option, attached = word[:2], word[2:]
        value = attached if attached or _eq else (arguments[index + 1 : index + 2] or [None])[0]
        if value is None:
            continue
        if option in ANSIBLE_INVENTORY_OPTIONS:
            problem = inventory_problem(value)
        elif option in ANSIBLE_VARS_OPTIONS:
            problem = extra_vars_problem(value)
        elif option in ANSIBLE_FILE_OPTIONS:
            problem = _file_problem(value, f"{option} ")
        else:
            continue
        if problem:
            return problem
    return None


def _file_problem(path: str, said: str) -> str | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None  # Ansible's own word for a missing file
    except OSError as exc:
        return f"{said}{path}: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"{said}{path} is not a regular file ({_kind(info.st_mode)}): not read"
    if info.st_size > INVENTORY_LIMIT:
        return f"{said}{path} is larger than {INVENTORY_LIMIT >> 20} MiB: not read"
    return None


def _inventory_file(path: str) -> str | None:
    try:
        info = os.stat(path)
    except OSError as exc:
        return f"-i {path}: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"-i {path} is not a regular file or folder ({_kind(info.st_mode)}): not read"
    if info.st_size > INVENTORY_LIMIT:
        return f"-i {path} is larger than {INVENTORY_LIMIT >> 20} MiB: not an inventory"
    return None


def _why(path: str | os.PathLike, what: str, exc: OSError) -> str:
    if exc.errno == errno.EINVAL:
        try:
            kind = _kind(os.stat(path).st_mode)
        except OSError:
            kind = "not a file"
        return f"{what} {path} is not a regular file ({kind})"
    return f"{what} {path} cannot be read: {exc.strerror or exc}"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):  # fmt: skip
        if test(mode):
            return name
    return "not a regular file"
