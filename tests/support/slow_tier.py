"""The slow tier's record: a keyed slow test, `@pytest.mark.slow(keyed=True)`, runs in the default
tier too unless tests/slow-tier-green.json holds an entry that vouches for it (tests/conftest.py
decides, tests/README.md says why it can be trusted and how far).

An entry vouches while (1) its key is the key of this checkout's inputs, (2) it was written at
most TRUSTED_DAYS days before the date of HEAD's commit, and (3) its provenance holds: the commit
it ran on is in this clone and has the same input files, and it carries pytest's own JUnit
element of the passed test, whose digest and properties (the key, the commit) match.

The inputs are made by exclusion: every file git sees in the checkout (tracked, and untracked but
not ignored) except prose (*.md that nothing ships or copies), bench/, .github/ and the record;
plus what lies outside the checkout: the Ansible end's Python and what pip resolved in its venv,
the Python builds the tests use, the base images' keys and the controller's resolved runtime
dependencies. Nothing of one machine's paths or times: a fresh clone computes the same key.
"""

import datetime
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import tomllib
from _pytest.junitxml import mangle_test_address
from packaging.requirements import Requirement

from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import HOSTS, REPO_ROOT, BaseImage, runtime_dependencies
from support.pythons import OLD_PYTHONS, interpreter

RECORD = REPO_ROOT / "tests" / "slow-tier-green.json"
TRUSTED_DAYS = 7
NOT_INPUTS = ("bench/", ".github/")
# What the test hosts' images and the tests copy into hosts of the checkout: the host trees
# (tests/fixtures/hosts/<name>/) and the stand-ins a test copies in, README files included.
HOST_COPIES = ("tests/fixtures/",)
# The JUnit properties a keyed test's report carries (tests/conftest.py adds them): its key, HEAD,
# and why no entry vouched for it.
KEY_PROPERTY, COMMIT_PROPERTY, WHY_PROPERTY = "slow_tier_key", "slow_tier_commit", "slow_tier_why"
ENTRY_FIELDS = {
    "key",
    "inputs",
    "commit",
    "clean",
    "written",
    "duration_s",
    "junit",
    "junit_sha256",
}


def git(*args: str, checkout: Path = REPO_ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=checkout, capture_output=True, text=True, check=True, timeout=60
    ).stdout


# ---- the checkout's part of the key ----------------------------------------------------------


def dockerfile_copies(dockerfile: Path) -> list[str]:
    """The checkout paths a Dockerfile's COPY/ADD take from its context (not --from=)."""
    copied = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if words[:1] in (["COPY"], ["ADD"]) and not any(w.startswith("--from") for w in words):
            copied += [w for w in words[1:-1] if not w.startswith("--")]
    return copied


def shipped(checkout: Path = REPO_ROOT) -> set[str]:
    """What the wheel and the images copy of the checkout: pyproject's readme and package data
    (through links: jetson_env/docs is docs/), images/Dockerfile's COPY sources, and HOST_COPIES.
    A folder ends with '/'."""
    project = tomllib.loads((checkout / "pyproject.toml").read_text())
    found = {project["project"]["readme"], *HOST_COPIES}
    real_checkout = checkout.resolve()
    for package, patterns in project["tool"]["setuptools"]["package-data"].items():
        folder = checkout / package.replace(".", "/")
        for pattern in patterns:
            for path in folder.glob(pattern):
                found.add(path.resolve().relative_to(real_checkout).as_posix())
    for source in dockerfile_copies(checkout / "images" / "Dockerfile"):
        found.add(source.rstrip("/") + "/" if (checkout / source).is_dir() else source)
    return found


def is_input(path: str, copied: set[str]) -> bool:
    if path == RECORD.relative_to(REPO_ROOT).as_posix() or path.startswith(NOT_INPUTS):
        return False
    if path.endswith(".md"):  # prose, unless something ships or copies it
        return any(path == c or (c.endswith("/") and path.startswith(c)) for c in copied)
    return True


def _blob_id(path: Path) -> str:
    """git's object id of the file's content (a link's: its target), as `git hash-object`."""
    data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _mode(path: Path) -> str:
    if path.is_symlink():
        return "120000"
    return "100755" if path.stat().st_mode & 0o100 else "100644"  # as git: the owner's bit


def _digest(listing: list[tuple[str, str, str]]) -> str:
    return hashlib.sha256(
        "".join(f"{m} {b} {p}\0" for p, m, b in sorted(listing)).encode()
    ).hexdigest()


