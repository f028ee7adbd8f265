"""A report page as a browser shows it: headless Chromium (Debian's `chromium`, which
scripts/lib/test-env.sh installs) lays out a copy of the page with a measuring script added,
at a given window width, and photographs it. The photographs are kept under
.cache/test-logs/pages/ for people to look at."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

PHOTOS = Path(__file__).parents[2] / ".cache" / "test-logs" / "pages"
WIDTHS = (390, 1280, 1920)  # a phone, a laptop, a desktop

# Runs in the copy of the page after layout; writes what it measured into the DOM, which
# --dump-dom prints. STATUSES is replaced by the page's statuses (a JSON list).
MEASURE = """<script>
(() => {
  const statuses = STATUSES;
  const colour = (element) => getComputedStyle(element).backgroundColor;
  const painted = {};
  for (const status of statuses) {
    painted[status] = [...new Set([...document.getElementsByClassName(status)].map(colour))];
  }
  const heading = /^H[1-6]$/;
  const empty = [...document.querySelectorAll('h2, h3, section, ul, ol, pre, p, code')]
    .filter((element) => {
      if (!heading.test(element.tagName)) return element.innerText.trim() === '';
      const next = element.nextElementSibling;  // a heading with nothing under it
      return !next || (heading.test(next.tagName) && next.tagName <= element.tagName);
    })
    .map((element) => element.outerHTML.slice(0, 200));
  const out = {
    width: innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
    title: document.title,
    text: document.body.innerText,
    legend: [...document.querySelectorAll('#legend [data-status]')]
      .map((element) => [element.dataset.status, colour(element)]),
    painted: painted,
    tables: [...document.querySelectorAll('table')].map((table) => ({
      id: table.id, right: table.getBoundingClientRect().right,
      overflows: table.parentElement.scrollWidth > table.parentElement.clientWidth,
      scrolls: getComputedStyle(table.parentElement).overflowX})),
    empty: empty,
    commands: [...document.querySelectorAll('pre')].map((element) => element.innerText),
  };
  const pre = document.createElement('pre');
  pre.id = 'jetson-env-test-measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


@dataclass
class Shown:
    """What the browser measured on a page at one window width."""

    width: int
    scroll_width: int
    height: int
    title: str
    text: str
    legend: list[tuple[str, str]]
    painted: dict[str, list[str]]
    tables: list[dict[str, Any]]
    empty: list[str]
    commands: list[str]


class _Measured(HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside = False
        self.data = ""

    def handle_starttag(self, tag, attrs):
        self.inside = ("id", "jetson-env-test-measured") in attrs

    def handle_data(self, data):
        if self.inside:
            self.data += data


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("no chromium here: `bash scripts/test` installs it "
                    "(scripts/lib/test-env.sh), or apt-get install chromium")  # fmt: skip
    return found


def _run(*args: str) -> str:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", "--allow-file-access-from-files", *args],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip


# Headless Chromium lays out no window narrower than 500 px; a phone's 390 px is a frame of
# that width in a 500 px window (the page's own viewport, its media queries included, is the
# frame's). The frame's measurement is copied out, for --dump-dom prints the top page only.
NARROWEST_WINDOW = 500
FRAME = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="page" src="SRC" style="border:0;width:WIDTHpx;height:HEIGHTpx"></iframe>
<script>
const poll = () => {
  const inner = document.getElementById('page').contentDocument;
  const measured = inner && inner.getElementById('jetson-env-test-measured');
  if (!measured) { setTimeout(poll, 50); return; }
  const pre = document.createElement('pre');
  pre.id = 'jetson-env-test-measured';
  pre.textContent = measured.textContent;
  document.body.appendChild(pre);
};
poll();
</script></body></html>"""


def _in_a_frame(page: Path, width: int, height: int) -> tuple[str, int]:
    """(the URI to open, the window's width): the page itself, or a frame `width` px wide."""
    if width >= NARROWEST_WINDOW:
        return page.as_uri(), width
    frame = page.with_name(f"{page.stem}-frame-{width}-{height}.html")
    frame.write_text(FRAME.replace("SRC", page.name).replace("WIDTH", str(width))
                     .replace("HEIGHT", str(height)))  # fmt: skip
    return frame.as_uri(), NARROWEST_WINDOW


def show(page: Path, width: int, statuses: list[str]) -> Shown:
    """The page laid out in a window `width` px wide; photographed as PHOTOS/NAME-WIDTH.png."""
    copy = page.with_name(f"{page.stem}-measured-{width}.html")
    script = MEASURE.replace("STATUSES", json.dumps(statuses))
    copy.write_text(page.read_text().replace("</body>", script + "</body>"))
    parser = _Measured()
    uri, window = _in_a_frame(copy, width, 900)
    parser.feed(_run(f"--window-size={window},900", "--virtual-time-budget=10000", "--dump-dom",
                     uri))  # fmt: skip
    found = json.loads(parser.data)
    PHOTOS.mkdir(parents=True, exist_ok=True)
    photo = PHOTOS / f"{page.stem}-{width}.png"
    height = min(max(found["height"], 600), 6000)
    uri, window = _in_a_frame(page, width, height)
    _run(f"--window-size={window},{height}", f"--screenshot={photo}", uri)
    assert photo.stat().st_size > 0
    return Shown(
        found["width"], found["scrollWidth"], found["height"], found["title"], found["text"],
        [tuple(pair) for pair in found["legend"]], found["painted"], found["tables"],
        found["empty"], found["commands"],
    )  # fmt: skip


def grid_on_screen(shown: Shown) -> None:
    """The page's grid (#grid) at its window's width: whole on screen where a laptop's or a
    desktop's window holds it; on a phone (390 px) a wider grid scrolls in its own box
    (.scroll), and the page itself never sideways."""
    grid = next(t for t in shown.tables if t["id"] == "grid")
    if shown.width >= 1280:
        assert grid["right"] <= shown.width and not grid["overflows"], "a grid column is off-screen"
    else:
        assert grid["scrolls"] in ("auto", "scroll"), "the grid's columns are cut off"


def luminance(rgb: str) -> float:
    """The relative luminance (WCAG) of a computed colour, `rgb(r, g, b)`."""
    channels = [int(c) / 255 for c in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
