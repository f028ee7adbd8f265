"""Byte-compile, ahead, what the test run imports again and again, and nothing else.

pip byte-compiles everything it installs: for `ansible` some 17,000 modules of collections,
of which the tests load two (community.docker's connection, ansible.posix's callbacks), most of
the install's CPU. And where PYTHONDONTWRITEBYTECODE is set (CI's machines), no process writes
a .pyc of its own: a module without one is compiled again by every process that imports it,
ansible-core in each of the run's ~370 ansible-playbook starts (0.62 s without, 0.45 s with),
jetson_env in each CLI run (0.20 s, 0.15 s). So the test venvs are installed
with `pip install --no-compile`, then compiled here without the unused collections, and the
checkout's own Python before each run (compileall skips what is current)."""

import compileall
import re
import subprocess
import sys
from pathlib import Path

# Of `ansible`'s collections, the ones the tests load (support/ansible_envs.py).
USED_COLLECTIONS = ("community/docker", "ansible/posix")
UNUSED = re.compile(rf"/ansible_collections/(?!({'|'.join(USED_COLLECTIONS)})/)")
# The checkout's modules this machine imports: not tests/fixtures/ (its trees are copied into
# test hosts and archives whose keys hash their files), the roles' files (they run on the
# targets), or the test modules and conftests (pytest compiles its own, asserts rewritten).
CHECKOUT_DIRS = ("jetson_env", "ansible_collections/jetson_env/jetson/plugins", "tests/support")
CHECKOUT_FILES = ("tests/integration/playbook_support.py",)


def venv_command(venv: Path) -> list[str]:
    """The command that compiles a venv's site-packages, in its own Python (the .pyc files
    are per version), but the collections the tests do not load. As pip's own compile, a file
    that does not compile is reported and left as it is: it fails nothing."""
    (site,) = venv.glob("lib/python3*/site-packages")
    program = ("import compileall, re, sys; compileall.compile_dir(sys.argv[1], quiet=1,"
               " rx=re.compile(sys.argv[2]), workers=0)")  # fmt: skip
    return [str(venv / "bin" / "python"), "-c", program, str(site), UNUSED.pattern]


def compile_checkout(root: Path) -> bool:
    """The checkout's own modules, where a file that does not compile is the suite's failure."""
    dirs = [compileall.compile_dir(root / folder, quiet=1, workers=0) for folder in CHECKOUT_DIRS]
    files = [compileall.compile_file(root / path, quiet=1) for path in CHECKOUT_FILES]
    return all(dirs + files)


if __name__ == "__main__":
    # python -m support.compile_ahead VENV CHECKOUT (scripts/test, after installing VENV)
    venv, root = map(Path, sys.argv[1:3])
    subprocess.run(venv_command(venv), check=True)
    sys.exit(0 if compile_checkout(root) else 1)
