"""The probe runner on a fleet host: jetson-env's probe processes, read-only.

Runs in the interpreter Ansible uses on the host (Python 3.6+, stdlib only; the
jetson_env_probe action sends it on stdin of `python -c`, the request after it). Each
job is one probe process, started as `doctor --host` starts it (`python -c BOOTSTRAP`,
the script on stdin, stdin kept open as its lifeline), all jobs at once, each in a
process group of its own. The runner keeps each probe's own timeout, as the doctor
does for a local process: the startup's until the interpreter is ready, then the
timeout of the probe that last began. A job whose probes have all answered is ended
at once (a CUDA context takes seconds to tear down). Prints one line: MARKER, then
JSON {"python": ..., "runs": {job id: {returncode, stdout, stderr, timed_out, overflow}}}.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time


def kill_group(proc):
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)


class Job:
    """One probe process, and the deadline its records move."""

    def __init__(self, request, job):
        self.request = request
        self.id = job["id"]
        self.script = job["script"]
        self.names = job["names"]
        self.timeouts = job["timeouts"]
        self.answered = set()
        self.lock = threading.Lock()
        self.woken = threading.Event()
        self.deadline = time.monotonic() + min(request["startup"], self.timeouts[self.names[0]])
        self.streams = {"stdout": bytearray(), "stderr": bytearray()}
        self.overflow = None
        self.stdout_closed = False
        self.proc = subprocess.Popen(
            [sys.executable, "-c", request["bootstrap"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def on_line(self, line):
        """READY: the first probe's timeout starts; `begin NAME`: NAME's; an answer counts."""
        words = line.decode("utf-8", "replace").split(" ")
        with self.lock:
            if line == self.request["ready"].encode("utf-8"):
                self.deadline = time.monotonic() + self.timeouts[self.names[0]]
            elif len(words) >= 3 and words[0] + " " == self.request["record"]:
                if words[1] == "begin" and words[2] in self.timeouts:
                    self.deadline = time.monotonic() + self.timeouts[words[2]]
                elif words[1] in ("result", "error"):
                    self.answered.add(words[2])
        self.woken.set()

    def read(self, name):
        """Keep the stream's first `limit` bytes (past them, end the process group)."""
        kept, limit, pending = self.streams[name], self.request["output_limit"], b""
        stream = getattr(self.proc, name)
        while True:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            room = limit - len(kept)
            if len(chunk) > room:
                kept += chunk[: max(room, 0)]
                self.overflow = self.overflow or name
                kill_group(self.proc)
                break
            kept += chunk
            if name == "stdout":
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if line.startswith(b"@@"):
                        self.on_line(line)
        if name == "stdout":
            self.stdout_closed = True
            self.woken.set()

    def run(self):
        readers = [threading.Thread(target=self.read, args=(name,)) for name in self.streams]
        for reader in readers:
            reader.daemon = True
            reader.start()
        data = self.script.encode("utf-8")
        try:
            self.proc.stdin.write(b"%d\n" % len(data) + data)
            self.proc.stdin.flush()
        except OSError:
            pass
        timed_out = False
        while self.proc.poll() is None:
            with self.lock:
                left = self.deadline - time.monotonic()
                done = len(self.answered) == len(self.names)
            if done:
                break
            if left <= 0:
                timed_out = True
                break
            if self.stdout_closed:  # it is exiting: wait for that, not for a record
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=left)
                continue
            # Woken by each record; a process whose stdout a daemon keeps open is still
            # seen to exit within a second.
            self.woken.wait(min(left, 1.0))
            self.woken.clear()
        kill_group(self.proc)
        self.proc.wait()
        for reader in readers:
            reader.join(timeout=1)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        return {
            "returncode": self.proc.returncode,
            "stdout": bytes(self.streams["stdout"]).decode("utf-8", "replace"),
            "stderr": bytes(self.streams["stderr"]).decode("utf-8", "replace"),
            "timed_out": timed_out,
            "overflow": self.overflow,
        }


def main():
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    runs = {}

    def one(job):
        runs[job["id"]] = Job(request, job).run()

    threads = [threading.Thread(target=one, args=(job,)) for job in request["jobs"]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sys.stdout.write(request["marker"] + json.dumps({"python": sys.executable, "runs": runs}))
    sys.stdout.write("\n")
    sys.stdout.flush()


main()
