"""Docker: engine reachable, nvidia runtime registered (the default on Jetson, so that
`docker build` sees CUDA), and on JetPack 4 the CSV mount lists with every listed host
file present."""

from __future__ import annotations

import shlex

from jetson_env import roles
from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy

DEFAULT_RUNTIME_REMEDY = (
    'merge \'"default-runtime": "nvidia"\' into {daemon_json} (keep its other keys), then {restart}'
)


def engine_command(facts: Facts, action: str) -> str:
    """Start or restart dockerd the way this host starts services: systemctl only where
    systemd runs, the init script where there is one, else dockerd itself (a container)."""
    manager = facts.data("docker").get("service_manager")
    if manager == "systemd":
        return facts.sudo(f"systemctl {action} docker")
    if manager == "service":
        return facts.sudo(f"service docker {action}")
    start = "nohup dockerd >/var/log/dockerd.log 2>&1 &"
    if action == "restart":
        start = f"kill $(cat /var/run/docker.pid); sleep 3; {start}"
    return facts.sudo(f"sh -c {shlex.quote(start)}")


def csv_findings(facts: Facts, lists: list[dict] | None) -> list[Finding]:
    release = facts.release
    if not facts.is_jetson or release is None or release.family != "r32":
        return []
    if not lists:
        return [
            CHECK.finding(
                FAIL,
                "JetPack 4: no CSV mount lists: containers will not see CUDA, cuDNN or TensorRT",
                remedy=Remedy(facts.apt_install(
                    "nvidia-container-csv-cuda", "nvidia-container-csv-cudnn",
                    "nvidia-container-csv-tensorrt",
                ), "docker_runtime"),
            )
        ]  # fmt: skip
    findings = []
    for entry in lists:
        name = entry["file"].rsplit("/", 1)[-1]
        if entry.get("error"):
            findings.append(CHECK.finding(FAIL, f"{name}: unreadable", [entry["error"]]))
            continue
        missing = entry.get("missing") or []
        bad = entry.get("bad") or []
        if missing:
            package = f"nvidia-container-csv-{name[:-4]}"
            findings.append(
                CHECK.finding(
                    FAIL,
                    f"{name}: {len(missing)} of {entry['entries']} listed host files are missing: "
                    "GPU containers fail to start",
                    [f"{m['kind']}, {m['path']}" for m in missing[:10]]
                    + (["..."] if len(missing) > 10 else []),
                    remedy=f"reinstall what {name} lists, or the list itself if it is stale: "
                    + facts.sudo(f"apt-get install --reinstall -y {package}"),
                )
            )
        elif bad:
            findings.append(
                CHECK.finding(
                    WARN,
                    f"{name}: {len(bad)} lines are not '<lib|sym|dir|dev>, /path'",
                    [f"line {b['line']}: {b['text']}" for b in bad[:10]],
                )
            )
        else:
            findings.append(
                CHECK.finding(OK, f"{name}: all {entry['entries']} listed host files exist")
            )
    return findings


def run(facts: Facts) -> list[Finding]:
    data = facts.data("docker")
    findings = []
    engine = data.get("engine")
    if data.get("cli") is None:
        findings.append(
            CHECK.finding(
                WARN if facts.is_jetson else SKIP,
                "docker is not installed (needed only for container builds)",
                remedy=facts.apt_install("docker.io", "nvidia-container-toolkit")
                if facts.is_jetson
                else None,
            )
        )
    elif not engine or not engine.get("reachable"):
        error = (engine or {}).get("error") or ""
        remedy = (
            facts.sudo("usermod -aG docker $USER") + " (then log in again)"
            if "permission denied" in error
            else engine_command(facts, "start")
        )
        findings.append(CHECK.finding(WARN, "the Docker engine does not answer", [error], remedy))
    else:
        runtimes = engine.get("runtimes") or []
        default = engine.get("default_runtime")
        summary = f"Docker {engine.get('server_version')}, runtimes {', '.join(runtimes)}"
        restart = engine_command(facts, "restart")
        if "nvidia" not in runtimes:
            findings.append(
                CHECK.finding(
                    FAIL if facts.is_jetson else WARN,
                    f"{summary}: the nvidia runtime is not registered",
                    remedy=Remedy(
                        facts.apt_install("nvidia-container-toolkit")
                        + " && "
                        + facts.sudo("nvidia-ctk runtime configure --runtime=docker")
                        + f" && {restart}",
                        "docker_runtime",
                    ),
                )
            )
        elif facts.is_jetson and default != "nvidia":
            findings.append(
                CHECK.finding(
                    WARN,
                    f"{summary}; default runtime {default}: `docker build` will not see CUDA",
                    remedy=Remedy(
                        DEFAULT_RUNTIME_REMEDY.format(
                            daemon_json=roles.default("docker_runtime", "daemon_json"),
                            restart=restart,
                        ),
                        "docker_runtime",
                        (("docker_runtime_default_nvidia", True),),
                    ),
                )
            )
        else:
            findings.append(CHECK.finding(OK, f"{summary}; default {default}"))
    return findings + csv_findings(facts, data.get("csv_lists"))


CHECK = Check(
    name="docker",
    area="docker",
    summary="Docker engine, nvidia runtime (default on Jetson), JetPack 4 CSV mount lists",
    probes=("docker",),
    run=run,
)
