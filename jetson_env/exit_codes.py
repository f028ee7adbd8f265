"""The commands' exit codes (README, docs/doctor.md): one definition for the doctor's
reports, the fleet and the CLI."""

EXIT_OK = 0  # healthy, or the command did what was asked
EXIT_FAILED = 1  # a check or probe failed
EXIT_USAGE = 2  # bad input: an unknown option value, L4T release, check ...
EXIT_UNREACHABLE = 3  # the target or its interpreter cannot be used
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM)
