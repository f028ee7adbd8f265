"""The role registry (the collection's meta/roles.yml) is the one list of the provisioning
roles: the playbook lists the same roles in its order, every entry is a role of the
collection, and every check it names is one of the doctor's (whose role links, like the
bundle's role lists and the command line's role names, are read from it)."""

import yaml

from jetson_env import collection
from jetson_env.checks import CHECKS

REGISTRY = collection.role_registry()


def test_the_playbook_provisions_the_registrys_roles_in_its_order():
    plays = yaml.safe_load(collection.playbook_file("provision").read_text())
    tagged = [entry["role"].rpartition(".")[2] for play in plays
              for entry in play.get("roles", []) if entry.get("tags") != ["always"]]  # fmt: skip
    assert tagged == [role.name for role in REGISTRY]
    for play in plays:
        for entry in play.get("roles", []):
            name = entry["role"].rpartition(".")[2]
            assert entry["tags"] in ([name], ["always"]), entry


def test_every_entry_is_a_role_of_the_collection_with_a_known_kind():
    for role in REGISTRY:
        assert (collection.PATH / "roles" / role.name / "tasks" / "main.yml").is_file(), role
        assert role.bundle in collection.BUNDLE_SERVES, role
        assert role.fetches or role.bundle != "files", role  # a bundle carries what it fetches


def test_every_check_it_names_is_a_check_of_the_doctor_fixed_by_one_role():
    checks = {check.name: check for check in CHECKS}
    fixed = [check for role in REGISTRY for check in role.fixes]
    assert sorted(set(fixed) - set(checks)) == []  # a misspelt check fixes nothing
    assert len(fixed) == len(set(fixed))  # and one role applies a check's remedies
    assert [name for name, check in checks.items() if not (check.role or check.manual)] == []


def test_every_role_whose_files_a_bundle_carries_has_its_needs():
    """What a bundle fetches for a role is its needs (jetson_env.bundle.needs.ROLE_NEEDS): a
    registry entry with `bundle: files` and none would make every default bundle fail."""
    from jetson_env.bundle.needs import ROLE_NEEDS

    assert sorted(ROLE_NEEDS) == sorted(collection.roles_a_bundle("files"))
