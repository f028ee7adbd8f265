"""A fleet no one ansible-core manages (issue 57, item 7): a JetPack 4 host (Python 3.6) with
an Ubuntu 26.04 one (Python 3.14). ansible-core 2.16 stops at 3.12, 3.14 needs 2.20 or newer:
every fleet command says so once, with the two controller venvs that do, before any change
(ansible_core.Support.split, the sentence `bundle` says), in its text and its --json.

Real Ansible (local connection) reaches both hosts: the JetPack 4 one runs its probes and
Ansible's modules in pyenv's genuine CPython 3.6.15; the 26.04 one runs its probes in this
Python and gives Ansible's modules a stand-in that says it is Python 3.14 when asked (the
probe action's and the preflight's questions) and is this Python for the rest. The real CLI
each time (test_doctor_hostile's Run: no traceback, the exit code, nothing left running).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from support.pythons import interpreter, required
from support.schemas import fleet_schema_validator, plan_schema_validator
from test_doctor_hostile import Run, stand_in

SAID = "No ansible-core line manages target Python 3.6, 3.14 at once"
# What the probe action (platform.python_version()) and the preflight (module_python) ask.
QUESTIONS = {
    "import platform; print(platform.python_version())": "3.14.0",
    "import sys; print('%d.%d' % sys.version_info[:2])": "3.14",
}


@pytest.fixture
def fleet(tmp_path) -> Path:
    required("3.6.15")
    python36 = str(interpreter("3.6.15"))
    answers = "".join(
        f'if [ "$1" = -c ] && [ "$2" = {shlex.quote(question)} ]; then echo {said}; exit 0; fi\n'
        for question, said in QUESTIONS.items()
    )
    python314 = stand_in(tmp_path / "bin", f'{answers}exec {sys.executable} "$@"')
    path = tmp_path / "fleet.yml"
    path.write_text(json.dumps({"all": {"hosts": {
        "nano": {"ansible_connection": "local", "ansible_python_interpreter": python36},
        "resolute": {"ansible_connection": "local", "ansible_python_interpreter": python314,
                     "jetson_facts_python": sys.executable},
    }}}))  # fmt: skip
    return path


def said_once(text: str) -> str:
    """The split's sentence, said once, with the two controller venvs that do."""
    assert text.count(SAID) == 1, text
    sentence = text[text.index(SAID) :].split("\n", 1)[0]
    assert "run jetson-env from 2 controller venvs" in sentence, sentence
    assert "~/jetson-env-py36/bin/pip install" in sentence and "'ansible-core<2.17'" in sentence
    assert "~/jetson-env-py314/bin/pip install" in sentence
    return sentence


def test_doctor_says_once_that_no_ansible_core_manages_the_fleet(fleet):
    run = Run(["doctor", "--json", "-i", str(fleet), "--check", "platform"]).finish(0)
    data = json.loads(run.stdout)
    fleet_schema_validator().validate(data)
    said_once(data["ansible_core_split"])
    text = Run(["doctor", "-i", str(fleet), "--check", "platform"]).finish(0).stdout
    said_once(text)


def test_doctor_fix_says_it_before_any_host_is_fixed(fleet):
    """--fix: the sentence comes with the fleet's table, before --fix's first word on a host
    (here it leaves both out: this controller's ansible-core manages neither); the table is
    shown again after."""
    run = Run(["doctor", "-i", str(fleet), "--check", "platform", "--fix", "python_base"])
    text = run.finish(0).stdout
    said_once(text[: text.index("--fix: ")])


def test_plan_says_it_in_text_and_json(fleet):
    run = Run(["plan", "-i", str(fleet), "--to", "R36.4.3", "--json"]).finish(2)  # x86: refused
    data = json.loads(run.stdout)
    plan_schema_validator().validate(data)
    said_once(data["ansible_core_split"])
    said_once(Run(["plan", "-i", str(fleet), "--to", "R36.4.3"]).finish(2).stdout)


def test_provision_preflight_says_it_once_before_anything_changes(fleet):
    run = Run(["provision", "-C", "-i", str(fleet)]).finish(1)
    said_once(run.stdout.replace('\\"', '"'))
    assert run.stdout.index(SAID) < run.stdout.index("fatal: [")
