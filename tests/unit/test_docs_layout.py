"""docs/layout.md names what the tree holds: every module and package of the
jetson_env package, every data file, the collection's roles, playbooks and plugin kinds, and
every top-level folder of the checkout; and each jetson_env path it names exists."""

import re
import subprocess
from pathlib import Path

from jetson_env import collection

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "jetson_env"


def layout() -> str:
    return (REPO / "docs" / "layout.md").read_text().split("```", 2)[1]


def tracked(folder: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", str(folder)], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()  # fmt: skip
    return [str(Path(path).relative_to(folder.relative_to(REPO))) for path in listed]


def names(block: str) -> set[str]:
    return set(re.findall(r"[\w.-]+", block))


def test_every_module_package_and_data_file_of_jetson_env_is_named():
    named = names(layout())
    top = {path.split("/")[0] for path in tracked(PACKAGE)}
    wanted = {f"{name}/" if (PACKAGE / name).is_dir() else name for name in top}
    wanted -= {"__init__.py"}
    wanted |= {path.split("/", 1)[1] for path in tracked(PACKAGE) if path.startswith("data/")}
    assert sorted(name for name in wanted if name.rstrip("/") not in named) == []


def test_the_collections_roles_playbooks_and_plugin_kinds_are_named():
    named = names(layout())
    files = tracked(collection.PATH)
    roles = {path.split("/")[1] for path in files if path.startswith("roles/")}
    playbooks = {path.split("/")[1] for path in files if path.startswith("playbooks/")}
    plugins = {path.split("/")[1] for path in files if path.startswith("plugins/")}
    assert sorted(roles - named) == []
    assert sorted(p for p in playbooks if p not in layout()) == []
    assert sorted(plugins - named) == []


def test_every_top_level_folder_of_the_checkout_is_named():
    top = {path.split("/")[0] for path in tracked(REPO) if "/" in path}
    top = {name for name in top if not name.startswith(".")}
    assert sorted(name for name in top if f"{name}/" not in layout()) == []


def test_each_jetson_env_file_and_folder_it_names_exists():
    block = layout().split("ansible_collections/", 1)[0]
    files = set(re.findall(r"[\w.-]+\.(?:py|yml|json)\b", block))
    folders = set(re.findall(r"\b(\w+)/", block)) - {"jetson_env"}
    assert sorted(name for name in files if not any(PACKAGE.rglob(name))) == []
    assert sorted(name for name in folders if not (PACKAGE / name).is_dir()) == []
