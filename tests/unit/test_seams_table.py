"""tests/README.md's table of the seams where users start (issue 54): every host kind and
source has a row, every step a cell, and every test tests/README.md names exists (a function
of that module, with that parametrization id in its source), so its tables cannot name a test
that was renamed or removed."""

import ast
import re
from functools import cache
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
README = TESTS / "README.md"
HEADING = "## The seams where users start"
STEPS = [
    "--check, never provisioned",
    "the run",
    "the second run",
    "--check after it",
    "the doctor",
    "a break, then `doctor --fix`",
]
HOST_KINDS = [
    "x86",
    "lived-in x86, offline",
    "Python 3.6 (JetPack 4 stand-in)",
    "Python 3.8 (JetPack 5 stand-in)",
    "Python 3.14",
    "emulated Orin",
]
SOURCES = ("online", "bundle")
TEST_ID = re.compile(r"`(test_\w+\.py)::(test_\w+)(?:\[([^\]]+)\])?`")
NO_TEST = ("no test yet", "no test can exist: ")


def table() -> list[list[str]]:
    text = README.read_text()
    assert HEADING in text, f"tests/README.md has no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]


@cache
def functions(module: str) -> tuple[str, frozenset[str]]:
    """A test module's source and its top-level function names."""
    (path,) = [p for p in (TESTS / "integration" / module, TESTS / "unit" / module) if p.exists()]
    source = path.read_text()
    tree = ast.parse(source)
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    return source, frozenset(names)


def test_a_row_for_each_host_kind_and_source_a_cell_for_each_step():
    head, rule, *rows = table()
    assert head == ["host kind", "source", *STEPS]
    assert set(rule) == {"---"}
    kinds = [(row[0], row[1].split(" (")[0]) for row in rows]
    assert kinds == [(kind, source) for kind in HOST_KINDS for source in SOURCES]
    for row in rows:
        assert len(row) == 2 + len(STEPS), row
        for cell in row[2:]:
            assert TEST_ID.search(cell) or cell.startswith(NO_TEST), (row[:2], cell)


def named_tests() -> list[tuple[str, str, str | None]]:
    """Every test tests/README.md names, this table's and the others'."""
    return sorted({m.groups() for m in TEST_ID.finditer(README.read_text())})


@pytest.mark.parametrize(("module", "name", "param"), named_tests())
def test_every_test_the_table_names_exists(module: str, name: str, param: str | None):
    source, names = functions(module)
    assert name in names, f"{module} has no {name}"
    if param:
        assert f'"{param}"' in source, f"{module} has no parametrization {param!r}"
