"""Engine portability: what an engine built here requires of the machine that loads it.

A serialized TensorRT engine runs only on the compute capability and the TensorRT version it
was built with: build on the device that will run it. The project writes a sidecar
`<engine>.json` beside every engine it builds (the smoke's ONNX engine; docs/doctor.md):
{"tensorrt", "compute_capability", "device", "built_by", "built_at"}; engine_problems()
says from it why a file will not load on a host.
"""

from __future__ import annotations

from typing import Any

from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, Finding


def engine_problems(sidecar: dict[str, Any], tensorrt: str | None, capability: str | None):
    """Why an engine with this sidecar will not load where TensorRT `tensorrt` runs on compute
    capability `capability` (empty: it loads). TensorRT must be the same release (major.minor
    .patch; the build number may differ), the compute capability the same."""
    problems = []
    built_with = str(sidecar.get("tensorrt") or "")
    if tensorrt and built_with.split(".")[:3] != tensorrt.split(".")[:3]:
        problems.append(f"it was built by TensorRT {built_with or '(unknown)'}, this host has"
                        f" TensorRT {tensorrt}")  # fmt: skip
    built_for = str(sidecar.get("compute_capability") or "")
    if capability and built_for != capability:
        problems.append(f"it was built for compute capability {built_for or '(unknown)'}, this"
                        f" GPU is {capability}")  # fmt: skip
    return problems


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
        problems = engine_problems(sidecar, version, capability)
        built = (
            f"TensorRT {sidecar.get('tensorrt')}, compute capability"
            f" {sidecar.get('compute_capability')}"
        )
        summary = (
            "the smoke's engine file would not load here: " + "; ".join(problems)
            if problems
            else f"the smoke's engine file carries what built it ({built}) and loads here"
        )
        findings.append(CHECK.finding(FAIL if problems else OK, summary, [f"sidecar: {sidecar}"]))
    return findings


CHECK = Check(
    name="engine-portability",
    area="engine",
    summary="the compute capability and TensorRT version an engine built here will require",
    probes=("tensorrt", "platform"),
    run=run,
    manual="an engine file is the user's own: it is rebuilt on the GPU it runs on",
)
