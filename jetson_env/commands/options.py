"""Argument types and checks that several commands share."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from jetson_env.exit_codes import EXIT_USAGE
from jetson_env.terminal import Terminal

MIN_TIMEOUT = 1  # --timeout, seconds


def seconds(text: str) -> float:
    """--timeout: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    if value < MIN_TIMEOUT:  # no interpreter starts sooner: it would be blamed for the timeout
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_TIMEOUT:g} seconds (an interpreter's start), not {text}"
        )
    return value


def forks(text: str) -> int:
    """--forks: a positive whole number."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text!r}")
    return int(text)


def checked_bundle(args: argparse.Namespace, term: Terminal):
    """--bundle DIR [--trust KEY.pub] of `provision` and `doctor --fix`, checked before any
    host is touched (bundle.check_before_provision): the bundle's Provisioning, None without
    --bundle, or an exit code."""
    if args.trust and not args.bundle:
        term.error("--trust checks a bundle's signature: give the bundle with --bundle DIR")
        return EXIT_USAGE
    if not args.bundle:
        return None
    from jetson_env import bundle

    try:
        return bundle.check_before_provision(args.bundle, Path(args.trust) if args.trust else None)
    except bundle.BundleError as exc:
        term.error(str(exc), hint=exc.hint)
        return exc.exit_code
