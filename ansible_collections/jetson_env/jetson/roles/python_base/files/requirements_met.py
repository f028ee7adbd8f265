# Prints the requirements (JSON list in argv[1]) the installed distributions do not meet.
# Runs in the target's Python (3.6+), which may be a venv without setuptools (no
# pkg_resources: Python 3.12's venvs, and many others): requirements are parsed with
# `packaging`, else pip's own copy of it, and versions read from the installed metadata.
# With neither (no pip yet: python_base installs it from apt first, so only --check meets
# this), a requirement with a version specifier counts as unmet.
import json
import re
import sys

try:
    from packaging.requirements import Requirement
except ImportError:
    try:
        from pip._vendor.packaging.requirements import Requirement
    except ImportError:
        Requirement = None


def installed_version(name):
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python 3.6 and 3.7: pkg_resources (setuptools) is there
        import pkg_resources

        try:
            return pkg_resources.get_distribution(name).version
        except pkg_resources.DistributionNotFound:
            return None
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def met(line):
    if Requirement is None:
        name = re.match(r"[A-Za-z0-9._-]+", line).group(0)
        return installed_version(name) is not None and line.strip() == name
    requirement = Requirement(line)
    found = installed_version(requirement.name)
    return found is not None and requirement.specifier.contains(found, prereleases=True)


print(json.dumps([line for line in json.loads(sys.argv[1]) if not met(line)]))
