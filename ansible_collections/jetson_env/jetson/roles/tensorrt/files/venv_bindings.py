# JetPack's TensorRT bindings (the python3-libnvinfer package, built for the system Python) made
# importable in the venv that runs this script: links to the package's top-level entries under
# its dist-packages (tensorrt and its metadata) in LINKS_DIR, which <site-packages>/PTH_NAME
# lists. argv: LINKS_DIR PTH_NAME [--check]; --check changes nothing. Prints JSON: "changed",
# "pth", "links" (name -> target), "note", "error". Runs in the target's Python (3.6+).
import json
import os
import subprocess
import sys
import sysconfig

links_dir, pth_name = sys.argv[1], sys.argv[2]
check = "--check" in sys.argv[3:]
pth = os.path.join(sysconfig.get_paths()["purelib"], pth_name)


def done(changed=False, links=None, note=None, error=None):
    print(
        json.dumps(
            {"changed": changed, "pth": pth, "links": links or {}, "note": note, "error": error}
        )
    )
    sys.exit(0)


listed = subprocess.run(
    ["dpkg-query", "-L", "python3-libnvinfer"],
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    universal_newlines=True,
)
paths = listed.stdout.splitlines() if listed.returncode == 0 else []
inits = [p for p in paths if p.endswith("/tensorrt/__init__.py")]
if not inits:
    why = (
        "python3-libnvinfer is not installed"
        if listed.returncode
        else ("python3-libnvinfer has no tensorrt/__init__.py")
    )
    if check:  # apt would install it first
        done(True, note=why + " yet: the venv is linked to it after apt installs it")
    done(error=why)
dist = os.path.dirname(os.path.dirname(inits[0]))
folder = os.path.basename(os.path.dirname(dist))  # python3.10, or python3 (any 3.x)
mine = "python%d.%d" % sys.version_info[:2]
if folder not in ("python3", mine):
    done(
        error="JetPack's bindings in %s are built for %s, and %s is Python %s: make the venv "
        "with /usr/bin/python3 (%s)" % (dist, folder, sys.executable, mine[6:], folder)
    )
names = sorted({p[len(dist) + 1 :].split("/")[0] for p in paths if p.startswith(dist + "/")})
links = dict((name, os.path.join(dist, name)) for name in names)
present = dict(
    (n, os.readlink(os.path.join(links_dir, n)))
    for n in (os.listdir(links_dir) if os.path.isdir(links_dir) else [])
    if os.path.islink(os.path.join(links_dir, n))
)
try:
    with open(pth) as handle:
        listed_dir = handle.read()
except (IOError, OSError):
    listed_dir = None
changed = present != links or listed_dir != links_dir + "\n"
if changed and not check:
    if not os.path.isdir(links_dir):
        os.makedirs(links_dir, 0o755)
    for name in present:
        if name not in links:
            os.unlink(os.path.join(links_dir, name))
    for name, target in links.items():
        if present.get(name) != target:
            if name in present:
                os.unlink(os.path.join(links_dir, name))
            os.symlink(target, os.path.join(links_dir, name))
    with open(pth, "w") as handle:
        handle.write(links_dir + "\n")
done(changed, links)
