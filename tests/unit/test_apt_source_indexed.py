"""The collection's apt_source_indexed module: does apt hold an index of a source file's
repositories?

The naming is checked against this machine's real apt: `apt-get update` of a local
repository into a private lists folder, then the module looks for what apt wrote.
"""

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULES = REPO_ROOT / "ansible_collections" / "jetson_env" / "jetson" / "plugins" / "modules"
spec = importlib.util.spec_from_file_location(
    "apt_source_indexed", MODULES / "apt_source_indexed.py"
)
apt_source_indexed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(apt_source_indexed)


def test_names_are_apts_for_nvidias_repository():
    prefix = apt_source_indexed.release_prefix(
        "https://repo.download.nvidia.com/jetson/common", "r35.4"
    )
    assert prefix == "repo.download.nvidia.com_jetson_common_dists_r35.4"
    with_port_and_user = apt_source_indexed.release_prefix(
        "https://u:p@127.0.0.1:8443/a_b/", "r36.4"
    )
    assert with_port_and_user == "127.0.0.1:8443_a%5fb_dists_r36.4"


def test_parses_one_line_and_deb822_sources():
    one_line = (
        "# comment\n"
        "deb [signed-by=/k.gpg arch=arm64] https://h/jetson/common r36.4 main\n"
        "deb-src https://h/src r36.4 main\n"
        "deb https://h/jetson/t234 r36.4 main # trailing\n"
    )
    assert apt_source_indexed.one_line_entries(one_line) == [
        ("https://h/jetson/common", "r36.4"),
        ("https://h/jetson/t234", "r36.4"),
    ]
    deb822 = (
        "Types: deb deb-src\nURIs: https://h/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: https://h/off\nSuites: x\nEnabled: no\n"
    )
    assert apt_source_indexed.deb822_entries(deb822) == [
        ("https://h/debian", "bookworm"),
        ("https://h/debian", "bookworm-updates"),
    ]


@pytest.fixture
def local_repo(tmp_path: Path) -> Path:
    """An unsigned repository with one empty suite, in a folder apt reads through file://."""
    binary = tmp_path / "repo" / "dists" / "stable" / "main" / "binary-amd64"
    binary.mkdir(parents=True)
    (binary / "Packages").write_text("")
    (binary.parents[1] / "Release").write_text(
        "Suite: stable\nCodename: stable\nComponents: main\nArchitectures: amd64\n"
    )
    return tmp_path / "repo"


def apt_update(source: Path, lists: Path) -> None:
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["apt-get", "update", "-qq",
         "-o", f"Dir::Etc::SourceList={source}", "-o", "Dir::Etc::SourceParts=-",
         "-o", f"Dir::State::Lists={lists}", "-o", "APT::Get::List-Cleanup=0",
         "-o", "Debug::NoLocking=1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def test_indexed_only_after_apt_fetched_the_listed_repository(tmp_path: Path, local_repo: Path):
    source = tmp_path / "local.list"
    source.write_text(f"deb [trusted=yes] file://{local_repo} stable main\n")
    lists = tmp_path / "lists"
    lists.mkdir()
    os.utime(lists, (0, 0))

    before = apt_source_indexed.inspect(str(source), str(lists))
    assert before["indexed"] is False

    apt_update(source, lists)
    after = apt_source_indexed.inspect(str(source), str(lists))
    (repository,) = after["repositories"]
    assert after["indexed"] is True, (sorted(os.listdir(lists)), repository)

    # The list is rewritten after the update (restored, edited): the index may be stale.
    later = os.stat(source).st_mtime + 5
    os.utime(source, (later, later))
    assert apt_source_indexed.inspect(str(source), str(lists))["indexed"] is False


def test_a_file_without_repositories_is_not_indexed(tmp_path: Path):
    source = tmp_path / "empty.list"
    source.write_text("# nothing here\n")
    assert apt_source_indexed.inspect(str(source), str(tmp_path)) == {
        "indexed": False,
        "repositories": [],
    }
