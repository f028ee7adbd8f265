"""What a keyed slow test depends on lies inside its inputs (tests/support/slow_tier.py): every
file its module imports (the import graph through tests/support, playbook_support, the conftest
files and jetson_env), every file of the wheel its hosts and images install, and every file the
images and the test hosts' images copy."""

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

from support import slow_tier
from support.hosts import HOSTS, HostImage, fresh_clone

ROOT = Path(__file__).resolve().parents[2]
SEARCH = (ROOT / "tests", ROOT / "tests" / "integration", ROOT)
INPUTS = set(slow_tier.input_files())


def keyed_modules() -> list[Path]:
    tests = sorted((ROOT / "tests").rglob("test_*.py"))
    found = [p for p in tests if "slow(keyed=True)" in p.read_text()]
    assert {"test_images.py", "test_playbook_aarch64.py", "test_python314.py"} <= {
        p.name for p in found
    }
    return found


def _local(name: str) -> list[Path]:
    """The checkout's files of a dotted module name and of its packages (their __init__.py)."""
    parts = name.split(".")
    found = []
    for root in SEARCH:
        for depth in range(1, len(parts) + 1):
            base = root.joinpath(*parts[:depth])
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    found.append(candidate)
    return found


def import_graph(start: list[Path]) -> set[Path]:
    """Every checkout file reachable by imports from `start`."""
    seen, todo = set(), list(start)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                todo += _local(name)
    return seen


def relative(paths, resolve: bool = False) -> set[str]:
    """Checkout paths; `resolve`: through links (the wheel's jetson_env/docs is docs/)."""
    return {(p.resolve() if resolve else p).relative_to(ROOT).as_posix() for p in paths}


def test_every_file_a_keyed_tests_modules_import_is_an_input():
    conftests = [ROOT / "tests" / "conftest.py", ROOT / "tests" / "integration" / "conftest.py"]
    graph = relative(import_graph(keyed_modules() + conftests))
    assert {"tests/support/hosts.py", "tests/integration/playbook_support.py",
            "jetson_env/matrix.py", "tests/conftest.py"} <= graph  # fmt: skip
    assert graph - INPUTS == set()


def test_every_file_the_wheel_carries_is_an_input(tmp_path: Path):
    """What setuptools really packs (jetson_env/docs/ is the checkout's docs/, through a link),
    and the README as the wheel's description. Built from a copy: its build/ is its own."""
    clone = fresh_clone(tmp_path / "clone")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", tmp_path / "wheel"]
    subprocess.run([*build, clone], check=True, capture_output=True, timeout=600)
    (built,) = (tmp_path / "wheel").glob("jetson_env-*.whl")
    with zipfile.ZipFile(built) as wheel:
        members = [n for n in wheel.namelist() if ".dist-info/" not in n]
    assert "jetson_env/docs/doctor.md" in members
    assert relative((ROOT / m for m in members), resolve=True) - INPUTS == set()
    assert "README.md" in INPUTS


def test_every_file_the_images_copy_is_an_input():
    tracked = set(slow_tier.git("ls-files").split("\n"))
    copied = set()
    for source in slow_tier.dockerfile_copies(ROOT / "images" / "Dockerfile"):
        path = ROOT / source
        listed = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
        copied |= relative(listed) & tracked
    assert {"README.md", "images/inputs/README.md", "docs/doctor.md"} <= copied
    assert copied - INPUTS == set()
    for spec in HOSTS.values():
        tree = HostImage(spec).context.tree
        if tree:
            files = relative(p for p in tree.rglob("*") if p.is_file() or p.is_symlink())
            assert files and files - INPUTS == set(), spec.name
