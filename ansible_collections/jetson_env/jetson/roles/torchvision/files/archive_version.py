"""Print version.txt of a pytorch/vision source archive (tar.gz with one top folder).

Runs on the controller before any host changes; exits 1 with a message when the archive
has no <top>/version.txt.
"""

import sys
import tarfile

with tarfile.open(sys.argv[1]) as archive:
    top = archive.next().name.split("/")[0]
    try:
        member = archive.extractfile(top + "/version.txt")
    except KeyError:
        member = None
    if member is None:
        sys.exit(
            "%s has no %s/version.txt: not a pytorch/vision source archive" % (sys.argv[1], top)
        )
    print(member.read().decode().strip())
