# The bindings' wheels of an unpacked tarball and the role's files, in one run of the target
# Python (read-only, stdlib, Python 3.6+): argv[1] is the wheels' glob ("" for none), the
# rest are files.
# A file's state is what ansible.builtin.copy would set; the role copies only where it differs.
import glob
import hashlib
import json
import os
import stat
import sys


def state(path):
    try:
        info = os.lstat(path)
        with open(path, "rb") as handle:
            digest = hashlib.sha1(handle.read()).hexdigest()
    except OSError:
        return None
    return {
        "regular": stat.S_ISREG(info.st_mode),
        "sha1": digest,
        "uid": info.st_uid,
        "gid": info.st_gid,
        "mode": "%04o" % stat.S_IMODE(info.st_mode),
    }


print(
    json.dumps(
        {
            "wheels": sorted(glob.glob(sys.argv[1])),
            "files": dict((path, state(path)) for path in sys.argv[2:]),
        }
    )
)
