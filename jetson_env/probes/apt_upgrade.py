"""What apt says a JetPack upgrade within an L4T line changes, and the holds that block it.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). NVIDIA's Jetson
repository is the apt source whose suite is an L4T release line (r36.4, r36.5 ...), in
NVIDIA's one-line file or a deb822 .sources file. NVIDIA's upgrade within a major release
is: change that suite to the new one, `apt update`, `apt dist-upgrade`. Here it is
simulated without touching apt's own state: in a private temporary folder (removed at the
end) the new suite's index is fetched into lists of its own, the host's other lists are
linked beside it, and `apt-get -s dist-upgrade` reads them with no package cache written
and no lock taken. ARGUMENTS = {"suite": "r36.5"} asks for the simulation; without it only
the configured source and the holds (`apt-mark showhold`) are read. collect() returns a dict.
"""

import glob
import os
import re
import shutil
import tempfile

if "run_command" not in globals():  # imported, not sent after the prelude: the prelude's own
    from jetson_env.probes._prelude import run_command

SOURCES = "/etc/apt/sources.list"
SOURCE_PARTS = "/etc/apt/sources.list.d"
LISTS = "/var/lib/apt/lists"
SUITE = re.compile(r"^r\d+\.\d+$")
LIST_OF_SUITE = re.compile(r"_dists_r\d+\.\d+_")
UPDATE_SECONDS = 150
SIMULATE_SECONDS = 60
INST = re.compile(r"^Inst (\S+) (?:\[(\S+)\] )?\((\S+)")
REMV = re.compile(r"^Remv (\S+)(?: \[(\S+)\])?")


def _arguments():
    arguments = globals().get("ARGUMENTS")
    return arguments if isinstance(arguments, dict) else {}


def _apt(argv, timeout):
    """apt in the C locale: its messages are matched in English."""
    return run_command(argv, timeout, env=dict(os.environ, LC_ALL="C"))


def _one_line_entries(path, text):
    entries, others = [], []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        options = ""
        if len(words) > 1 and words[1].startswith("["):
            end = next((i for i, w in enumerate(words) if w.endswith("]")), None)
            if end is None:
                others.append(line)
                continue
            options = " ".join(words[1 : end + 1])
            words = [words[0], *words[end + 1 :]]
        if len(words) >= 4 and words[0] == "deb" and SUITE.match(words[2]):
            entries.append({"file": path, "uri": words[1], "suite": words[2],
                            "components": words[3:], "options": options})  # fmt: skip
        else:
            others.append(line)
    return entries, "\n".join(others) + "\n"


def _deb822_entries(path, text):
    entries, others = [], []
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        for line in stanza.splitlines():
            if ":" in line and not line.startswith((" ", "\t", "#")):
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
        suites = fields.get("suites", "").split()
        if "deb" in fields.get("types", "").split() and suites and all(map(SUITE.match, suites)):
            signed = fields.get("signed-by", "")
            options = "[signed-by=%s]" % signed if signed and "\n" not in signed else ""
            for uri in fields.get("uris", "").split():
                entries.append({"file": path, "uri": uri, "suite": suites[0],
                                "components": fields.get("components", "").split(),
                                "options": options})  # fmt: skip
        else:
            others.append(stanza)
    return entries, "\n\n".join(others) + "\n"


def sources():
    """(NVIDIA's entries, {file: its other entries' text}, problems)."""
    parts = glob.glob(os.path.join(SOURCE_PARTS, "*.list"))
    files = [SOURCES, *sorted(parts + glob.glob(os.path.join(SOURCE_PARTS, "*.sources")))]
    entries, rest, problems = [], {}, []
    for path in files:
        if not os.path.isfile(path):
            continue
        try:
            text = read_text(path)  # noqa: F821
        except (OSError, ValueError) as exc:
            problems.append("%s: %s" % (path, describe(exc)))
            continue
        read = _deb822_entries if path.endswith(".sources") else _one_line_entries
        found, others = read(path, text)
        entries.extend(found)
        rest[path] = others
    return entries, rest, problems


def holds():
    no_cache = ["-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache="]
    done, error = _apt(["apt-mark", "showhold", *no_cache], 30)
    if done is None:
        return None, error
    if done.returncode != 0:
        return None, "apt-mark showhold exited %d: %s" % (
            done.returncode, done.stderr.strip()[-300:])  # fmt: skip
    return sorted(done.stdout.split()), None


