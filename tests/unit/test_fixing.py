"""--fix's ansible-playbook command: the connection as --host gives it, the variables in a
file only the user can read (a become password never on argv, so never echoed either)."""

import json
import stat

from jetson_env import fixing


def test_an_ipv6_host_with_a_port():
    connection = fixing.Connection("nano@[::1]:2235")
    args = connection.arguments()
    assert args[:4] == ["-i", "::1,", "-l", "::1"]
    assert args[args.index("-u") + 1] == "nano"
    assert connection.variables() == {"ansible_port": 2235}


def test_the_default_port_is_left_to_ssh():
    assert fixing.Connection("nano@10.0.0.7").variables() == {}
    assert fixing.Connection(None).variables() == {}


def test_variables_go_in_a_file_only_the_user_reads():
    secret = {"ansible_become_password": "s3cret-pass"}
    the_plan = fixing.Plan(roles=["python_base"])
    with fixing.variables_file(secret) as path:
        cmd = fixing.command("ansible-playbook", fixing.Connection("u@10.0.0.7"), the_plan, path,
                             check=True, ask_become_pass=False)  # fmt: skip
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert json.loads(path.read_text()) == secret
        assert cmd[cmd.index("-e") + 1] == f"@{path}"
        assert not any("s3cret-pass" in arg for arg in cmd)
    assert not path.exists()
