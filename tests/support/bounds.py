"""The real CLI with one of its time bounds lowered, in that process only.

A test of what happens when a bound runs out (ssh-keygen waiting for a passphrase nobody
types, an SSH server that never sends its banner) would wait the users' bound, minutes,
for a sentence. The command runs as `python -m jetson_env.cli` does, with the module
attribute the wait and its message read set to `seconds` first; nothing else changes. An
attribute that is no longer there fails the run (AttributeError), never a silent no-op.
"""

import sys

_CODE = """import importlib, sys
from jetson_env import cli
module, name, seconds = sys.argv[1:4]
bound = importlib.import_module(module)
getattr(bound, name)
setattr(bound, name, int(seconds))
sys.exit(cli.main(sys.argv[4:]))
"""


def cli_with_bound(module: str, name: str, seconds: int) -> list[str]:
    """argv that starts jetson-env with `module.name` (a bound in seconds) = `seconds`;
    the CLI's own arguments follow it."""
    return [sys.executable, "-c", _CODE, module, name, str(seconds)]
