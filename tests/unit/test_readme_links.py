"""Issue 59, item 8: the README is where a newcomer starts, not the manual. It stays short (the
two set-up commands, one provisioning and one offline example, where the docs are), every
docs/*.md page is linked from it, and every relative link of the READMEs and the docs opens in
the checkout: a file that exists and, after `#`, a heading of that file (GitHub's anchor)."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
COLLECTION_README = ROOT / "ansible_collections" / "jetson_env" / "jetson" / "README.md"
MOST_LINES = 130  # what a newcomer reads in five minutes; the rest belongs in docs/
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def prose(path: Path) -> str:
    """The file without its fenced blocks: a link or a `#` there is code, not Markdown."""
    return FENCE.sub("", path.read_text())


def links(path: Path) -> list[str]:
    return LINK.findall(prose(path))


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the file's headings: lower case, backticks and punctuation
    dropped (hyphens kept), spaces as hyphens; a repeated one gets -1, -2 ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        unique, n = slug, 0
        while unique in found:
            n += 1
            unique = f"{slug}-{n}"
        found.add(unique)
    return found


def test_the_readme_is_a_quick_start_not_a_manual():
    lines = README.read_text().splitlines()
    assert len(lines) <= MOST_LINES, f"README.md has {len(lines)} lines: move details to docs/"


def test_the_readme_opens_with_the_two_set_up_commands_and_ci_runs_the_second():
    text = README.read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert blocks[:2] == [
        "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/jetson-env doctor\n",
        "bash scripts/test\n",
    ]
    assert text.index(blocks[1]) < text.index("\n## "), "the set-up commands come first"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert f"exec {blocks[1].strip()}" in ci, ci


def test_every_docs_page_is_linked_from_the_readme():
    linked = {target.split("#")[0] for target in links(README)}
    assert len(PAGES) >= 6, PAGES
    assert sorted(f"docs/{page.name}" for page in PAGES if f"docs/{page.name}" not in linked) == []


def test_every_relative_link_of_the_readme_and_the_docs_opens():
    broken, checked = [], 0
    for path in [README, ROOT / "tests" / "README.md", COLLECTION_README, *PAGES]:
        for target in links(path):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            name, _, anchor = target.partition("#")
            opened = (path.parent / name).resolve() if name else path
            where = f"{path.relative_to(ROOT)}: {target}"
            if not opened.exists():
                broken.append(f"{where}: no such file")
            elif anchor and (opened.suffix != ".md" or anchor not in anchors(opened)):
                broken.append(f"{where}: no heading #{anchor}")
            checked += 1
    assert checked >= 30, checked  # the reader finds the links that are there
    assert broken == []
