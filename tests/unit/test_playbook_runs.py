"""How --fix runs the provision playbook: the connection as --host gives it, the variables in
a file only the user can read (a become password never on argv, so never echoed either), and
the user's own callbacks kept beside the collection's results callback."""

import os
import stat
import sys
from pathlib import Path

import yaml

from jetson_env import playbook_runs


def test_an_ipv6_host_with_a_port():
    connection = playbook_runs.Connection("nano@[::1]:2235")
    args = connection.arguments()
    assert args[:4] == ["-i", "::1,", "-l", "::1"]
    assert args[args.index("-u") + 1] == "nano"
    assert connection.variables() == {"ansible_port": 2235}


def test_password_asks_ansible_for_the_ssh_password_too():
    assert "--ask-pass" in playbook_runs.Connection("u@10.0.0.7", ask_pass=True).arguments()
    assert "--ask-pass" not in playbook_runs.Connection("u@10.0.0.7").arguments()


def test_the_default_port_is_left_to_ssh():
    assert playbook_runs.Connection("nano@10.0.0.7").variables() == {}
    assert playbook_runs.Connection(None).variables() == {}


def test_variables_go_in_a_file_only_the_user_reads():
    secret = {"ansible_become_password": "s3cret-pass"}
    with playbook_runs.variables_file(secret) as path:
        connection = playbook_runs.Connection("u@10.0.0.7")
        cmd = playbook_runs.command("ansible-playbook", connection, ["python_base"], path,
                                    check=True, ask_become_pass=False)  # fmt: skip
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert yaml.safe_load(path.read_text()) == secret
        assert cmd[cmd.index("-e") + 1] == f"@{path}"
        assert not any("s3cret-pass" in arg for arg in cmd)
    assert not path.exists()


def test_fix_adds_its_callback_to_those_the_users_ansible_cfg_enables(tmp_path, monkeypatch):
    """--fix reads the user's callbacks from `ansible-config dump` of the Ansible it runs (no
    private ansible-core API), so its results callback joins them instead of replacing them."""
    (tmp_path / "ansible.cfg").write_text(
        "[defaults]\ncallbacks_enabled = ansible.posix.profile_tasks, timer\n"
    )
    monkeypatch.chdir(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    ansible_playbook = str(Path(sys.executable).with_name("ansible-playbook"))
    enabled = playbook_runs.callbacks_enabled(ansible_playbook, env)
    assert enabled == ["ansible.posix.profile_tasks", "timer"]
    env["ANSIBLE_CALLBACKS_ENABLED"] = "mine"  # the environment wins, as in Ansible
    assert playbook_runs.callbacks_enabled(ansible_playbook, env) == ["mine"]
    gone = str(tmp_path / "no-ansible" / "ansible-playbook")  # no ansible-config beside it
    del env["ANSIBLE_CALLBACKS_ENABLED"]
    assert playbook_runs.callbacks_enabled(gone, env) == []