def input_files(checkout: Path = REPO_ROOT) -> list[str]:
    """The checkout's input files: what git sees (tracked, and untracked but not ignored; not
    deleted) but prose, bench/, .github/ and the record."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", checkout=checkout)
    copied = shipped(checkout)
    return [
        name
        for name in sorted(set(filter(None, listed.split("\0"))))
        if is_input(name, copied)
        and ((checkout / name).is_symlink() or (checkout / name).is_file())
    ]


@functools.cache
def files_digest(checkout: Path = REPO_ROOT) -> str:
    """sha256 of the input files of the working tree: (path, git's mode, git's blob id) each."""
    return _digest(
        [(n, _mode(checkout / n), _blob_id(checkout / n)) for n in input_files(checkout)]
    )


def commit_files_digest(commit: str, checkout: Path = REPO_ROOT) -> str | None:
    """The same digest of a commit's tree, or None where this clone lacks the commit."""
    try:
        listed = git("ls-tree", "-r", "-z", f"{commit}^{{commit}}", checkout=checkout)
    except subprocess.CalledProcessError:
        return None
    copied = shipped(checkout)
    listing = []
    for line in filter(None, listed.split("\0")):
        meta, name = line.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob" and is_input(name, copied):
            listing.append((name, mode, blob))
    return _digest(listing)


# ---- the outside inputs -------------------------------------------------------------------------


