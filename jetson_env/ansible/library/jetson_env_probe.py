#!/usr/bin/python
# ruff: noqa: E402
# (Ansible wants DOCUMENTATION before the imports; the module runs on Python 3.6 targets,
# written as the probes are.)
"""Ansible module: run jetson-env probe scripts in the host's interpreter, read-only.

The controller (jetson_env.fleet) sends each script as `jetson-env doctor` does over SSH:
to `python -c BOOTSTRAP` on stdin, stdin kept open as the probe's lifeline. Each script
runs in a process group of its own, all of them at once; one that outlives its budget
is killed with its group. The output comes back whole, and the controller reads it as
it reads a local or SSH run: the judgement stays there.
"""

DOCUMENTATION = r"""
module: jetson_env_probe
short_description: Run jetson-env's read-only probes in the host's Python
description:
  - Runs probe scripts built by C(jetson-env doctor --inventory) in the interpreter
    that runs this module, concurrently, each with a time budget. Changes nothing.
options:
  bootstrap:
    description:
      - The code given to C(python -c), base64 of UTF-8; it reads a script framed on stdin.
    type: str
    required: true
  jobs:
    description: Scripts to run, each C(id), C(script) (base64 of UTF-8) and C(budget) (seconds).
    type: list
    elements: dict
    required: true
  output_limit:
    description: Bytes kept of each stream; a process past them is killed.
    type: int
    default: 4194304
author: jetson-env
"""

RETURN = r"""
python:
  description: The interpreter the probes ran in.
  returned: always
  type: str
runs:
  description: Per job id, C(returncode), C(stdout), C(stderr), C(timed_out), C(overflow).
  returned: always
  type: dict
"""

import base64
import contextlib
import os
import signal
import subprocess
import sys
import threading

from ansible.module_utils.basic import AnsibleModule


def kill_group(proc):
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)


def read(proc, stream, kept, limit, overflowed):
    """Keep the stream's first `limit` bytes; past them, end the probe's process group."""
    while True:
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            return
        room = limit - len(kept)
        if len(chunk) > room:
            kept += chunk[: max(room, 0)]
            overflowed.set()
            kill_group(proc)
            return
        kept += chunk


def run(bootstrap, script, budget, limit):
    data = script.encode("utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-c", bootstrap],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    streams = {"stdout": bytearray(), "stderr": bytearray()}
    overflow = {name: threading.Event() for name in streams}
    readers = [
        threading.Thread(
            target=read, args=(proc, getattr(proc, name), streams[name], limit, overflow[name])
        )
        for name in streams
    ]
    for reader in readers:
        reader.daemon = True
        reader.start()
    try:
        proc.stdin.write(b"%d\n" % len(data) + data)
        proc.stdin.flush()
    except OSError:
        pass
    # Popen.wait's sleeps back off to 50 ms (a fixed 10 ms poll cost a busy fleet host CPU:
    # every probe runs at once, each waited for in a thread of its own).
    timed_out = False
    try:
        proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        timed_out = True
    kill_group(proc)
    proc.wait()
    for reader in readers:
        reader.join(timeout=1)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            stream.close()
    flooded = [name for name, event in sorted(overflow.items()) if event.is_set()]
    return {
        "returncode": proc.returncode,
        "stdout": bytes(streams["stdout"]).decode("utf-8", "replace"),
        "stderr": bytes(streams["stderr"]).decode("utf-8", "replace"),
        "timed_out": timed_out,
        "overflow": flooded[0] if flooded else None,
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "bootstrap": {"type": "str", "required": True},
            "jobs": {"type": "list", "elements": "dict", "required": True},
            "output_limit": {"type": "int", "default": 4 * 2**20},
        },
        supports_check_mode=True,
    )
    runs = {}
    bootstrap = base64.b64decode(module.params["bootstrap"]).decode("utf-8")

    def one(job):
        script = base64.b64decode(job["script"]).decode("utf-8")
        runs[job["id"]] = run(
            bootstrap, script, float(job["budget"]), module.params["output_limit"]
        )

    threads = [threading.Thread(target=one, args=(job,)) for job in module.params["jobs"]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    module.exit_json(changed=False, python=sys.executable, runs=runs)


if __name__ == "__main__":
    main()
