"""Every role's pip install (the pip_packages role) reports a change by pip's own report of
what it installed (`pip install --report`, pip 22.2+), not by the words pip prints: a user's
`pip_packages_args: [--quiet]` silences pip, and the install that put termcolor on the host
was reported ok. A `-v` there puts pip's log before the report on stdout: its "Successfully
installed" line decides then (as for a pip older than 22.2, which has no report). The host is
the x86 test host with a JetPack 6 Orin's release files (its pip is Debian 12's 23.0.1),
running `jetson-env provision` on itself as a user does.
"""

import json
import re

import pytest
from playbook_support import pip_version, remove_host, start_x86_with_files_of
from support.hosts import VENV

pytestmark = pytest.mark.hosts

PYTHON = "/usr/bin/python3"
INSTALL_TASK = re.compile(
    r"TASK \[jetson_env\.jetson\.pip_packages : Install with the target Python's pip, "
    r"for python_base\][^\n]*\n(?P<status>\w+): "
)


@pytest.mark.parametrize(("pip_args", "name"), [(["--quiet"], "quiet"), (["-v"], "verbose")])
def test_an_install_is_a_change_however_much_pip_says(pip_args: list[str], name: str):
    host = start_x86_with_files_of("orin-r36.4.3", f"pip-report-{name}")
    try:
        host.install_project()
        host.exec([f"{VENV}/bin/pip", "install", "--quiet", "ansible-core>=2.16"], timeout=900)
        assert pip_version(host, "termcolor") is None
        args = json.dumps({"python_base_sets": ["packages"], "pip_packages_args": pip_args})
        command = ["sh", "-c", 'cd /root && exec "$@"', "sh", f"{VENV}/bin/jetson-env",
                   "--no-color", "provision", "--python", PYTHON, "--tags", "python_base",
                   "-e", args]  # fmt: skip

        first = host.exec(command, check=False, timeout=900)
        again = host.exec(command, check=False, timeout=900)

        said = first.stdout + first.stderr
        assert first.returncode == 0, said[-3000:]
        assert pip_version(host, "termcolor") is not None
        assert [m["status"] for m in INSTALL_TASK.finditer(said)] == ["changed"], said[-3000:]
        said = again.stdout + again.stderr
        assert again.returncode == 0, said[-3000:]
        assert [m["status"] for m in INSTALL_TASK.finditer(said)] == ["ok"], said[-3000:]
    finally:
        remove_host(host)
