"""Smoke: a tiny model converted by every converter present and run; each its own finding
with its time and max error against PyTorch (torch2trt with save and reload, ONNX ->
TensorRT's OnnxParser with the engine file reloaded, Torch-TensorRT).

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
    if data.get("torch2trt") is False:
        findings.append(
            CHECK.finding(
                SKIP,
                "torch2trt not run: not importable (see the torch2trt finding)",
                [data.get("torch2trt_error") or ""],
            )
        )
    cannot = (
        f" (torch2trt cannot use TensorRT {data['tensorrt']}: see the torch2trt finding)"
        if data.get("tensorrt")
        and not facts.matrix.converters.supports("torch2trt", data["tensorrt"])
        else ""
    )
    for entry in data.get("conversions", []):
        precision = entry["precision"]
        if not entry.get("converted") or entry.get("error"):
            findings.append(
                CHECK.finding(
                    FAIL,
                    f"torch2trt {precision}: "
                    + ("conversion failed" if not entry.get("converted") else "inference failed")
                    + cannot,
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
    findings += onnx_findings(facts, data)
    findings += torch_tensorrt_findings(data)
    return findings


def numbers(entry: dict) -> str:
    return (
        f"max abs error {entry['max_abs_error']:.2e} (tolerance {entry['tolerance']:g}), "
        f"{entry['latency_ms']:.3f} ms, {entry['speedup']:.1f}x PyTorch"
    )


def judged(name: str, entry: dict, details: list[str], remedy=None) -> Finding:
    """A converter's finding: failed with its error, or its numbers against PyTorch."""
    if entry.get("error") or "max_abs_error" not in entry:
        return CHECK.finding(
            FAIL, f"{name}: failed", [entry.get("error") or "no output"], remedy=remedy
        )
    return CHECK.finding(
        OK if entry["within_tolerance"] else FAIL,
        f"{name}: {numbers(entry)}",
        [f"engine built in {entry['build_seconds']:.1f} s", *details],
    )


def onnx_findings(facts: Facts, data: dict) -> list[Finding]:
    entry = data.get("onnx")
    if not entry:
        return []
    typed = ", strongly typed" if entry.get("strongly_typed") else ""
    name = f"ONNX -> TensorRT {data['tensorrt']} OnnxParser fp32{typed}"
    engine = entry.get("engine") or {}
    details = [f"exported with torch.onnx.export ({entry.get('exporter')})"]
    if engine:
        details.append(
            f"engine file ({engine['bytes']} bytes) written with its sidecar, read back and run"
        )
    error = entry.get("error") or ""
    # torch.onnx.export needs the onnx package ("Module onnx is not installed!"): the matrix
    # row's onnx_export_packages, the tensorrt role's `onnx` set, asked for by this finding only.
    missing = "onnx is not installed" in error or "No module named 'onnx'" in error
    remedy = facts.onnx_export_install("onnx") if missing else None
    return [judged(name, entry, details, remedy), *host_runtime_findings(entry)]


def host_runtime_findings(onnx: dict) -> list[Finding]:
    """The ONNX engine run through the host's CUDA bindings (cuda-python, else pycuda), as
    NVIDIA's TensorRT samples run an engine."""
    entry = onnx.get("host_runtime")
    if not entry:
        return []
    bindings = entry.get("bindings")
    if not bindings:
        return [CHECK.finding(SKIP, "engine through CUDA bindings: not run",
                              [entry.get("error") or ""])]  # fmt: skip
    if entry.get("error") or entry.get("max_abs_error") is None:
        return [CHECK.finding(FAIL, f"engine through {bindings}: failed",
                              [entry.get("error") or "no output"])]  # fmt: skip
    return [
        CHECK.finding(
            OK if entry["within_tolerance"] else FAIL,
            f"engine through {bindings} (host buffers, as TensorRT's samples run it): max abs"
            f" error {entry['max_abs_error']:.2e} (tolerance {entry['tolerance']:g})",
        )
    ]


def torch_tensorrt_findings(data: dict) -> list[Finding]:
    entry = data.get("torch_tensorrt")
    if not entry:
        return []
    if not entry.get("installed"):
        return [CHECK.finding(SKIP, "Torch-TensorRT not run: not installed",
                              [entry.get("error") or ""])]  # fmt: skip
    return [judged(f"Torch-TensorRT {entry.get('version')} fp32", entry, [])]


CHECK = Check(
    name="smoke",
    area="smoke",
    summary="a tiny model converted by every converter present (torch2trt fp32/fp16, ONNX -> "
    "OnnxParser, Torch-TensorRT), run against PyTorch, engines saved and reloaded",
    run=run,
    manual="a failed conversion is fixed where its checks point (torch, TensorRT, torch2trt)",
)
