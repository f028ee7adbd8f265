"""Docker: engine reachable, nvidia runtime registered (the default on Jetson, so that
`docker build` sees CUDA) by the engine and in daemon.json (read even where no engine
answers), on JetPack 4 the CSV mount lists the docker_runtime role requires, with
every listed host file present, and the local images built on a base that no longer runs on
the host's release (an -igpu image on JetPack 7). Paths and packages are the docker_runtime
role's."""

from __future__ import annotations

import json
import shlex

from jetson_env import roles
from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy


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


def daemon_json_merge(facts: Facts, restart: bool) -> Remedy:
    """The docker_runtime role's merge: the nvidia runtime (the default one on Jetson) into
    daemon.json, its other keys kept, the old file kept as a backup; then a restart where
    the engine runs."""
    path = roles.default("docker_runtime", "daemon_json")
    runtime = {"path": roles.default("docker_runtime", "nvidia_runtime_path"), "runtimeArgs": []}
    script = (
        "import json, os, sys; p = sys.argv[1]; "
        "c = json.load(open(p)) if os.path.exists(p) else {}; "
        f'c.setdefault("runtimes", {{}})["nvidia"] = {json.dumps(runtime)}; '
        + ('c["default-runtime"] = "nvidia"; ' if facts.is_jetson else "")
        + 'open(p, "w").write(json.dumps(c, indent=2) + "\\n")'
    )
    quoted = shlex.quote(path)
    shell = " && ".join([
        facts.sudo(f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0])}"),
        f"{{ [ ! -e {quoted} ] || {facts.sudo(f'cp -p {quoted} {quoted}.bak')}; }}",
        facts.sudo(f"{shlex.quote(facts.python)} -c {shlex.quote(script)} {quoted}"),
        *([engine_command(facts, "restart")] if restart else []),
    ])  # fmt: skip
    return Remedy(shell, "docker_runtime", gpu=True)


RUNTIME = "nvidia-container-runtime"


def runtime_install(facts: Facts, then: Remedy | None = None) -> Remedy:
    """What installs NVIDIA's container runtime: the docker_runtime role with its packages on
    (docker_runtime_install_packages, off by default) naming the family's runtime package
    (from NVIDIA's apt repository; a list, so that it adds to another finding's packages),
    then `then` (the daemon.json merge) where the runtime is to be registered too."""
    package = "nvidia-docker2" if facts.is_jetson else "nvidia-container-toolkit"
    shell = facts.apt_install(package) + (f" && {then.shell}" if then else "")
    return Remedy(shell, "docker_runtime", (("docker_runtime_install_packages", True),
                                            ("docker_runtime_packages", [package])),
                  gpu=True)  # fmt: skip


def daemon_json_findings(facts: Facts, data: dict, restart: bool) -> list[Finding]:
    """daemon.json as written, whether or not an engine reads it now."""
    daemon = data.get("daemon_json") or {}
    if not daemon.get("exists") and data.get("cli") is None:
        return []  # no Docker here: nothing to configure
    path = roles.default("docker_runtime", "daemon_json")
    exists = daemon.get("exists")
    config = daemon.get("config", {}) if exists else {}
    error = (daemon.get("error") if exists else None) or (
        None if isinstance(config, dict) else "not a JSON object"
    )
    if error:
        remedy = Remedy(f"fix or remove {path} (the playbook leaves it as it is)",
                        why="the playbook never replaces a daemon.json it cannot read",
                        prose=True)  # fmt: skip
        return [CHECK.finding(FAIL, f"{path}: {error}", remedy=remedy)]
    registered = "nvidia" in (config.get("runtimes") or {})
    default = config.get("default-runtime") == "nvidia"
    installed = data.get("nvidia_container_runtime") is not None
    if registered and not installed:
        return [CHECK.finding(
            FAIL if facts.is_jetson else WARN,
            f"{path} registers the nvidia runtime, but {RUNTIME} is not installed: "
            "`docker run --runtime nvidia` fails",
            remedy=runtime_install(facts),
        )]  # fmt: skip
    if registered and (default or not facts.is_jetson):
        return [CHECK.finding(OK, f"{path} registers the nvidia runtime"
                              + (" as the default" if default else ""))]  # fmt: skip
    summary = (
        f"{path} makes nvidia the default runtime"
        if registered
        else f"{path} {'does not register' if exists else 'is missing, so nothing registers'}"
        " the nvidia runtime"
    )
    problem = (
        "containers will not see the GPU" if not registered else "`docker build` will not see CUDA"
    )
    merge = daemon_json_merge(facts, restart)
    return [
        CHECK.finding(
            FAIL if facts.is_jetson and not registered else WARN,
            f"{summary}: {problem}",
            remedy=merge if installed else runtime_install(facts, merge),
        )
    ]


