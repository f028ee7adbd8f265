"""The collection's results callback names the roles a failed play never reached as Ansible's
own tag rule selects them (--tags untagged, --skip-tags tagged included): real
ansible-playbook of this environment on localhost (local connection), a play whose untagged
pre-task fails before its two roles, one tagged and one not."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jetson_env import collection, playbook_runs

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  pre_tasks:
    - name: Stop here
      ansible.builtin.fail:
        msg: stopped before the roles
  roles:
    - role: tagged_role
      tags: [tagged_role]
    - role: untagged_role
"""


@pytest.mark.parametrize(
    "tags, never",
    [
        ([], ["tagged_role", "untagged_role"]),
        (["--tags", "untagged"], ["untagged_role"]),
        (["--skip-tags", "tagged"], ["untagged_role"]),
    ],
    ids=["all", "tags-untagged", "skip-tagged"],
)
def test_the_roles_never_reached_are_those_ansible_selects(tmp_path: Path, tags, never):
    for role in ("tagged_role", "untagged_role"):
        (tmp_path / "roles" / role / "tasks").mkdir(parents=True)
        (tmp_path / "roles" / role / "tasks" / "main.yml").write_text(
            f"- name: In {role}\n  ansible.builtin.debug:\n    msg: {role}\n"
        )
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    ansible_playbook = str(Path(sys.executable).with_name("ansible-playbook"))
    env = collection.environment(ansible_playbook)
    env["ANSIBLE_CALLBACKS_ENABLED"] = playbook_runs.RESULTS_CALLBACK
    env["JETSON_ENV_RESULTS_FILE"] = str(tmp_path / "results.json")
    proc = subprocess.run(
        [ansible_playbook, "-i", "localhost,", "play.yml", *tags],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["never_reached"] == {"localhost": never}
