"""Whether a torch already installed on a host is kept or replaced by the matrix's.

A user's working torch (a CUDA build from a community index, a newer NVIDIA wheel, a CPU
build on a host without a GPU) is kept unless they ask for the matrix's
(`torch_replace_working`): the torch role asks `decide()` through the filter
`jetson_env.jetson.torch_keeping`, with the output of the doctor's own torch probe run in
the Python being provisioned, and `decide()` judges it with the doctor's own torch check
(jetson_env.checks.torch) against the matrix (jetson_env.matrix): the playbook and the
doctor cannot disagree. Working means what the check accepts (imports; a CUDA build with
CUDA available and kernels for this GPU where there is one), and the torch must pair with
a torchvision the matrix knows, so that torchvision can be paired with it.
"""

from __future__ import annotations

import json
from typing import Any

from jetson_env import platform_in_matrix, probing
from jetson_env.checks import torch as torch_check
from jetson_env.checks.context import Facts
from jetson_env.findings import CRASH, FAIL
from jetson_env.matrix import Matrix
from jetson_env.probes._prelude import RECORD
from jetson_env.probing import ProbeResult

PROBE = "torch"


def probe_script() -> str:
    """The doctor's torch probe as one `python -c` script: the probes' prelude and the probe,
    its records on stdout (no GPU work: no CUDA context, as the doctor without the smoke)."""
    probes = [(PROBE, probing.source(PROBE))]
    return probing.source("_prelude") + f"\nrun_probes({probes!r}, gpu_work=False)\n"


def probe_data(stdout: str) -> dict[str, Any] | None:
    """The probe's result from its records ("@@jetson-env result torch {...}"), or None."""
    prefix = f"{RECORD} result {PROBE} "
    for line in stdout.splitlines():
        if line.startswith(prefix):
            try:
                return json.loads(line[len(prefix) :])
            except ValueError:
                return None
    return None


def probe_needed(installed_version: str | None, wanted_version: str) -> bool:
    """Whether the probe (seconds: it imports torch) can change the decision: not where the
    facts' installed version (the distribution's metadata) says there is no torch, or the
    matrix's."""
    return bool(installed_version) and installed_version != wanted_version


def decide(
    matrix: Matrix,
    probe_stdout: str,
    platform: dict[str, Any],
    cuda: dict[str, Any],
    wanted_version: str,
    replace_working: bool = False,
    installed_version: str | None = None,
) -> dict[str, Any]:
    """{"keep": bool, "version": the installed version or None, "reason": one sentence};
    `wanted_version` is the version the torch role would install (the matrix's, an
    override's or its wheel file's).

    With `installed_version` (the facts'), the probe's output is needed only where
    probe_needed(); elsewhere that version decides."""
    if installed_version is not None and not probe_needed(installed_version, wanted_version):
        data = {PROBE: {"installed": bool(installed_version), "version": installed_version}}
    else:
        data = probe_data(probe_stdout)
    installed = (data or {}).get("torch") or {}
    version = installed.get("version")
    if not installed.get("installed"):
        return {"keep": False, "version": None, "reason": "no torch is installed"}
    if version == wanted_version:
        return {"keep": True, "version": version, "reason": f"torch {version} is the one asked for"}
    described = platform_in_matrix.describe(platform, cuda, matrix)
    results = {
        "platform": ProbeResult("platform", platform, None, 0.0),
        "cuda": ProbeResult("cuda", cuda, None, 0.0),
        PROBE: ProbeResult(PROBE, data, None, 0.0),
    }
    findings = torch_check.CHECK.run(Facts(results, matrix, described))
    problems = [f for f in findings if f.status in (FAIL, CRASH)]
    if problems:
        reason = f"torch {version} does not work here ({problems[0].summary})"
        return {"keep": False, "version": version, "reason": reason}
    if matrix.torchvision_for(version or "") is None:
        reason = f"torch {version} works but pairs with no torchvision the matrix knows"
        return {"keep": False, "version": version, "reason": reason}
    if replace_working:
        reason = f"torch {version} works; replaced as asked (torch_replace_working)"
        return {"keep": False, "version": version, "reason": reason}
    summary = findings[0].summary if findings else f"torch {version}"
    return {"keep": True, "version": version,
            "reason": f"{summary}: kept (torch_replace_working=true installs "
                      f"{wanted_version})"}  # fmt: skip
