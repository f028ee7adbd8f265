"""Issue 50, item 1: the pip lines jetson-env prints name where this jetson-env came from
(it is on no index), and pip takes them: from the checkout, from the wheel pip recorded,
by name only where nothing was recorded (an index), else '.[provision]' for a checkout."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from support.hosts import project_wheel

ROOT = Path(__file__).resolve().parents[2]
SAY = (
    "from jetson_env import installed; print(installed.requirement()); "
    "print(installed.extra_line())"
)


def said(site: Path | None, cwd: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(site)} if site else dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", SAY], cwd=cwd, env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return proc.stdout.splitlines()


def pip_takes(requirement: str) -> None:
    """pip resolves the requirement as printed (a dry run: nothing installed, no index)."""
    (argument,) = shlex.split(requirement)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps",
                           "--no-index", "--quiet", argument], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_from_the_checkout_the_line_names_the_checkout(tmp_path):
    requirement, extra = said(None, tmp_path)  # this venv: the checkout's editable install
    assert requirement == shlex.quote(f"{ROOT}[provision]")
    assert extra == shlex.join([sys.executable, "-m", "pip", "install", "ansible-core>=2.16"])


def test_an_installed_wheel_names_the_wheel_then_what_is_left(tmp_path):
    built = project_wheel()
    wheel = tmp_path / built.name
    shutil.copyfile(built, wheel)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, timeout=300)  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    requirement, _ = said(site, elsewhere)
    assert requirement == shlex.quote(f"{wheel}[provision]")
    pip_takes(requirement)
    wheel.unlink()  # the wheel gone: only a checkout can install it again
    assert said(site, elsewhere)[0] == "'.[provision]'"
    (recorded,) = site.glob("jetson_env-*.dist-info/direct_url.json")
    assert json.loads(recorded.read_text())["url"].startswith("file://")
    recorded.unlink()  # as from an index: pip recorded no direct URL
    assert said(site, elsewhere)[0] == "'jetson-env[provision]'"
