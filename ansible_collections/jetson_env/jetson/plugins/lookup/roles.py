"""Ansible lookup: the collection's role registry (meta/roles.yml), the one list of the
provisioning roles that the playbook, the bundle, the doctor and the command line read."""

from pathlib import Path

import yaml
from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

DOCUMENTATION = r"""
name: roles
short_description: The provisioning roles of the collection's role registry
description:
  - Returns the entries of the collection's C(meta/roles.yml), in the playbook's order, each
    with C(name) (also its tag and its switch NAME_enabled), C(fixes) (the doctor's checks it
    fixes), C(fetches), C(apt), C(bundle) (files, offline or none) and C(keeps_installed).
  - With a term C(files), C(offline) or C(none), only the names of the roles a bundle serves so.
options:
  _terms:
    description: Optionally, how a bundle serves the roles wanted.
    required: false
author: jetson-env
"""

EXAMPLES = r"""
- name: The roles whose files a bundle carries
  ansible.builtin.debug:
    msg: "{{ query('jetson_env.jetson.roles', 'files') }}"
"""

RETURN = r"""
_list:
  description: The registry's entries, or the names of those a bundle serves as asked.
  type: list
"""

REGISTRY = Path(__file__).resolve().parents[2] / "meta" / "roles.yml"


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        entries = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))["roles"]
        if not terms:
            return entries
        unknown = [term for term in terms if term not in ("files", "offline", "none")]
        if unknown:
            raise AnsibleLookupError(
                f"jetson_env.jetson.roles takes files, offline or none, not {unknown}"
            )
        return [entry["name"] for entry in entries if entry["bundle"] in terms]
