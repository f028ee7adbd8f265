"""Read-only probes. Each module is stdlib-only, runs in the target interpreter (Python
3.6+), defines collect() returning one JSON-able dict, and never changes the host. They
are sent to the interpreter on stdin after _prelude.py, which gives them their shared
helpers and runs them (jetson_env.probing), so they must not import each other."""
