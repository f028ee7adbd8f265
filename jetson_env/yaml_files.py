"""YAML as jetson-env reads it: with libyaml's parser where PyYAML was built with it (as
Ansible reads its own), else PyYAML's pure-Python one. The matrix alone took 0.3-0.4 s of
every command's start with the pure-Python parser, 0.03 s with libyaml's (same data)."""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """yaml.safe_load(text), parsed by libyaml where PyYAML has it."""
    return yaml.load(text, Loader=SafeLoader)
