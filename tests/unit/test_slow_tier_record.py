"""The slow tier's record earns its trust (tests/support/slow_tier.py, tests/conftest.py): keys
by exclusion that a fresh clone computes alike, entries that expire, carry their provenance and
are written only by a complete run; real pytest sessions in a committed copy of this checkout."""

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import slow_tier
from support.hosts import fresh_clone

ROOT = Path(__file__).resolve().parents[2]
KEYED_TEST = "tests/unit/test_keyed_stand_in.py"
NODEID = f"{KEYED_TEST}::test_keyed"
# A keyed test of the record's own (a stand-in for the slow ones: the record's logic is the same).
KEYED_SOURCE = """import os
import pytest


@pytest.fixture
def finish():
    yield
    assert os.environ.get("BREAK_TEARDOWN") != "1"


@pytest.mark.slow(keyed=True)
def test_keyed(finish):
    assert os.environ.get("BREAK_CALL") != "1"
"""


def git(checkout: Path, *args: str, **env: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **env}).stdout  # fmt: skip


def commit_all(checkout: Path, date: str = "2026-11-20T12:00:00+00:00") -> None:
    git(checkout, "add", "-A")
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "state",
        GIT_COMMITTER_DATE=date, GIT_AUTHOR_DATE=date)  # fmt: skip


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """This working tree's files (tracked and new), committed in a repository of their own."""
    clone = fresh_clone(tmp_path / "clone")
    git(clone, "init", "-q")
    (clone / KEYED_TEST).write_text(KEYED_SOURCE)
    (clone / "tests" / "slow-tier-green.json").write_text("{}\n")
    commit_all(clone)
    return clone


