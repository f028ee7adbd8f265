"""The controller's apt sources as the bundle reads them, and which of them serve a target."""

import hashlib
from pathlib import Path

from jetson_env import apt_repository
from jetson_env.apt_repository import AptSource


def test_sources_of_both_formats_comments_and_disabled_entries(tmp_path: Path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "# a comment\n"
        "deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] "
        "https://m.example/debian bookworm main contrib\n"
        "deb-src https://m.example/debian bookworm main\n"
        "deb https://m.example/debian bookworm-updates main # trailing\n"
    )
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n"
        "# a comment inside a paragraph does not end it\n"
        "URIs: http://m.example/debian\n"
        "Suites: bookworm bookworm-updates\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        "\n"
        "Types: deb\n"
        "URIs: http://m.example/other\n"
        "Suites: trixie\n"
        "Components: main\n"
        "Enabled: no\n"
    )
    (tmp_path / "sources.list.d" / "off.list.disabled").write_text("deb https://x/ y main\n")

    assert apt_repository.controller_sources(tmp_path) == [
        AptSource(
            "https://m.example/debian", "bookworm", ("main", "contrib"), "/usr/share/keyrings/k.gpg"
        ),
        AptSource("https://m.example/debian", "bookworm-updates", ("main",)),
        AptSource(
            "http://m.example/debian",
            "bookworm",
            ("main",),
            "/usr/share/keyrings/debian-archive-keyring.gpg",
        ),
        AptSource(
            "http://m.example/debian",
            "bookworm-updates",
            ("main",),
            "/usr/share/keyrings/debian-archive-keyring.gpg",
        ),
    ]


SOURCES = [
    AptSource("http://m/debian", "bookworm", ("main",), "/k.gpg"),
    AptSource("http://m/debian", "bookworm-updates", ("main",), "/k.gpg"),
    AptSource("http://m/debian-security", "bookworm-security", ("main",), "/k.gpg"),
    AptSource("https://vendor.example/apt", "stable", ("main",)),
]


def test_a_debian_target_is_served_by_the_debian_mirrors_with_its_own_suites():
    assert [
        s.suite for s in apt_repository.sources_for("debian/trixie", "debian/bookworm", SOURCES)
    ] == [
        "trixie",
        "trixie-updates",
        "trixie-security",
    ]
    same = apt_repository.sources_for("debian/bookworm", "debian/bookworm", SOURCES)
    assert same == SOURCES[:3]  # a vendor's repository is not the distribution's mirror
    assert same[0].line() == "deb [signed-by=/k.gpg] http://m/debian bookworm main"


def test_another_distribution_or_an_unknown_one_is_not_served():
    assert apt_repository.sources_for("ubuntu/jammy", "debian/bookworm", SOURCES) == []
    assert apt_repository.sources_for("", "debian/bookworm", SOURCES) == []
    assert apt_repository.sources_for("debian/bookworm", "", SOURCES) == []


def test_the_distribution_comes_from_os_release():
    assert apt_repository.distribution_of({"id": "ubuntu", "version_codename": "noble"}) == (
        "ubuntu/noble"
    )
    assert apt_repository.distribution_of({"id": "ubuntu", "version_codename": None}) == ""


def test_packages_lists_only_the_debs_that_are_there_and_release_pins_it():
    first = apt_repository.repository_index(
        "",
        {
            "a_1_all.deb": "Package: a\nVersion: 1\nFilename: ./a_1_all.deb",
            "gone_1_all.deb": "Package: gone\nVersion: 1\nFilename: ./gone_1_all.deb",
        },
        {"a_1_all.deb"},
    )
    assert [name for name, _ in apt_repository.parse_packages(first.decode())] == ["a_1_all.deb"]
    # A later run adds its own entries to those already listed.
    second = apt_repository.repository_index(
        first.decode(),
        {"b_2_all.deb": "Package: b\nVersion: 2\nFilename: ./b_2_all.deb"},
        {"a_1_all.deb", "b_2_all.deb"},
    )
    assert [name for name, _ in apt_repository.parse_packages(second.decode())] == [
        "a_1_all.deb",
        "b_2_all.deb",
    ]
    sha256 = hashlib.sha256(second).hexdigest()
    assert f" {sha256} {len(second)} Packages" in apt_repository.release_of(second).decode()
