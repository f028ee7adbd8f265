"""Docker facts: CLI, engine, runtimes, daemon.json, and the JetPack 4 CSV mount lists.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). collect() returns a dict.

On JetPack 4 the NVIDIA container runtime mounts CUDA, cuDNN and TensorRT from the
host into containers as listed in /etc/nvidia-container-runtime/host-files-for-container.d/
*.csv, one "<lib|sym|dir|dev>, <absolute path>" per line. A listed file that
does not exist on the host breaks every GPU container, so each is checked here.
"""

import glob
import json
import os
import shutil
import subprocess

if "read_text" not in globals():  # imported here (the tests), not sent with the prelude
    from jetson_env.probes._prelude import read_text

DAEMON_JSON = "/etc/docker/daemon.json"
CSV_DIR = "/etc/nvidia-container-runtime/host-files-for-container.d"
KINDS = ("lib", "sym", "dir", "dev")


def parse_csv_list(text):
    """Lines "lib, /usr/lib/aarch64-linux-gnu/libnvinfer.so.7" -> [(kind, path)]; bad lines."""
    entries, bad = [], []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, sep, path = line.partition(",")
        kind, path = kind.strip(), path.strip()
        if not sep or kind not in KINDS or not path.startswith("/"):
            bad.append({"line": number, "text": line[:200]})
            continue
        entries.append((kind, path))
    return entries, bad


def csv_lists():
    if not os.path.isdir(CSV_DIR):
        return None
    lists = []
    for path in sorted(glob.glob(os.path.join(CSV_DIR, "*.csv"))):
        try:
            entries, bad = parse_csv_list(read_text(path))
        except (IOError, OSError, ValueError) as exc:
            lists.append({"file": path, "error": str(exc), "entries": 0, "missing": [], "bad": []})
            continue
        missing = [{"kind": k, "path": p} for k, p in entries if not os.path.lexists(p)]
        lists.append(
            {"file": path, "error": None, "entries": len(entries), "missing": missing, "bad": bad}
        )
    return lists


def daemon_json():
    try:
        text = read_text(DAEMON_JSON)
    except UnicodeDecodeError as exc:
        return {"exists": True, "error": "not UTF-8: %s" % exc}
    except (IOError, OSError) as exc:
        return {"exists": os.path.exists(DAEMON_JSON), "error": exc.strerror or str(exc)}
    try:
        return {"exists": True, "error": None, "config": json.loads(text or "{}")}
    except ValueError as exc:
        return {"exists": True, "error": "not valid JSON: %s" % exc}


def engine(cli):
    if cli is None:
        return None
    try:
        proc = subprocess.run(
            [cli, "info", "--format", "{{json .}}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        return {"reachable": False, "error": "docker info did not answer within 20s"}
    except OSError as exc:
        return {"reachable": False, "error": str(exc)}
    try:
        info = json.loads(proc.stdout or "null")
    except ValueError:
        info = None
    server_errors = (info or {}).get("ServerErrors") or []
    if proc.returncode != 0 or not isinstance(info, dict) or server_errors or not info.get("ID"):
        lines = proc.stderr.strip().splitlines() or server_errors or ["no output"]
        return {"reachable": False, "error": lines[-1][:300]}
    return {
        "reachable": True,
        "error": None,
        "server_version": info.get("ServerVersion"),
        "runtimes": sorted((info.get("Runtimes") or {}).keys()),
        "default_runtime": info.get("DefaultRuntime"),
    }


def service_manager():
    """What starts services here: systemd (running), an init script, or nothing (a container)."""
    if os.path.isdir("/run/systemd/system"):
        return "systemd"
    if os.path.exists("/etc/init.d/docker") and shutil.which("service"):
        return "service"
    return None


# Where dockerd finds the runtime daemon.json names by its bare name: its own PATH (a
# service's), which the doctor's session may not have (sudo's secure_path, a venv's PATH).
RUNTIME_PATH = os.pathsep.join(
    [
        os.environ.get("PATH", ""),
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ]
)


# The host's images read for the bases they were built on, without running one: labels and
# the history's instructions (an ARG or LABEL naming the FROM image), capped so that a host
# with many images answers in time.
MAX_IMAGES = 60
MAX_HISTORY = 80
MAX_TEXT = 400


def _docker(cli, *args):
    """stdout lines of a read-only docker command, or None where it fails."""
    try:
        proc = subprocess.run(
            [cli, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=15,
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    return proc.stdout.splitlines() if proc.returncode == 0 else None


def images(cli):
    """Each local image: its tags, labels and history instructions (texts cut at MAX_TEXT);
    `left_out`: images past MAX_IMAGES; None where the list cannot be read."""
    listed = _docker(
        cli, "image", "ls", "--no-trunc", "--format", "{{.ID}}\t{{.Repository}}:{{.Tag}}"
    )
    if listed is None:
        return None
    tags = {}
    for line in listed:
        image_id, _, ref = line.partition("\t")
        tags.setdefault(image_id, []).append(ref[:MAX_TEXT])
    found = []
    for image_id in sorted(tags)[:MAX_IMAGES]:
        labels = _docker(cli, "image", "inspect", "--format", "{{json .Config.Labels}}", image_id)
        history = _docker(cli, "history", "--no-trunc", "--format", "{{.CreatedBy}}", image_id)
        try:
            parsed = json.loads(labels[0]) if labels else None
        except ValueError:
            parsed = None
        found.append(
            {
                "id": image_id[:80],
                "tags": tags[image_id][:10],
                "labels": {
                    str(k)[:MAX_TEXT]: str(v)[:MAX_TEXT]
                    for k, v in sorted((parsed or {}).items())[:50]
                },
                "history": [text[:MAX_TEXT] for text in (history or [])[:MAX_HISTORY]],
            }
        )
    return {"images": found, "left_out": max(0, len(tags) - MAX_IMAGES)}


def collect():
    cli = shutil.which("docker")
    running = engine(cli)
    return {
        "cli": cli,
        "engine": running,
        "images": images(cli) if running and running.get("reachable") else None,
        "daemon_json": daemon_json(),
        "csv_dir": CSV_DIR,
        "csv_lists": csv_lists(),
        "nvidia_container_runtime": shutil.which("nvidia-container-runtime", path=RUNTIME_PATH),
        "service_manager": service_manager(),
    }
