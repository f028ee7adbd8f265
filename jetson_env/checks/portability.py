"""Engine portability: what an engine built here requires of the machine that loads it.

A serialized TensorRT engine runs only on the compute capability and the TensorRT
version it was built with: build on the device that will run it.
"""

from __future__ import annotations

from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import OK, SKIP, Finding


def run(facts: Facts) -> list[Finding]:
    loaded = facts.data("tensorrt").get("loaded") or {}
    version = loaded.get("version")
    capability = facts.compute_capability
    if not version or not capability:
        missing = " and ".join(
            what
            for what, value in (("TensorRT", version), ("the compute capability", capability))
            if not value
        )
        return [CHECK.finding(SKIP, f"unknown: {missing} not found here")]
    return [
        CHECK.finding(
            OK,
            f"engines built here need compute capability {capability} and TensorRT {version}",
            [
                "an engine does not load on another GPU architecture or TensorRT release: "
                "rebuild it on the target (torch2trt, trtexec) instead of copying it"
            ],
        )
    ]


CHECK = Check(
    name="engine-portability",
    area="engine",
    summary="the compute capability and TensorRT version an engine built here will require",
    probes=("tensorrt", "platform"),
    run=run,
    manual="an engine file is the user's own: it is rebuilt on the GPU it runs on",
)
