# Prints the requirements (JSON list in argv[1]) the installed distributions do not meet.
# Runs in the target's Python (3.6+); pkg_resources parses specifiers on every release.
import json
import sys

import pkg_resources

unmet = []
for line in json.loads(sys.argv[1]):
    requirement = pkg_resources.Requirement.parse(line)
    try:
        installed = pkg_resources.get_distribution(requirement.project_name)
    except pkg_resources.DistributionNotFound:
        installed = None
    if installed is None or installed not in requirement:
        unmet.append(line)
print(json.dumps(unmet))
