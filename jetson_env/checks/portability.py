"""Engine portability: what an engine built here requires of the machine that loads it.

A serialized TensorRT engine runs only on the compute capability and the TensorRT version it
was built with: build on the device that will run it. The project writes a sidecar
`<engine>.json` beside every engine it builds (the smoke's ONNX engine; docs/doctor.md):
{"tensorrt", "compute_capability", "hardware_compatibility", "version_compatible", "device",
"built_by", "built_at"}; jetson_env.engine_files.verdict() says from it whether the file loads
on a host, by the rule `doctor --engines` and `plan --engines` use.
"""

from __future__ import annotations

from jetson_env import engine_files
from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, Finding


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
    findings = [
        CHECK.finding(
            OK,
            f"engines built here need compute capability {capability} and TensorRT {version}",
            [
                "an engine does not load on another GPU architecture or TensorRT release: "
                "rebuild it on the target (ONNX + trtexec/OnnxParser, torch2trt) instead of "
                "copying it; jetson-env writes which ones built it beside each engine "
                "(<engine>.json)"
            ],
        )
    ]
    engine = (facts.data("smoke").get("onnx") or {}).get("engine") or {}
    sidecar = engine.get("sidecar")
    if sidecar:
        said, why = engine_files.verdict(sidecar, version, capability)
        summary = (
            f"the smoke's engine file carries what built it and {why}"
            if said == engine_files.LOADS
            else f"the smoke's engine file: {why}"
        )
        findings.append(
            CHECK.finding(
                OK if said == engine_files.LOADS else FAIL, summary, [f"sidecar: {sidecar}"]
            )
        )
    return findings


CHECK = Check(
    name="engine-portability",
    area="engine",
    summary="the compute capability and TensorRT version an engine built here will require",
    run=run,
    manual="an engine file is the user's own: it is rebuilt on the GPU it runs on",
)
