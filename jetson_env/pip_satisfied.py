"""Whether a role's pip requirements are already met by what the target Python has installed:
then pip is not asked at all, as ansible.builtin.pip does with state=present (a pip start and
its resolution, a second or more, on every run that changes nothing).

The installed distributions are read in the target Python in one call (READ_INSTALLED:
stdlib only, Python 3.6+; the dist-info and egg-info folders on its sys.path, the first one
found winning, as an import finds them) and compared here with packaging's specifiers, the
rule pip applies to an installed distribution (pre-releases included). What this rule cannot
decide as pip would goes to pip: a wheel file or URL, extras, a marker, an argument that
reinstalls, upgrades or installs elsewhere. Like ansible.builtin.pip, the installed
distributions' own dependencies are not looked at.
"""

from __future__ import annotations

import json

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# argv[1:]: canonical names; prints {name: version} for those installed (None: two versions
# in one folder, which pip is left to sort out).
READ_INSTALLED = r"""
import json, os, re, sys
wanted = set(sys.argv[1:])
found = {}
for entry in sys.path:
    try:
        folders = os.listdir(entry or ".")
    except OSError:
        continue
    here = {}
    for folder in folders:
        if not folder.endswith((".dist-info", ".egg-info")):
            continue
        name, _, rest = folder.rsplit(".", 1)[0].partition("-")
        name = re.sub(r"[-_.]+", "-", name).lower()
        if name in wanted and name not in found and rest:
            version = rest.split("-")[0]
            here[name] = version if here.get(name, version) == version else None
    found.update(here)
print(json.dumps(found))
"""
# pip arguments under which an installed distribution is not simply kept (or looked for
# elsewhere than the Python's own sys.path): pip decides.
PIP_DECIDES = ("-U", "--upgrade", "--force-reinstall", "-I", "--ignore-installed", "-e",
               "--editable", "-r", "--requirement", "-c", "--constraint", "-t", "--target",
               "--prefix", "--root", "--user")  # fmt: skip


def _requirements(names: list[str]) -> list[Requirement] | None:
    """The requirements this rule can decide, None where any one it cannot."""
    found = []
    for name in names:
        if "/" in name or name.endswith((".whl", ".tar.gz", ".zip")):
            return None
        try:
            requirement = Requirement(name)
        except InvalidRequirement:
            return None
        if requirement.url or requirement.extras or requirement.marker:
            return None
        found.append(requirement)
    return found


def read_argv(python: str, names: list[str], args: list[str]) -> list[str]:
    """The command that reads `names`' installed versions in `python`; [] where pip must be
    asked anyway (a requirement or an argument this rule does not decide)."""
    requirements = _requirements(list(names))
    decides = [arg for arg in args if arg in PIP_DECIDES or arg.split("=")[0] in PIP_DECIDES]
    if not requirements or decides:
        return []
    wanted = sorted({canonicalize_name(requirement.name) for requirement in requirements})
    return [python, "-c", READ_INSTALLED, *wanted]


def satisfied(names: list[str], read: str) -> list[str]:
    """["numpy 2.4.6", "termcolor 3.3.0"] where READ_INSTALLED's output `read` meets every
    requirement in `names`; [] where one is not met (or was not read)."""
    requirements = _requirements(list(names))
    try:
        installed = json.loads(read) if read else {}
    except ValueError:
        return []
    met = []
    for requirement in requirements or []:
        version = installed.get(canonicalize_name(requirement.name))
        try:
            if not version or not requirement.specifier.contains(Version(version), True):
                return []
        except InvalidVersion:
            return []
        met.append(f"{requirement.name} {version}")
    return met
