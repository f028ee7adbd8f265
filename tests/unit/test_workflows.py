"""GitHub workflows: every action pinned to a commit, actionlint pinned by sha256.

(The workflows' syntax is checked by scripts/test against GitHub's schema, and by
actionlint where it is installed; the workflow's own `lint` job runs actionlint.)
"""

import re
from pathlib import Path

import pytest
import yaml

WORKFLOW_DIR = Path(__file__).parents[2] / ".github" / "workflows"
WORKFLOWS = sorted(WORKFLOW_DIR.glob("*.yml"))
PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def steps(workflow: dict):
    for job in workflow["jobs"].values():
        yield from job.get("steps", [])


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_commit(path: Path):
    uses = [step["uses"] for step in steps(yaml.safe_load(path.read_text())) if "uses" in step]
    assert uses
    assert [u for u in uses if not PINNED.match(u)] == []


def test_actionlint_runs_first_from_a_sha256_pinned_archive():
    workflow = yaml.safe_load((WORKFLOW_DIR / "images.yml").read_text())
    (lint,) = [s for s in workflow["jobs"]["lint"]["steps"] if s.get("name") == "actionlint"]
    assert re.fullmatch(r"[0-9a-f]{64}", lint["env"]["ACTIONLINT_SHA256"])
    assert "sha256sum --check --strict" in lint["run"]
    assert lint["run"].index("sha256sum") < lint["run"].index("tar -xzf")
    assert "--proto '=https'" in lint["run"]
    assert workflow["jobs"]["matrix"]["needs"] == "lint"


def test_the_slow_tier_runs_weekly_and_before_a_release():
    """tests/README.md, "The slow tier": the whole test command with JETSON_ENV_SLOW=1."""
    workflow = yaml.safe_load((WORKFLOW_DIR / "slow.yml").read_text())
    assert workflow["on"]["schedule"] and workflow["on"]["push"]["tags"] == ["v*"]
    run = [s for s in steps(workflow) if "run" in s][-1]
    assert run["env"]["JETSON_ENV_SLOW"] == "1"
    assert run["run"].endswith("bash .ci/run")


def test_the_slow_workflow_starts_on_a_stock_runner_with_the_old_pythons_it_requires():
    """A stock runner has no pyenv: .ci/run requires its builds (tests/support/pythons.py), so
    the workflow installs every one the tests use, pyenv pinned to a commit, and hands its root
    to the tests through sudo."""
    from support.pythons import OLD_PYTHONS

    workflow = yaml.safe_load((WORKFLOW_DIR / "slow.yml").read_text())
    assert (
        "JETSON_ENV_REQUIRE_OLD_PYTHONS=1" in (WORKFLOW_DIR.parents[1] / ".ci" / "run").read_text()
    )
    job = workflow["jobs"]["slow-tier"]
    pythons, run = [s for s in steps(workflow) if "run" in s]
    assert re.fullmatch(r"[0-9a-f]{40}", pythons["env"]["PYENV_COMMIT"])
    assert 'checkout --quiet "$PYENV_COMMIT"' in pythons["run"]
    assert re.search(r"for version in ([\d. ]+); do", pythons["run"])[1].split() == list(
        OLD_PYTHONS
    )
    assert job["env"]["PYENV_ROOT"] and "PYENV_ROOT" in run["run"].split()[1]
