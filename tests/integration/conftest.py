"""Fixtures of the integration tests."""

import pytest
from support.ansible_envs import ANSIBLE_ENDS, AnsibleEnd


@pytest.fixture(scope="module", params=list(ANSIBLE_ENDS))
def ansible(request: pytest.FixtureRequest) -> AnsibleEnd:
    """Each end of the supported Ansible range in turn (tests/support/ansible_envs.py).

    Module-scoped: a playbook test module runs all its tests with the newest, then all
    with the oldest, each time on fresh hosts (the host fixtures depend on this one).
    """
    return ANSIBLE_ENDS[request.param].ensure()
