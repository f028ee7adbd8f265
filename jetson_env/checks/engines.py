"""Engine files (`doctor --engines DIR`): does each engine under the folders load here?

Reads the engines probe (each file's TensorRT from its header or sidecar; the compute
capability and compatibility settings from a sidecar) and this host's TensorRT (the loader's
libnvinfer) and compute capability, and asks jetson_env.engine_files.verdict, the rule that
`plan --engines` and the portability check use. One finding per engine file: ok "loads
here", fail "rebuild: ...", warn "unknown: why". rows() is the same, as data (the report's
"engines", docs/json.md). A rebuild is the engine's maker's, on the host it runs on: no role
does it, so `--fix` names each such engine and how it is rebuilt, and changes nothing for it.
A folder the user named that the host does not have is a failure of its own (a typo must
not pass a gate on the exit code); on this machine the command refuses it before any probe
(commands.options.missing_folder).
"""

from __future__ import annotations

from typing import Any

from jetson_env import engine_files, installed
from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy

STATUS = {engine_files.LOADS: OK, engine_files.REBUILD: FAIL, engine_files.UNKNOWN: WARN}
REBUILD = ("rebuild it on this host with the tool that built it (`trtexec --onnx=MODEL.onnx "
           "--saveEngine=FILE`, Ultralytics' `yolo export model=MODEL.pt format=engine`, your "
           "own script)")  # fmt: skip
REMEDIES = {
    engine_files.REBUILD: REBUILD,
    engine_files.UNKNOWN: REBUILD.replace("rebuild it", "to be sure, rebuild it", 1)
    + ", or keep beside it the sidecar FILE.json that says which TensorRT and compute "
    "capability built it (docs/doctor.md, Engine files)",
}

# --engines names a folder on the host checked (--host, each host of -i), not on this machine.
NO_FOLDER = Remedy(
    "give --engines the folder as it is on that host: the path is looked up there, not on the "
    "machine jetson-env runs on (`ls -d DIR` on the host shows whether it is there)",
    why="the folder and its engines are the user's: no role makes them",
    prose=True,
)


def rows(engines: dict[str, Any], tensorrt: str | None, capability: str | None) -> list[dict]:
    """Per engine file (and per limit that hid some): its verdict, worst first."""
    found = []
    for engine in _listed(engines.get("engines")):
        if not isinstance(engine, dict):  # what a host sent is data: an odd entry is unknown
            engine = {"path": engine, "unknown": "the engines probe printed no record for it"}
        engine = {key: _said(value) for key, value in engine.items()}
        verdict, reason = engine_files.verdict(engine, tensorrt, capability)
        found.append({"path": str(engine.get("path")), "verdict": verdict, "reason": reason,
                      "tensorrt": engine.get("tensorrt"), "source": engine.get("source"),
                      "layout": engine.get("layout"),
                      "compute_capability": engine.get("compute_capability"),
                      "hardware_compatibility": engine.get("hardware_compatibility"),
                      "version_compatible": engine.get("version_compatible")})  # fmt: skip
    hidden = []
    if engines.get("left_out"):
        hidden.append((f"{engines['left_out']} more engines", f"past the first "
                       f"{engines.get('max_engines')}: counted, not read; give narrower "
                       "--engines folders"))  # fmt: skip
    if engines.get("truncated"):
        hidden.append(("engines not searched", f"the search stopped after "
                       f"{engines.get('max_entries')} directory entries; give narrower "
                       "--engines folders"))  # fmt: skip
    found += [{"path": path, "verdict": engine_files.UNKNOWN, "reason": f"unknown: {why}",
               "tensorrt": None, "source": None, "layout": None, "compute_capability": None,
               "hardware_compatibility": None, "version_compatible": None}
              for path, why in hidden]  # fmt: skip
    return sorted(found, key=lambda row: engine_files.VERDICTS.index(row["verdict"]))


def missing_folders(engines: dict[str, Any]) -> list[Finding]:
    """A failure per --engines folder the host does not have (the engines probe's "missing")."""
    return [CHECK.finding(FAIL, f"--engines {_said(folder)}: no such folder on this host",
                          remedy=NO_FOLDER)
            for folder in _listed(engines.get("missing"))]  # fmt: skip


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _said(value: Any) -> Any:
    """A field of an engine's record as the verdict reads it: a text, a yes/no or None; any
    other shape a host (or a sidecar it read) sent is shown as text."""
    return value if value is None or isinstance(value, (str, bool)) else str(value)


def host_tensorrt(tensorrt: dict[str, Any] | None) -> str | None:
    """This host's TensorRT: the libnvinfer the loader finds (the tensorrt probe's data)."""
    loaded = tensorrt.get("loaded") if isinstance(tensorrt, dict) else None
    version = loaded.get("version") if isinstance(loaded, dict) else None
    return version if isinstance(version, str) else None


def run(facts: Facts) -> list[Finding]:
    engines = facts.data("engines")
    if not engines.get("folders"):
        give = installed.command("jetson-env doctor --engines DIR")
        return [CHECK.finding(SKIP, f"no engine folders given: `{give}`")]
    missing = missing_folders(engines)
    found = rows(engines, host_tensorrt(facts.data("tensorrt")), facts.compute_capability)
    if not found and not missing:
        where = ", ".join(engines["folders"])
        return [CHECK.finding(SKIP, f"no .engine, .plan or .trt file under {where}")]
    return missing + [CHECK.finding(STATUS[row["verdict"]], f"{row['path']}: {row['reason']}",
                                    remedy=REMEDIES.get(row["verdict"]))
                      for row in found]  # fmt: skip


CHECK = Check(
    name="engine-files",
    area="engine",
    summary="each engine file under --engines DIR: loads here, must be rebuilt, or unknown",
    run=run,
    manual="an engine is rebuilt by the tool that built it, on the GPU it runs on: no role of "
    "jetson-env rebuilds engine files",
)