def run_pytest(checkout: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("JETSON_ENV_", "BREAK_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-rs",
         f"--junitxml={checkout.parent / 'junit.xml'}", *args],
        cwd=checkout, env={**clean, **env}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def record(checkout: Path) -> dict:
    return json.loads((checkout / "tests" / "slow-tier-green.json").read_text())


# ---- keys ---------------------------------------------------------------------------------


def test_the_files_key_is_every_input_but_prose_bench_workflows_and_the_record(checkout: Path):
    key = slow_tier.files_digest(checkout)
    other = checkout.parent / "elsewhere"
    git(checkout.parent, "clone", "-q", str(checkout), str(other))
    for path in other.rglob("*"):
        os.utime(path, (1, 1), follow_symlinks=False)
    assert slow_tier.files_digest(other) == key  # another path, other times: the same key
    assert slow_tier.commit_files_digest("HEAD", checkout) == key

    for not_an_input in ("tests/README.md", "bench/README.md", ".github/workflows/slow.yml",
                         "tests/slow-tier-green.json", ".cache/ignored-by-git"):  # fmt: skip
        (other / not_an_input).parent.mkdir(parents=True, exist_ok=True)
        with open(other / not_an_input, "a") as handle:
            handle.write("\n# changed\n")
        slow_tier.files_digest.cache_clear()
        assert slow_tier.files_digest(other) == key, not_an_input
    # What issue 54 found left out, what the wheel and the images copy, and new files.
    for an_input in ("pyproject.toml", "README.md", "docs/doctor.md", "tests/conftest.py",
                     "tests/integration/conftest.py", "tests/support/hosts.py",
                     "tests/integration/playbook_support.py", "images/inputs/README.md",
                     "tests/fixtures/hosts/README.md", "a-new-file.txt", "NEW.md",
                     "ansible_collections/jetson_env/jetson/README.md"):  # fmt: skip
        changed = checkout.parent / f"changed-{an_input.replace('/', '-')}"
        git(checkout.parent, "clone", "-q", str(checkout), str(changed))
        with open(changed / an_input, "a") as handle:
            handle.write("\n# changed\n")
        if an_input == "NEW.md":  # prose at the top: not an input, unless the images copy it
            assert slow_tier.files_digest(changed) == key
            dockerfile = changed / "images" / "Dockerfile"
            dockerfile.write_text(dockerfile.read_text() + "COPY NEW.md ./\n")
            slow_tier.files_digest.cache_clear()
            assert slow_tier.files_digest(changed) != slow_tier.files_digest(checkout)
            continue
        assert slow_tier.files_digest(changed) != key, an_input
    os.chmod(other / "scripts" / "test", 0o644)  # git's mode is part of a file
    slow_tier.files_digest.cache_clear()
    assert slow_tier.files_digest(other) != key


def test_the_outside_inputs_name_builds_and_releases_never_a_path_of_this_machine():
    found = slow_tier.outside_inputs(None)
    assert set(found["pythons"]) == {"2.7.18", "3.6.15", "3.8.18", "controller"}
    assert found["pythons"]["controller"] == sys.version
    assert all(b.startswith("jetson-env-base:") for b in found["base_images"])
    assert any(r.startswith("packaging==") for r in found["controller_resolved"])
    newest = slow_tier.outside_inputs("newest")["ansible_end"]
    assert any(r.startswith("ansible_core-2.") for r in newest["resolved"]), newest
    text = json.dumps(slow_tier.outside_inputs("newest"))
    assert str(ROOT) not in text and str(Path.home()) not in text


def test_a_run_is_complete_only_when_nothing_narrows_the_selection(tmp_path: Path):
    none = argparse.Namespace(keyword="", markexpr="", deselect=[], ignore=[], ignore_glob=[],
                              lf=False, stepwise=False)  # fmt: skip
    assert slow_tier.why_incomplete(none, ["tests"], ROOT) is None
    assert slow_tier.why_incomplete(none, ["tests/unit/test_pins.py"], ROOT) is None
    assert slow_tier.why_incomplete(none, [f"{KEYED_TEST[:-3]}x.py::t"], ROOT) is not None
    assert slow_tier.why_incomplete(none, ["tests/unit/test_pins.py::test_x"], ROOT) == (
        "tests/unit/test_pins.py::test_x is not a whole file or folder"
    )
    narrowing = [("keyword", "x", "-k"), ("markexpr", "slow", "-m"),
                 ("deselect", ["a"], "--deselect"), ("lf", True, "--last-failed")]  # fmt: skip
    for option, value, flag in narrowing:
        narrowed = argparse.Namespace(**{**vars(none), option: value})
        assert slow_tier.why_incomplete(narrowed, [], ROOT) == f"{flag} narrows the selection"


def test_an_entry_counts_its_days_from_heads_commit_date(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f").write_text("x")
    commit_all(repo, "2026-12-01T23:30:00-05:00")  # 04:30 UTC on the 2nd
    assert slow_tier.head_date(repo) == datetime.date(2026, 12, 2)


# ---- the record, from real pytest sessions ----------------------------------------------------


def test_a_complete_run_writes_an_entry_with_its_provenance_and_the_next_run_skips(checkout):
    """With pytest-xdist's workers, as scripts/test runs: the controller writes."""
    done = run_pytest(checkout, KEYED_TEST, "-n", "2")
    assert done.returncode == 0 and "1 entries written, 0 dropped" in done.stdout, done.stdout
    assert f"slow tier: {NODEID} runs: no entry" in done.stdout
    entry = record(checkout)[NODEID]
    head = git(checkout, "rev-parse", "HEAD").strip()
    assert entry["commit"] == head and entry["clean"] is True
    assert len(entry["key"]) == 64 and entry["key"] == slow_tier.key_of(entry["inputs"])
    assert entry["inputs"]["files"] == slow_tier.commit_files_digest(head, checkout)
    assert f'name="slow_tier_key" value="{entry["key"]}"' in entry["junit"]
    assert '<property name="slow_tier_why" value="no entry" />' in entry["junit"]
    assert entry["written"] == datetime.datetime.now(datetime.UTC).date().isoformat()
    assert entry["duration_s"] >= 0

    # Committed with the record, a fresh clone skips it and says where the entry came from.
    commit_all(checkout, datetime.datetime.now(datetime.UTC).isoformat())
    again = run_pytest(checkout, KEYED_TEST)
    assert "1 skipped" in again.stdout, again.stdout
    seconds, digest = f"{entry['duration_s']:.0f}", entry["junit_sha256"][:12]
    origin = (f"slow tier, green on {entry['written']} at {head[:12]} (clean tree) in "
              f"{seconds} s, JUnit sha256 {digest}")  # fmt: skip
    assert origin in again.stdout


def test_only_a_complete_run_on_a_clean_tree_whose_phases_all_passed_writes(checkout):
    narrowed = run_pytest(checkout, KEYED_TEST, "-k", "keyed")
    assert "the record is not written: -k narrows the selection" in narrowed.stdout
    node = run_pytest(checkout, NODEID)
    assert f"not written: {NODEID} is not a whole file or folder" in node.stdout
    (checkout / "stray.txt").write_text("x")
    dirty = run_pytest(checkout, KEYED_TEST)
    assert "not written: the tree is not clean: ?? stray.txt" in dirty.stdout, dirty.stdout
    (checkout / "stray.txt").unlink()
    assert record(checkout) == {}

    assert "1 entries written" in run_pytest(checkout, KEYED_TEST).stdout
    # A run that sees the test fail at teardown drops the entry that vouched for it.
    broken = run_pytest(checkout, KEYED_TEST, JETSON_ENV_SLOW="1", BREAK_TEARDOWN="1")
    assert "1 passed, 1 error" in broken.stdout and "0 entries written, 1 dropped" in broken.stdout
    assert record(checkout) == {}


def test_a_hand_made_or_stale_entry_vouches_for_nothing(checkout, tmp_path: Path):
    assert "1 entries written" in run_pytest(checkout, KEYED_TEST).stdout
    entry = record(checkout)[NODEID]
    found, head = entry["inputs"], slow_tier.head_date(checkout)
    assert slow_tier.why_not_trusted(NODEID, entry, found, head, checkout) is None

    def verdict(**changed) -> str | None:
        return slow_tier.why_not_trusted(NODEID, {**entry, **changed}, found, head, checkout)

    assert verdict(passed="2026-11-27") == "its entry is not in the record's format"
    other = {**found, "files": "0" * 64}
    assert verdict(key=slow_tier.key_of(other), inputs=other) is not None
    assert verdict(key="f" * 64).startswith("its inputs changed")
    # The old record's way: a new key written by hand beside the old provenance.
    assert slow_tier.why_not_trusted(NODEID, entry, {**found, "ansible_end": "x"}, head, checkout)
    assert verdict(junit=entry["junit"].replace('time="', 'time="1')) == (
        "its JUnit element does not match its digest"
    )
    assert verdict(commit="0" * 40) == "its JUnit element names another key or commit"
    assert verdict(duration_s=entry["duration_s"] + 1) is not None
    written = datetime.date.fromisoformat(entry["written"])
    week = written + datetime.timedelta(days=7)
    assert slow_tier.why_not_trusted(NODEID, entry, found, week, checkout) is None
    late = slow_tier.why_not_trusted(
        NODEID, entry, found, week + datetime.timedelta(days=1), checkout
    )
    assert late.startswith(f"its entry of {written} expired")
    # Not a commit of this clone: another repository's entry copied in.
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    git(stranger, "init", "-q")
    (stranger / "f").write_text("x")
    commit_all(stranger)
    assert slow_tier.why_not_trusted(NODEID, entry, found, head, stranger).startswith("its commit")


def test_an_unkeyed_slow_test_beside_an_unvouched_keyed_one_stays_in_the_slow_tier(checkout):
    """A keyed test runs for its own missing entry, not its module's unkeyed slow tests (the
    r36 image's emulated build, 28 minutes, ran beside the r32/r35 builds that way)."""
    module = checkout / "tests" / "integration" / "test_keyed_pair_stand_in.py"
    module.write_text(KEYED_SOURCE + "\n\n@pytest.mark.slow\ndef test_unkeyed():\n    pass\n")
    commit_all(checkout)
    done = run_pytest(checkout, str(module.relative_to(checkout)), "-v")
    assert "1 passed, 1 skipped" in done.stdout, done.stdout
    assert "::test_keyed PASSED" in done.stdout and "::test_unkeyed SKIPPED" in done.stdout
