#!/usr/bin/python
"""Whether apt has indexed every repository an apt source file lists.

apt's own freshness test (the apt module's cache_valid_time) looks at the age of the
cache as a whole: a source list added or restored minutes after any `apt-get update`,
or an emptied lists folder with a recent mtime, looks fresh although the repository was
never fetched, and its packages are then "not available". This module looks for each
repository's Release file instead.
"""

import os

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: apt_source_indexed
short_description: Whether apt's lists hold a current index of each repository in a source file
description:
  - Reads the C(deb) entries of a one-line style source list (C(.list)) or a deb822 one
    (C(.sources)) and looks in apt's lists folder for each repository's C(InRelease) or
    C(Release) file, named the way apt names them.
  - A repository counts as indexed when that file exists and was written after the source
    file last changed (its inode change time against the source file's modification time,
    because apt sets the file's modification time to the server's Last-Modified date).
  - Read-only; runs the same in check mode.
options:
  source_file:
    description: The apt source file.
    type: path
    required: true
  lists_dir:
    description: apt's lists folder.
    type: path
    default: /var/lib/apt/lists
"""

RETURN = r"""
indexed:
  description: Every repository of the file is indexed (false for a file without one).
  type: bool
  returned: always
repositories:
  description: Each repository, the Release file looked for, and whether it is current.
  type: list
  returned: always
"""

# apt's URItoFileName quotes these (and controls, space, non-ASCII) as %xx.
APT_QUOTED = set('\\|{}[]<>"^~_=!@#$%&*')


def uri_to_filename(uri):
    """apt's name in its lists folder for a URI: no scheme or credentials, '/' -> '_'."""
    rest = uri.split("://", 1)[-1]
    host, slash, path = rest.partition("/")
    host = host.rpartition("@")[2]
    quoted = "".join(
        f"%{ord(c):02x}" if c in APT_QUOTED or ord(c) <= 0x20 or ord(c) >= 0x7F else c
        for c in host + slash + path
    )
    return quoted.replace("/", "_")


def release_prefix(uri, suite):
    """The lists-folder name of a repository's Release file, without _InRelease/_Release."""
    base = uri.rstrip("/") + "/"
    if suite.endswith("/"):  # a flat repository: the suite is a path
        location = base + suite.strip("/") if suite.strip("/") not in ("", ".") else base
    else:
        location = base + "dists/" + suite
    return uri_to_filename(location.rstrip("/"))


def one_line_entries(text):
    """(uri, suite) of each `deb` line; options in [...] are skipped."""
    entries = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words.pop(0)
            words = words[1:]
        if len(words) >= 2:
            entries.append((words[0], words[1]))
    return entries


def deb822_entries(text):
    """(uri, suite) of each enabled stanza with Types: deb."""
    entries = []
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            key, colon, value = line.partition(":")
            if colon and not line.startswith(("#", " ", "\t")):
                fields[key.strip().lower()] = value.split()
        if "deb" not in fields.get("types", []) or fields.get("enabled", ["yes"]) == ["no"]:
            continue
        for uri in fields.get("uris", []):
            for suite in fields.get("suites", []):
                entries.append((uri, suite))
    return entries


def inspect(source_file, lists_dir):
    """{"indexed": bool, "repositories": [...]}; raises OSError if the file cannot be read."""
    with open(source_file) as handle:
        text = handle.read()
    parse = deb822_entries if source_file.endswith(".sources") else one_line_entries
    changed_at = os.stat(source_file).st_mtime
    repositories = []
    for uri, suite in parse(text):
        prefix = os.path.join(lists_dir, release_prefix(uri, suite))
        current = False
        for candidate in (prefix + "_InRelease", prefix + "_Release"):
            if os.path.exists(candidate) and os.stat(candidate).st_ctime >= changed_at:
                current = True
        repositories.append(
            {"uri": uri, "suite": suite, "release_file": prefix + "_InRelease", "indexed": current}
        )
    indexed = bool(repositories) and all(r["indexed"] for r in repositories)
    return {"indexed": indexed, "repositories": repositories}


def main():
    module = AnsibleModule(
        argument_spec={
            "source_file": {"type": "path", "required": True},
            "lists_dir": {"type": "path", "default": "/var/lib/apt/lists"},
        },
        supports_check_mode=True,
    )
    try:
        result = inspect(module.params["source_file"], module.params["lists_dir"])
    except OSError as exc:
        module.fail_json(msg=f"cannot read {module.params['source_file']}: {exc}")
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
