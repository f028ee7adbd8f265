"""Smoke: a tiny model converted with torch2trt and run; error, latency, save and reload.

Reports only what ran: a conversion that did not run is a `skip` with the reason.
"""

from __future__ import annotations

from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, Finding


def run(facts: Facts) -> list[Finding]:
    data = facts.data("smoke")
    findings = []
    reference = data.get("reference")
    if reference:
        findings.append(
            CHECK.finding(
                OK,
                f"PyTorch reference (torch {data['torch']}) on {data['device']}: "
                f"{reference['latency_ms']:.3f} ms",
            )
        )
    if data.get("skipped"):
        findings.append(CHECK.finding(SKIP, f"conversion not run: {data['skipped']}"))
        return findings
    fp16 = data.get("fp16") or {}
    for entry in data.get("conversions", []):
        precision = entry["precision"]
        if not entry.get("converted") or entry.get("error"):
            findings.append(
                CHECK.finding(
                    FAIL,
                    f"torch2trt {precision}: "
                    + ("conversion failed" if not entry.get("converted") else "inference failed"),
                    [entry.get("error") or ""],
                )
            )
            continue
        numbers = (
            f"max abs error {entry['max_abs_error']:.2e} (tolerance {entry['tolerance']:g}), "
            f"{entry['latency_ms']:.3f} ms, {entry['speedup']:.1f}x PyTorch"
        )
        findings.append(
            CHECK.finding(
                OK if entry["within_tolerance"] else FAIL,
                f"torch2trt {precision} (TensorRT {data['tensorrt']}): {numbers}",
                [f"engine built in {entry['build_seconds']:.1f} s"],
            )
        )
    if fp16 and not fp16.get("supported"):
        findings.append(
            CHECK.finding(SKIP, f"fp16 not converted: no fast fp16 on this GPU ({fp16['source']})")
        )
    reload = data.get("reload")
    if reload is not None:
        if reload.get("done") and reload.get("same_output"):
            findings.append(
                CHECK.finding(
                    OK, f"engine saved ({reload['bytes']} bytes) and reloaded: same output"
                )
            )
        else:
            findings.append(
                CHECK.finding(
                    FAIL,
                    "engine save/reload (TRTModule state_dict) "
                    + ("gave a different output" if reload.get("done") else "failed"),
                    [reload.get("error") or f"max difference {reload.get('max_abs_difference')}"],
                )
            )
    return findings


CHECK = Check(
    name="smoke",
    area="smoke",
    summary="a tiny model converted with torch2trt (fp32, fp16 where fast), run, saved, reloaded",
    probes=("smoke",),
    run=run,
    manual="a failed conversion is fixed where its checks point (torch, TensorRT, torch2trt)",
)