@functools.cache
def python_build(python: str) -> str:
    """A CPython build as it names itself (version, build date, compiler), or 'absent'."""
    if not Path(python).exists():
        return "absent"
    done = subprocess.run([python, "-c", "import sys; print(sys.version)"],
                          capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    return done.stdout.strip()


def _resolved(site_packages: list[Path]) -> list[str]:
    """What pip resolved into a venv: its distributions and versions."""
    return sorted(
        p.name.removesuffix(".dist-info") for sp in site_packages for p in sp.glob("*.dist-info")
    )


@functools.cache
def outside_inputs(end: str | None) -> dict:
    """What the tests depend on beyond the checkout, in a form every machine computes alike."""
    runtime = [Requirement(r).name for r in runtime_dependencies()]
    found = {
        "pythons": {
            **{version: python_build(str(interpreter(version))) for version in OLD_PYTHONS},
            "controller": python_build(sys.executable),
        },
        "base_images": sorted({BaseImage(s.debian_arch, s.suite).tag for s in HOSTS.values()}),
        "controller_resolved": sorted(f"{n}=={importlib.metadata.version(n)}" for n in runtime),
        "ansible_end": None,
    }
    if end:
        ansible = ANSIBLE_ENDS[end].ensure()
        found["ansible_end"] = {
            "name": end,
            "python": python_build(ansible.python),
            "resolved": _resolved(list(ansible.venv.glob("lib/python*/site-packages"))),
        }
    return found


def inputs(end: str | None) -> dict:
    """A keyed test's inputs at an Ansible end (None: it runs no Ansible end of the tests')."""
    return {"files": files_digest(), **outside_inputs(end)}


def key_of(found: dict) -> str:
    return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()


# ---- the verdict ----------------------------------------------------------------------------


def read(record: Path = RECORD) -> dict:
    try:
        return json.loads(record.read_text())
    except FileNotFoundError:
        return {}


def head_date(checkout: Path = REPO_ROOT) -> datetime.date:
    """The date (UTC) of HEAD's commit: what an entry's age is counted against."""
    stamp = datetime.datetime.fromisoformat(
        git("log", "-1", "--format=%cI", checkout=checkout).strip()
    )
    return stamp.astimezone(datetime.UTC).date()


def junit_names(nodeid: str) -> tuple[str, str]:
    """(classname, name) of a test in pytest's JUnit report."""
    names = mangle_test_address(nodeid)
    return ".".join(names[:-1]), names[-1]


def _properties(testcase: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in testcase.iter("property")}


def why_not_trusted(nodeid: str, entry: dict, found: dict, today: datetime.date,
                    checkout: Path = REPO_ROOT) -> str | None:  # fmt: skip
    """None if the entry vouches for the test with these inputs, else why not."""
    if set(entry) != ENTRY_FIELDS or not isinstance(entry["inputs"], dict):
        return "its entry is not in the record's format"
    key = key_of(found)
    if entry["key"] != key:
        changed = [k for k in sorted({*entry["inputs"], *found})
                   if entry["inputs"].get(k) != found.get(k)]  # fmt: skip
        return f"its inputs changed since {entry['written']} ({', '.join(changed) or 'the key'})"
    if key_of(entry["inputs"]) != key:
        return "its entry's key is not the key of its inputs"
    written = datetime.date.fromisoformat(entry["written"])
    if (today - written).days > TRUSTED_DAYS:
        return f"its entry of {written} expired {TRUSTED_DAYS} days later (HEAD's commit: {today})"
    if hashlib.sha256(entry["junit"].encode()).hexdigest() != entry["junit_sha256"]:
        return "its JUnit element does not match its digest"
    testcase = ET.fromstring(entry["junit"])
    classname, name = junit_names(nodeid)
    if (testcase.tag, testcase.get("classname"), testcase.get("name")) != (
        "testcase",
        classname,
        name,
    ):
        return "its JUnit element is another test's"
    if any(child.tag in ("failure", "error", "skipped") for child in testcase):
        return "its JUnit element did not pass"
    properties = _properties(testcase)
    if (properties.get(KEY_PROPERTY), properties.get(COMMIT_PROPERTY)) != (key, entry["commit"]):
        return "its JUnit element names another key or commit"
    if float(testcase.get("time", "-1")) != entry["duration_s"] or entry["clean"] is not True:
        return "its entry's duration or tree disagrees with its JUnit element"
    if commit_files_digest(entry["commit"], checkout) != entry["inputs"]["files"]:
        return f"its commit {entry['commit'][:12]} is not in this clone with these input files"
    return None


def describe(entry: dict) -> str:
    """Where an entry came from, for a skip's reason."""
    return (f"green on {entry['written']} at {entry['commit'][:12]} (clean tree) in "
            f"{entry['duration_s']:.0f} s, JUnit sha256 {entry['junit_sha256'][:12]}")  # fmt: skip


# ---- writing --------------------------------------------------------------------------------


def entry_for(found: dict, commit: str, junit: str) -> dict:
    testcase = ET.fromstring(junit)
    return {
        "key": key_of(found),
        "inputs": found,
        "commit": commit,
        "clean": True,
        "written": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "duration_s": float(testcase.get("time")),
        "junit": junit,
        "junit_sha256": hashlib.sha256(junit.encode()).hexdigest(),
    }


def update(written: dict[str, dict], dropped: set[str], record: Path = RECORD) -> None:
    """Write entries and drop others (one writer at a time: a lock beside the record)."""
    with open(record.with_name(record.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = {k: v for k, v in read(record).items() if k not in dropped} | written
        partial = record.with_name(record.name + ".partial")
        partial.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
        partial.replace(record)


def junit_testcases(report: Path) -> dict[tuple[str, str], str]:
    """Every test's element in pytest's JUnit report, as text, by (classname, name)."""
    found = {}
    for testcase in ET.parse(report).getroot().iter("testcase"):
        testcase.tail = None
        found[testcase.get("classname"), testcase.get("name")] = ET.tostring(
            testcase, encoding="unicode"
        )
    return found


# ---- what a complete run is -------------------------------------------------------------------

NARROWING = {
    "keyword": "-k",
    "markexpr": "-m",
    "deselect": "--deselect",
    "ignore": "--ignore",
    "ignore_glob": "--ignore-glob",
    "lf": "--last-failed",
    "stepwise": "--stepwise",
}


def why_incomplete(options, args: list[str], rootdir: Path) -> str | None:
    """None for a run whose selection is whole: no argument (the default selection) or whole
    files and folders, nothing that narrows it; else what narrows it."""
    for option, flag in NARROWING.items():
        if getattr(options, option, None):
            return f"{flag} narrows the selection"
    for arg in args:
        if "::" in arg or not (rootdir / arg).exists():
            return f"{arg} is not a whole file or folder"
    return None


def why_unclean(checkout: Path = REPO_ROOT) -> str | None:
    """None for a clean tree (the record itself aside), else what git sees changed."""
    record = RECORD.relative_to(REPO_ROOT).as_posix()
    status = git("status", "--porcelain", "--untracked-files=all", "--", ".", f":!{record}",
                 checkout=checkout)  # fmt: skip
    return f"the tree is not clean: {status.splitlines()[0].strip()} ..." if status else None
