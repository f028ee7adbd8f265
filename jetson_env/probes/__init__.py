"""Read-only probes. Each module is one self-contained, stdlib-only script that runs in
the target interpreter (Python 3.6+), prints one JSON object, and never changes the host.
They are sent to the interpreter on stdin (jetson_env.targets), so they must not import
each other."""
