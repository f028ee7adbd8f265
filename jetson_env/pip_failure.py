"""One sentence for a pip install (or its --dry-run) that failed, taken from pip's own output:
the pip_packages role says it in the play's failure and the provision summary, in place of
pip's whole stderr (retry warnings, a build's log) joined into one line. The whole output stays
in the pip task's result (Ansible shows it with -v).

pip says that an index did not answer only in its retry warnings, which name the request's path
(`/simple/termcolor/`), not the index: the index is found among those the install was given
(`--index-url`, `--extra-index-url`, PIP_INDEX_URL, PIP_EXTRA_INDEX_URL) by that path.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# urllib3's warning, as pip logs it: the error's repr, then the request's path.
RETRY = re.compile(r"^WARNING: Retrying \(.*?\) after connection broken by '(?P<error>.*)': "
                   r"(?P<path>/\S*)\s*$")  # fmt: skip
REASONS = (
    re.compile(r"Failed to establish a new connection: (?:\[Errno -?\d+\] )?(?P<reason>[^'\")]+)"),
    re.compile(r"(?P<reason>(?:Connection to \S+|Read) timed out)"),
    re.compile(r"(?P<reason>Cannot connect to proxy)"),
)
SCHEMES = (("https", "HTTPSConnection"), ("http", "HTTPConnection"))
INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url")
INDEX_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
# A build's captured output in pip's diagnostics (pip 23+): between these, 6 spaces in.
OUTPUT_START = re.compile(r"\[\d+ lines? of output\]\s*$")
OUTPUT_END = "[end of output]"
# pip's last ERROR line where it only points at its documentation.
POINTER = re.compile(r"for help visit|see above", re.IGNORECASE)
MAX_CHARS = 400


def sentence(output: str, argv: list[str] = (), env: dict[str, str] | None = None) -> str:
    """What went wrong, in one sentence from pip's `output` (its stderr): the index it could
    not reach, pip's final ERROR line, and what a failed build printed last."""
    lines = [line.rstrip() for line in output.splitlines()]
    unreached = _unreached(lines, _indexes(argv, env or {}))
    errors = [line[len("ERROR: ") :].strip() for line in lines if line.startswith("ERROR: ")]
    named = [e for e in errors if not POINTER.search(e)] or errors
    said = named[-1] if named else next((line.strip() for line in reversed(lines) if line.strip()),
                                        "")  # fmt: skip
    built = _build_output(lines)
    if built and built not in said:
        said = f"{said} (the build's last line: {built})" if said else built
    if unreached:
        said = f"pip could not reach {unreached}" + (f": {said}" if said else "")
    said = said or "pip printed nothing on stderr"
    return said if len(said) <= MAX_CHARS else said[: MAX_CHARS - 3] + "..."


def _indexes(argv: list[str], env: dict[str, str]) -> list[str]:
    """The index URLs the install was given, in pip's order of use."""
    found = []
    for i, arg in enumerate(argv):
        option, equals, value = str(arg).partition("=")
        if option in INDEX_OPTIONS:
            value = value if equals else (str(argv[i + 1]) if i + 1 < len(argv) else "")
            found.append(value)
    for name in INDEX_VARIABLES:
        found += str(env.get(name, "")).split()
    return [url for url in found if url]


def _unreached(lines: list[str], indexes: list[str]) -> str:
    """Each index a retry warning was about, as "URL (why)", joined; "" for none."""
    seen: dict[str, str] = {}
    for line in lines:
        match = RETRY.match(line)
        if not match:
            continue
        error, path = match["error"], match["path"]
        reason = next((m["reason"].strip() for m in (r.search(error) for r in REASONS) if m),
                      error.split("(", 1)[0])  # fmt: skip
        scheme = next((s for s, c in SCHEMES if c in error), "")
        index = _index_of(path, scheme, indexes)
        seen.setdefault(index or "its configured index", reason if index else f"{reason}: {path}")
    return " and ".join(f"{index} ({reason})" for index, reason in seen.items())


def _index_of(path: str, scheme: str, indexes: list[str]) -> str:
    """The given index whose URL the request's path is under (the longest), else "" (pip's
    configuration or its default named it)."""
    under = [url for url in indexes
             if path.startswith(urlsplit(url).path.rstrip("/") + "/")
             and (not scheme or urlsplit(url).scheme == scheme)]  # fmt: skip
    return max(under, key=lambda url: len(urlsplit(url).path.rstrip("/")), default="")


def _build_output(lines: list[str]) -> str:
    """The last line a failed build (or metadata step) printed, as pip quotes it."""
    last = ""
    inside = False
    for line in lines:
        if OUTPUT_START.search(line):
            inside = True
        elif inside and line.strip() == OUTPUT_END:
            inside = False
        elif inside and line.strip():
            last = line.strip()
    return last