def parse_simulation(text):
    """apt-get -s's plan: installs/upgrades, removals and what it keeps back."""
    changes, kept, in_kept = [], [], False
    for line in text.splitlines():
        inst, remv = INST.match(line), REMV.match(line)
        if inst:
            changes.append({"package": inst.group(1), "from": inst.group(2),
                            "to": inst.group(3), "action": "upgrade" if inst.group(2)
                            else "install"})  # fmt: skip
        elif remv:
            changes.append({"package": remv.group(1), "from": remv.group(2), "to": None,
                            "action": "remove"})  # fmt: skip
        if line.startswith("The following packages have been kept back") or line.startswith(
            "The following held packages will be changed"
        ):
            in_kept = True
            continue
        if in_kept:
            if line.startswith("  "):
                kept.extend(line.split())
            else:
                in_kept = False
    return changes, sorted(set(kept))


def _apt_options(source_list, parts, lists, folder):
    return ["-o", "Dir::Etc::SourceList=" + source_list, "-o", "Dir::Etc::SourceParts=" + parts,
            "-o", "Dir::State::Lists=" + lists, "-o", "Dir::Cache=" + folder,
            "-o", "Dir::Log=" + folder,
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=",
            "-o", "APT::Sandbox::User=root", "-o", "Debug::NoLocking=true",
            "-o", "Acquire::Retries=0"]  # fmt: skip


def simulate(suite, entries, rest):
    """The upgrade to `suite`, in a private folder."""
    folder = tempfile.mkdtemp(prefix="jetson-env-plan-")
    try:
        parts, new, merged = (os.path.join(folder, n) for n in ("parts", "new", "merged"))
        for path in (parts, os.path.join(new, "partial"), os.path.join(merged, "partial")):
            os.makedirs(path)
        empty = os.path.join(folder, "empty.list")
        lines = ["deb %s%s %s %s" % (e["options"] + " " if e["options"] else "", e["uri"], suite,
                                     " ".join(e["components"])) for e in entries]  # fmt: skip
        target = os.path.join(parts, "jetson-env-plan-target.list")
        with open(target, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        with open(empty, "w"):
            pass
        only_target = os.path.join(folder, "only-target")
        os.makedirs(only_target)
        options = _apt_options(target, only_target, new, folder)
        done, error = _apt(["apt-get", "update", "-q", *options], UPDATE_SECONDS)
        if done is None:
            return {"ok": False, "error": "apt-get update of %s: %s" % (suite, error)}
        said = done.stdout + done.stderr
        failed = [line for line in said.splitlines() if line.startswith(("E:", "W:", "Err:"))]
        if done.returncode != 0 or any(line.startswith(("E:", "Err:")) for line in failed):
            return {"ok": False, "error": "apt-get update of %s: %s" % (
                suite, " / ".join(failed[-3:]) or "exited %d" % done.returncode)}  # fmt: skip
        for path, text in rest.items():
            with open(os.path.join(parts, "host-" + os.path.basename(path)), "w") as handle:
                handle.write(text)
        for name in os.listdir(LISTS) if os.path.isdir(LISTS) else []:
            source = os.path.join(LISTS, name)
            if os.path.isfile(source) and name != "lock" and not LIST_OF_SUITE.search(name):
                os.symlink(source, os.path.join(merged, name))
        for name in os.listdir(new):
            if name not in ("lock", "partial"):
                os.symlink(os.path.join(new, name), os.path.join(merged, name))
        options = _apt_options(empty, parts, merged, folder)
        done, error = _apt(["apt-get", "-s", "-q", "dist-upgrade", *options], SIMULATE_SECONDS)
        if done is None:
            return {"ok": False, "error": "apt-get -s dist-upgrade: %s" % error}
        changes, kept = parse_simulation(done.stdout)
        errors = [line[3:].strip() for line in done.stderr.splitlines()
                  if line.startswith("E:")]  # fmt: skip
        error = None
        if done.returncode != 0:
            error = " / ".join(errors) or "apt-get -s dist-upgrade exited %d" % done.returncode
        return {"ok": error is None, "error": error, "changes": changes, "kept_back": kept}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def collect():
    entries, rest, problems = sources()
    held, holds_error = holds()
    suite = _arguments().get("suite")
    if not shutil.which("apt-get"):
        simulation = {"skipped": "apt-get is not on the host"}
    elif not entries:
        simulation = {"skipped": "NVIDIA's Jetson apt repository is not configured (no apt "
                                 "source whose suite is an L4T line like r36.4)"}  # fmt: skip
    elif not suite:
        simulation = {"skipped": "no target suite asked for"}
    elif any(e["suite"].split(".")[0] != str(suite).split(".")[0] for e in entries):
        simulation = {"skipped": "%s is another major release than the configured %s: apt does "
                      "not upgrade across lines" % (suite, entries[0]["suite"])}  # fmt: skip
    else:
        simulation = simulate(str(suite), entries, rest)
    return {
        "configured": entries,
        "problems": problems,
        "holds": held,
        "holds_error": holds_error,
        "simulation": simulation,
    }
