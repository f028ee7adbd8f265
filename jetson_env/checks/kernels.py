"""kernels: which installed packages carry CUDA kernels this GPU runs, read from their files.

Every package of the target Python whose shared objects carry device code (the kernels
probe: SASS architectures and PTX versions from each file's .nv_fatbin), judged by
jetson_env.device_code for this GPU's compute capability, this Jetson's release and this
driver: runs, runs after a JIT (PTX only), or fails at its first launch with "no kernel image
is available for execution on the device" (CUDA error 209/48) before anything has run.
"""

from __future__ import annotations

from jetson_env import device_code
from jetson_env.checks import Check, torch
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy

STATUS = {
    device_code.RUNS: OK,
    device_code.JIT: WARN,
    device_code.PTX_TOO_NEW: FAIL,
    device_code.NO_KERNEL: FAIL,
}
WORST = (device_code.NO_KERNEL, device_code.PTX_TOO_NEW, device_code.JIT, device_code.RUNS)
BUILDS_ARE_THE_BUILDERS = (
    "a package's kernels are what its builder compiled: the fix is a build for this GPU"
)
UNREAD_ARE_THE_PACKAGES = "a package's installed files are its own: pip rewrites them"


def driver_cuda(facts: Facts) -> str | None:
    """The driver's CUDA version (cuDriverGetVersion), else a Jetson's release's (L4T ships
    the driver of its CUDA)."""
    found = facts.data("kernels").get("driver")
    if found:
        return found
    return facts.release.cuda if facts.release else None


def judge_package(package: dict, facts: Facts) -> list[tuple[str, device_code.Verdict]]:
    """(file, verdict) for each of the package's files that carries device code."""
    capability = facts.compute_capability or ""
    jetson_cuda = facts.release.cuda if facts.release else None
    judged = []
    for entry in package.get("files") or []:
        if device_code.carries_code(entry):
            verdict = device_code.judge_file(
                entry,
                capability,
                facts.is_jetson,
                jetson_cuda,
                driver_cuda(facts),
            )
            judged.append((entry["path"], verdict))
    return judged


def unwalked(package: dict) -> list[str]:
    """A line per file whose fatbin the probe could not walk to its end: its verdict stands
    on what was read."""
    lines = []
    for entry in package.get("files") or []:
        if entry.get("fatbin_unread"):
            lines.append(
                f"{entry['path']}: {entry['fatbin_unread']} bytes of its .nv_fatbin not read"
            )
        if (entry.get("loaded") or {}).get("unread"):
            lines.append(
                f"{entry['path']}: {entry['loaded']['unread']} bytes of the fatbins it loads "
                "itself not read"
            )
    return lines


def not_read(check: Check, facts: Facts) -> list[Finding]:
    """A warning naming what the kernels probe did not read (a file list past the probes'
    bounds or unreadable, a listed shared object this user cannot open): what those carry
    and need is not judged, so neither check may say all is well without it."""
    unread = facts.data("kernels").get("unread") or []
    if not unread:
        return []
    return [
        check.finding(
            WARN,
            f"not every package file of {facts.python} was read: what those carry and need is "
            "not judged",
            unread,
            remedy=Remedy(
                "reinstall the package each line names (its file list, RECORD or "
                f"installed-files.txt, is rewritten): {facts.python} -m pip install "
                "--force-reinstall --no-deps <package>",
                why=UNREAD_ARE_THE_PACKAGES,
                prose=True,
            ),
        )
    ]


def rebuild_remedy(facts: Facts, name: str) -> Remedy:
    """torch: the torch role's wheel for this release (the matrix's); anything else: a build
    of it for this GPU, in words (which index carries one is the package's own matter)."""
    if name == "torch":
        return Remedy(torch.install_remedy(facts), torch.CHECK.role)
    capability = facts.compute_capability or "?"
    sm = "sm_" + capability.replace(".", "")
    where = (
        f"JetPack {facts.release.jetpack} (CUDA {facts.release.cuda})"
        if facts.release
        else f"CUDA {driver_cuda(facts) or 'of this driver'}"
    )
    return Remedy(
        f"reinstall {name} from a build that carries {sm} (or compute_{sm[3:]} PTX) for "
        f"{where}: {facts.python} -m pip install --force-reinstall --no-deps {name} "
        "--index-url <an index that builds it for this GPU>",
        why=BUILDS_ARE_THE_BUILDERS,
        prose=True,
    )


def run(facts: Facts) -> list[Finding]:
    data = facts.data("kernels")
    capability = facts.compute_capability
    if not capability:
        why = (facts.platform or {}).get("unknown", {}).get("compute_capability")
        return [
            CHECK.finding(
                SKIP, "no GPU compute capability known here" + (f" ({why})" if why else "")
            )
        ]
    findings, running, empty = not_read(CHECK, facts), [], []
    torch_requires = {
        name
        for package in data.get("packages") or []
        if package.get("name") == "torch"
        for name in package.get("requires") or []
    }
    for package in data.get("packages") or []:
        for entry in package.get("files") or []:
            why = device_code.without_kernels(entry)
            if why:
                empty.append(f"{entry['path']}: {why}")
        judged = judge_package(package, facts)
        if not judged:
            continue
        label = " ".join(filter(None, (package.get("name"), package.get("version"))))
        worst = min((v for _f, v in judged), key=lambda v: WORST.index(v.state))
        if worst.state == device_code.RUNS:
            running.append(label)
            continue
        bad = [(f, v) for f, v in judged if v.state == worst.state]
        summary = {
            device_code.NO_KERNEL: f"{label} has no kernel for compute capability {capability}",
            device_code.PTX_TOO_NEW: f"{label}'s kernels are PTX newer than this driver compiles",
            device_code.JIT: f"{label} runs only after the driver compiles its PTX (first load)",
        }[worst.state]
        status = STATUS[worst.state]
        if status == FAIL and not device_code.blocks(
            worst.state, package.get("name") in torch_requires
        ):
            status = WARN  # as the bundle ships it (bundle/judging.py)
            summary += f": {device_code.TORCH_REQUIRES}"
        details = [f"{path}: {verdict.why}" for path, verdict in bad[:10]]
        details += unwalked(package)
        if len(bad) > 10:
            details.append(f"... and {len(bad) - 10} more files")
        findings.append(
            CHECK.finding(
                status,
                summary,
                details,
                remedy=rebuild_remedy(facts, package.get("name", "")),
            )
        )
    if running:
        findings.insert(
            0,
            CHECK.finding(
                OK,
                f"{len(running)} package(s) carry kernels compute capability {capability} runs",
                running,
            ),
        )
    if empty:
        findings.append(
            CHECK.finding(
                OK, f"{len(empty)} file(s) carry only cubins without a kernel: not judged", empty
            )
        )
    if not findings:
        findings.append(CHECK.finding(OK, f"no package of {facts.python} carries CUDA device code"))
    return findings


CHECK = Check(
    name="kernels",
    area="cuda",
    summary="the CUDA kernels each package carries (SASS, PTX from its files) against this "
    "GPU's compute capability, release and driver",
    run=run,
    manual=BUILDS_ARE_THE_BUILDERS,
)
