"""What the built wheel carries of the collection: its roles and plugins, never what
`ansible-test` leaves in the collection's tests/output/ (a failure report was once committed
and shipped)."""

import subprocess
import sys
import zipfile
from pathlib import Path

from support.hosts import fresh_clone

COLLECTION = Path("ansible_collections") / "jetson_env" / "jetson"


def test_the_wheel_carries_no_ansible_test_output(tmp_path: Path):
    """Built from a copy of the checkout (as a clone has it) in which `ansible-test sanity`
    left its report, as it does in the collection's tests/output/bot/."""
    clone = fresh_clone(tmp_path / "clone")
    report = clone / COLLECTION / "tests" / "output" / "bot" / "ansible-test-sanity-x.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text('{"verified": false}\n')
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", tmp_path / "wheel"]
    subprocess.run([*build, clone], check=True, capture_output=True, timeout=600)
    (built,) = (tmp_path / "wheel").glob("jetson_env-*.whl")
    with zipfile.ZipFile(built) as wheel:
        members = wheel.namelist()

    assert f"{COLLECTION.as_posix()}/roles/tensorrt/tasks/main.yml" in members
    assert [m for m in members if m.startswith(f"{COLLECTION.as_posix()}/tests/")] == []
