"""tests/support/provisioned.py: a provisioned host is made once per key and then reused, by
another process (another pytest-xdist worker, another session) too, with the controller's
side of the run that made it. Here the "provisioning" is a file written on the x86 test host
and one on the controller (the playbook's runs are test_playbook_*.py's), each time under a
new key, and its image removed afterwards.
"""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support.hosts import REPO_ROOT

pytestmark = pytest.mark.hosts

# One process asks for the state, as a test's fixture does, and says what it got.
ASK = """
import json, sys
from pathlib import Path
sys.path[:0] = [sys.argv[1] + "/tests", sys.argv[1] + "/tests/integration"]
from playbook_support import remove_host, start_host
from support.provisioned import ProvisionedState

state = ProvisionedState("x86-debian12", "newest", ("tests/fixtures/hosts",), {"case": sys.argv[2]})
work = Path(sys.argv[3])
made = []

def start(image):
    return start_host("x86-debian12", "provisioned-state", image=image)

def provision(host, work):
    made.append(True)
    host.exec(["sh", "-c", "echo provisioned > /etc/provisioned-state"])
    (work / "lock.yml").write_text("sha256: {}\\n")
    return {"torch_lock_file": str(work / "lock.yml"), "elsewhere": "/opt/wheels"}

host, variables = state.host(work, start, provision)
try:
    print(json.dumps({"tag": state.tag, "provisioned_here": bool(made), "vars": variables,
                      "on_host": host.exec(["cat", "/etc/provisioned-state"]).stdout,
                      "lock": Path(variables["torch_lock_file"]).read_text()}))
finally:
    remove_host(host)
"""


def ask(case: str, work: Path) -> dict:
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", ASK, str(REPO_ROOT), case, str(work)],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_a_state_is_provisioned_once_then_reused_with_its_controller(tmp_path: Path):
    case = uuid.uuid4().hex  # a key no earlier run kept
    first = ask(case, tmp_path / "first")
    try:
        second = ask(case, tmp_path / "second")
    finally:
        subprocess.run(["docker", "rmi", "--force", first["tag"]], capture_output=True,
                       check=False)  # fmt: skip

    assert first["tag"].startswith("jetson-env-provisioned:x86-debian12-newest-")
    assert (first["provisioned_here"], second["provisioned_here"]) == (True, False)
    assert second["tag"] == first["tag"]
    assert second["on_host"] == "provisioned\n"  # the kept container's file system
    # The controller's folder of that run, restored where the second process works, and the
    # variables' paths into it moved there; other paths as they were.
    assert second["vars"] == {
        "torch_lock_file": str(tmp_path / "second" / "lock.yml"),
        "elsewhere": "/opt/wheels",
    }
    assert second["lock"] == "sha256: {}\n"
