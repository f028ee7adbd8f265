"""Every role's pip install (the pip_packages role) reports a change by pip's own report of
what it installed (`pip install --report`, pip 22.2+), not by the words pip prints: a user's
`pip_packages_args: [--quiet]` silences pip, and the install that put termcolor on the host
was reported ok. A `-v` there puts pip's log before the report on stdout: its "Successfully
installed" line decides then (as for a pip older than 22.2, which has no report). A set whose
installed distributions already meet it asks pip nothing (issue 55). A pip that fails after its
report (it writes it before it downloads, builds and installs) fails the play in pip's own words,
not behind Ansible's dump of the report. The host is the x86 test
host with a JetPack 6 Orin's release files (its pip is Debian 12's 23.0.1), running
`jetson-env provision` on itself as a user does.
"""

import json
import re
import tempfile
from pathlib import Path

import pytest
from playbook_support import pip_version, remove_host, start_x86_with_files_of
from support.hosts import VENV

pytestmark = pytest.mark.hosts

PYTHON = "/usr/bin/python3"
# A project whose metadata builds (pip resolves it and reports it) and whose wheel does not, as a
# package that needs a compiler the host lacks; an in-tree backend that needs nothing installed.
BROKEN = "/tmp/broken-build"
BROKEN_FILES = {
    "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
    'backend-path = ["."]\n',
    "backend.py": """import os


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, "broken-1.0.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\\nName: broken\\nVersion: 1.0\\n")
    return "broken-1.0.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise SystemExit("stand-in compiler: cuda.h: No such file or directory")
""",
}
INSTALL_TASK = re.compile(
    r"TASK \[jetson_env\.jetson\.pip_packages : Install with the target Python's pip, "
    r"for python_base\][^\n]*\n(?P<status>\w+): "
)
# python -m pip, logged: what the role runs goes through pip/__main__.py, here one that writes
# its arguments to CALLS before it runs pip.
CALLS = "/tmp/pip-calls.log"
PIP_LOGGER = f"""import sys
with open({CALLS!r}, "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
from pip._internal.cli.main import main
sys.exit(main())
"""


def provision(host, *args: str):
    command = ["sh", "-c", 'cd /root && exec "$@"', "sh", f"{VENV}/bin/jetson-env", "--no-color",
               "provision", "--python", PYTHON, "--tags", "python_base", *args]  # fmt: skip
    return host.exec(command, check=False, timeout=900)


@pytest.mark.parametrize(("pip_args", "name"), [(["--quiet"], "quiet"), (["-v"], "verbose")])
def test_an_install_is_a_change_however_much_pip_says(pip_args: list[str], name: str):
    host = start_x86_with_files_of("orin-r36.4.3", f"pip-report-{name}", provision_extra=True)
    try:
        host.install_project()
        assert pip_version(host, "termcolor") is None
        args = json.dumps({"python_base_sets": ["packages"], "pip_packages_args": pip_args})

        first = provision(host, "-e", args)
        again = provision(host, "-e", args)

        said = first.stdout + first.stderr
        assert first.returncode == 0, said[-3000:]
        assert pip_version(host, "termcolor") is not None
        assert [m["status"] for m in INSTALL_TASK.finditer(said)] == ["changed"], said[-3000:]
        said = again.stdout + again.stderr
        assert again.returncode == 0, said[-3000:]
        # termcolor is there now: pip is not asked at all (the next test).
        assert [m["status"] for m in INSTALL_TASK.finditer(said)] == ["skipping"], said[-3000:]
    finally:
        remove_host(host)


def test_a_set_already_met_asks_pip_nothing():
    """The second run reads the installed termcolor and says so in -v; the pip that the first
    run's install went through is never started again."""
    host = start_x86_with_files_of("orin-r36.4.3", "pip-not-asked", provision_extra=True)
    try:
        host.install_project()
        pip_dir = host.exec([PYTHON, "-c", "import os, pip; print(os.path.dirname(pip.__file__))"])
        with tempfile.TemporaryDirectory() as folder:
            logger = Path(folder) / "__main__.py"
            logger.write_text(PIP_LOGGER)
            host.copy_in(str(logger), f"{pip_dir.stdout.strip()}/__main__.py")
        assert pip_version(host, "termcolor") is None
        args = ["-e", json.dumps({"python_base_sets": ["packages"]})]

        first = provision(host, *args)
        said = first.stdout + first.stderr
        assert first.returncode == 0, said[-3000:]
        calls = host.exec(["cat", CALLS]).stdout.splitlines()
        assert len(calls) == 1, calls
        assert calls[0].startswith("install ") and "termcolor" in calls[0], calls

        again = provision(host, "-v", *args)
        said = again.stdout + again.stderr
        assert again.returncode == 0, said[-3000:]
        termcolor = pip_version(host, "termcolor")
        line = f"python_base: termcolor {termcolor} already satisfy the set: pip not asked"
        assert line in said, said[-3000:]
        assert [m["status"] for m in INSTALL_TASK.finditer(said)] == ["skipping"], said[-3000:]
        assert host.exec(["cat", CALLS]).stdout.splitlines() == calls  # pip never started
    finally:
        remove_host(host)


def test_a_pip_that_fails_after_its_report_is_said_in_pips_words():
    """The summary's error line carries pip's own error (the failed build), and the report pip
    printed before it (every distribution's metadata) is not dumped into the output."""
    host = start_x86_with_files_of("orin-r36.4.3", "pip-fails", provision_extra=True)
    try:
        host.install_project()
        with tempfile.TemporaryDirectory() as folder:
            for name, text in BROKEN_FILES.items():
                (Path(folder) / name).write_text(text)
            host.exec(["mkdir", "-p", BROKEN])
            for name in BROKEN_FILES:
                host.copy_in(str(Path(folder) / name), f"{BROKEN}/{name}")
        args = {"python_base_sets": ["packages"], "python_base_pip_packages": [BROKEN]}

        run = provision(host, "-e", json.dumps(args))

        said = run.stdout + run.stderr
        assert run.returncode != 0, said[-3000:]
        (error,) = [line for line in said.splitlines() if line.startswith("  error: ")]
        assert "pip's install of python_base's broken-build failed (exit code 1)" in error, error
        assert "stand-in compiler: cuda.h: No such file or directory" in error, error
        assert "download_info" not in said, said[-3000:]  # the report's key: not dumped
        assert pip_version(host, "broken") is None
    finally:
        remove_host(host)