def csv_findings(facts: Facts, lists: list[dict] | None) -> list[Finding]:
    """JetPack 4: the CSV mount lists the docker_runtime role requires, each listed file present."""
    release = facts.release
    if not facts.is_jetson or release is None or release.family != "r32":
        return []
    csv_dir = roles.default("docker_runtime", "csv_dir")
    packages = roles.default("docker_runtime", "csv_packages")
    present = {entry["file"].rsplit("/", 1)[-1] for entry in lists or []}
    missing = [name for name in roles.default("docker_runtime", "csv_files") if name not in present]
    installable = [packages[name] for name in missing if name in packages]
    findings = []
    if installable:
        findings.append(CHECK.finding(
            FAIL,
            f"JetPack 4: {', '.join(n for n in missing if n in packages)} missing in {csv_dir}: "
            "containers will not see what they list (CUDA, cuDNN, TensorRT)",
            remedy=Remedy(facts.apt_install(*installable), "docker_runtime", (
                ("docker_runtime_install_packages", True),
                ("docker_runtime_packages", installable))),
        ))  # fmt: skip
    for name in missing:
        if name not in packages:
            findings.append(CHECK.finding(
                FAIL,
                f"JetPack 4: {name} missing in {csv_dir}: containers will not see L4T's libraries",
                remedy=Remedy(f"{name} comes with L4T itself (the BSP's nv_tegra/config.tbz2), "
                              "not with a package: restore it from the BSP of this L4T release",
                              why="it is the board support package's, not a package's", prose=True),
            ))  # fmt: skip
    for entry in lists or []:
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
                    remedy=Remedy(
                        facts.sudo(f"apt-get install --reinstall -y {package}"),
                        why="a reinstall of what JetPack installed (the role installs a "
                        "missing list only)",
                        note=f"reinstalls what {name} lists, or the list itself if it is stale",
                    ),
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
                # The role installs its platform family's packages (its vars/jetson.yml).
                remedy=Remedy(
                    facts.apt_install("docker.io", "nvidia-container-toolkit"),
                    "docker_runtime",
                    (("docker_runtime_install_packages", True),),
                )
                if facts.is_jetson
                else None,
            )
        )
    elif not engine or not engine.get("reachable"):
        error = (engine or {}).get("error") or ""
        remedy = (
            Remedy(facts.sudo("usermod -aG docker $USER"),
                   why="group membership is the user's account",
                   note="then log in again: a new group counts from the next login")
            if "permission denied" in error
            else Remedy(engine_command(facts, "start"),
                        why="the role restarts an engine it configured; starting a stopped "
                        "one is the service manager's")
        )  # fmt: skip
        findings.append(CHECK.finding(WARN, "the Docker engine does not answer", [error], remedy))
    else:
        runtimes = engine.get("runtimes") or []
        default = engine.get("default_runtime")
        summary = f"Docker {engine.get('server_version')}, runtimes {', '.join(runtimes)}"
        merge = daemon_json_merge(facts, restart=True)
        installed = data.get("nvidia_container_runtime") is not None
        if not installed:
            merge = runtime_install(facts, merge)
        if "nvidia" in runtimes and not installed:
            findings.append(CHECK.finding(
                FAIL if facts.is_jetson else WARN,
                f"{summary}: the engine lists the nvidia runtime, but {RUNTIME} is not "
                "installed: `docker run --runtime nvidia` fails",
                remedy=runtime_install(facts),
            ))  # fmt: skip
        elif "nvidia" not in runtimes:
            findings.append(CHECK.finding(
                FAIL if facts.is_jetson else WARN,
                f"{summary}: the nvidia runtime is not registered",
                remedy=merge,
            ))  # fmt: skip
        elif facts.is_jetson and default != "nvidia":
            findings.append(CHECK.finding(
                WARN,
                f"{summary}; default runtime {default}: `docker build` will not see CUDA",
                remedy=merge,
            ))  # fmt: skip
        else:
            findings.append(CHECK.finding(OK, f"{summary}; default {default}"))
    reachable = bool(engine and engine.get("reachable"))
    return (
        findings
        + image_findings(facts, data.get("images"))
        + daemon_json_findings(facts, data, restart=reachable)
        + csv_findings(facts, data.get("csv_lists"))
    )


def image_name(image: dict) -> str:
    tags = [tag for tag in image.get("tags") or () if "<none>" not in tag]
    return tags[0] if tags else str(image.get("id", "?"))[:19]


def image_findings(facts: Facts, listed: dict | None) -> list[Finding]:
    """Local images built on a base that no longer runs on this Jetson's release (an -igpu
    image on JetPack 7: the matrix's container_bases), read from their tags, labels and
    history without running them; each with what to use instead."""
    l4t = (facts.platform or {}).get("l4t") if facts.is_jetson else None
    if not l4t or not listed:
        return []
    findings = [
        CHECK.finding(WARN, f"image {image_name(image)} will not run on L4T R{l4t}: {problem}")
        for image in listed.get("images") or []
        for problem in facts.matrix.container_base_problems(l4t, image)
    ]
    if listed.get("left_out"):
        findings.append(CHECK.finding(
            SKIP, f"{listed['left_out']} more local images were not read for their bases"
        ))  # fmt: skip
    return findings


CHECK = Check(
    name="docker",
    area="docker",
    summary="Docker engine, nvidia runtime (default on Jetson), JetPack 4 CSV mount lists",
    run=run,
)
