# Prints the requirements (JSON list in argv[1]) the installed distributions do not meet.
# Runs in the target's Python (3.6+), which may be a venv without setuptools (no
# pkg_resources: Python 3.12's venvs, and many others): requirements are parsed with
# `packaging`, else pip's own copy of it, and versions read from the installed metadata.
import json
import sys

try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement


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


unmet = []
for line in json.loads(sys.argv[1]):
    requirement = Requirement(line)
    found = installed_version(requirement.name)
    if found is None or not requirement.specifier.contains(found, prereleases=True):
        unmet.append(line)
print(json.dumps(unmet))
