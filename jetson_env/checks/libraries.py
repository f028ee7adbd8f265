"""libraries: whether the dynamic loader finds every library the packages' shared objects
need, read from their files (the kernels probe: DT_NEEDED against RPATH/RUNPATH with
$ORIGIN, LD_LIBRARY_PATH, the ld.so cache and the default folders).

A need it does not find is what the import or the first call will say: "libX.so.N: cannot
open shared object file: No such file or directory" (jetson_env.device_code). The driver's
own libraries (libcuda.so.1) are the cuda and torch checks' matter.
"""

from __future__ import annotations

import os
import shlex

from jetson_env import device_code
from jetson_env.checks import Check, kernels
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, WARN, Finding, Remedy

WHOSE = "the library is another package's: the fix installs it or shows the loader where it is"


def missing(package: dict) -> dict[str, list[tuple[str, dict]]]:
    """need -> [(the file that needs it, what the probe found)] for needs not found."""
    found: dict[str, list[tuple[str, dict]]] = {}
    for entry in package.get("files") or []:
        for need, where in (entry.get("needs") or {}).items():
            if not where.get("path") and not device_code.is_driver_library(need):
                found.setdefault(need, []).append((entry["path"], where))
    return found


def remedy(facts: Facts, need: str, where: dict, needs: list[str]) -> Remedy:
    """The loader pointed at the installed copy (shipped_by), else the pip package that
    ships the library, else words."""
    shipped = where.get("shipped_by")
    if shipped:
        folder = os.path.dirname(shipped["path"])
        conf = shlex.quote(f"/etc/ld.so.conf.d/jetson-env-{shipped['package']}.conf")
        return Remedy(
            f"echo {shlex.quote(folder)} | {facts.sudo(f'tee {conf}')} && {facts.sudo('ldconfig')}",
            why=f"{need} is installed by {shipped['package']}, in a folder the loader does not "
            "search: " + WHOSE,
        )
    package = device_code.library_package(need, device_code.cuda_major(needs))
    if package:
        return Remedy(facts.pip_install(package), why=WHOSE)
    return Remedy(f"install the package that ships {need}", why=WHOSE, prose=True)


def run(facts: Facts) -> list[Finding]:
    findings, checked = kernels.not_read(CHECK, facts), 0
    for package in facts.data("kernels").get("packages") or []:
        checked += 1
        gaps = missing(package)
        if not gaps:
            continue
        label = " ".join(filter(None, (package.get("name"), package.get("version"))))
        has_code = any(device_code.carries_code(e) for e in package.get("files") or [])
        for need, users in sorted(gaps.items()):
            needs = [n for entry in package.get("files") or [] for n in entry.get("needs") or {}]
            details = [f"needed by {path}" for path, _where in users[:5]]
            details.append("the import will say: " + device_code.MISSING_LIBRARY_ERROR.format(need))
            findings.append(
                CHECK.finding(
                    FAIL if has_code else WARN,
                    f"{label}: {need} is not found by the loader",
                    details,
                    remedy(facts, need, users[0][1], needs),
                )
            )
    if not findings:
        findings.append(
            CHECK.finding(
                OK,
                f"the loader finds every library the shared objects of {checked} package(s) need",
            )
        )
    return findings


CHECK = Check(
    name="libraries",
    area="cuda",
    summary="every library (DT_NEEDED) of the packages' CUDA code found by the dynamic loader",
    run=run,
    manual=WHOSE,
)
