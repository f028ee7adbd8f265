"""termcolor: torch2trt <= 0.5.0's test module imports it and nothing installs it
("No module named 'termcolor'")."""

from __future__ import annotations

from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, Finding


def run(facts: Facts) -> list[Finding]:
    module = facts.data("pymodules").get("modules", {}).get("termcolor", {})
    if module.get("importable"):
        version = module.get("version") or "(version unknown)"
        return [CHECK.finding(OK, f"termcolor {version} imports", [module.get("file") or ""])]
    return [
        CHECK.finding(
            FAIL,
            f"termcolor is not importable in {facts.python}: torch2trt's tests fail with "
            "\"No module named 'termcolor'\"",
            [module.get("error") or ""],
            remedy=facts.python_base_install("termcolor", "packages", ("termcolor",)),
        )
    ]


CHECK = Check(
    name="termcolor",
    area="python",
    summary="termcolor imports in the target Python (torch2trt.test needs it)",
    run=run,
)
