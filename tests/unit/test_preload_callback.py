"""The callbacks jetson-env enables (playbook_runs.OWN_CALLBACKS) load the collection's filters
and the version matrix once, in ansible-playbook's main process: the forked task workers do
not import them again. Real ansible-playbook at both Ansible ends; a sitecustomize on
PYTHONPATH adds an audit hook (inherited by every fork) that writes the process id each time
a process loads jetson_env.matrix (the "import" audit event: a module found in sys.modules
raises none)."""

import subprocess
from pathlib import Path

import pytest
from support.ansible_envs import ANSIBLE_ENDS

from jetson_env import collection, playbook_runs

TASKS = 4
PLAYBOOK = "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n" + "".join(
    f"    - name: Read the matrix {i}\n"
    f"      ansible.builtin.debug:\n"
    f"        msg: \"{{{{ '' | jetson_env.jetson.matrix | length }}}}\"\n"
    for i in range(TASKS)
)
SITECUSTOMIZE = """\
import os, sys

def _loads(event, args):
    if event == "import" and args[0] == "jetson_env.matrix":
        with open(os.environ["JETSON_ENV_TEST_LOADS"], "a") as log:
            log.write("%d\\n" % os.getpid())

sys.addaudithook(_loads)
"""


def processes_loading_the_matrix(end: str, callbacks: tuple[str, ...], folder: Path) -> int:
    (folder / "play.yml").write_text(PLAYBOOK)
    (folder / "hook").mkdir(exist_ok=True)
    (folder / "hook" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    loads = folder / "loads.txt"
    loads.unlink(missing_ok=True)
    ansible_playbook = str(ANSIBLE_ENDS[end].ensure().bin("ansible-playbook"))
    env = collection.environment(ansible_playbook)
    env.update(
        ANSIBLE_CALLBACKS_ENABLED=",".join(callbacks),
        JETSON_ENV_RESULTS_FILE=str(folder / "results.json"),
        PYTHONPATH=str(folder / "hook"),
        JETSON_ENV_TEST_LOADS=str(loads),
    )
    proc = subprocess.run(
        [ansible_playbook, "-i", "localhost,", "play.yml"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count("ok: [localhost]") == TASKS, proc.stdout[-2000:]
    return len(set(loads.read_text().split()))


@pytest.mark.parametrize("end", ["oldest", "newest"])
def test_the_task_workers_find_the_filters_and_the_matrix_loaded(end, tmp_path: Path):
    assert processes_loading_the_matrix(end, playbook_runs.OWN_CALLBACKS, tmp_path) == 1
    # Without the preload, each task's worker loads it again: what the hook tells apart.
    alone = (playbook_runs.RESULTS_CALLBACK,)
    assert processes_loading_the_matrix(end, alone, tmp_path) == TASKS
