"""The probe launcher on the target: every probe process, on every kind of target.

Read-only, stdlib only, Python 3.6+. The doctor starts it the same way everywhere (a
local process, an SSH channel, a fleet host's Ansible task): `python -c BOOTSTRAP` with
this file and a call of main(REQUEST) framed on stdin (jetson_env/targets.py). It starts
the probe processes (`sys.executable -c BOOTSTRAP`, each in a session of its own, the
script on stdin and stdin kept open as its lifeline), one per group of the request, all
at once, and forwards their records on its own stdout as they come. For each process it
keeps the timeout of the probe that last began (until the process is ready, the
startup's), caps each stream at the request's output limit, and when a probe crashes,
hangs or floods it ends the process's group (and whatever left it: marked by RUN_ENV, or
orphaned to this process, a subreaper) and runs the probes after it in a fresh process.
The doctor words what happened; this file only reports it.

Records on stdout (REC is the request's record prefix; the probes' own records pass
through unchanged):

    REC begin NAME              NAME starts
    REC result NAME {...}       NAME's facts (from the probe process)
    REC error NAME {...}        NAME raised (from the probe process)
    REC crash NAME {...}        NAME's process ended first: {"returncode", "overflow",
                                "timed_out", "started"}
    REC end NAME {...}          NAME is over: {"seconds", "stderr"} (its stderr's tail)
    REC done                    every probe is over
    STAGE text                  a probe's progress line (the smoke's stages)
"""

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

STDERR_LINES_KEPT = 40
STDERR_LINE_CHARS = 2000
KILL_WAIT_SECONDS = 5
HEARTBEAT_SECONDS = 1
# prctl(2): orphaned descendants are re-parented to this process, not to init.
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except Exception:  # not Linux, no libc: the process groups and markers still apply
        pass


def children(pid):
    """The processes whose parent is pid (from /proc; none where there is no /proc)."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                stat = handle.read(4096)
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] != b"Z" and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def end_strays(known):
    """Kill this process's children that known() does not name (orphans re-parented to a
    subreaper), and theirs, re-parented in turn."""
    me = os.getpid()
    for _ in range(20):  # a process stuck in the kernel (a hung driver) is left after 1 s
        strays = [pid for pid in children(me) if pid not in known()]
        if not strays:
            return
        for pid in strays:
            kill(pid)
        time.sleep(0.05)
        for pid in strays:  # reaped without blocking: a zombie is no longer a child here
            with contextlib.suppress(OSError):
                os.waitpid(pid, os.WNOHANG)


def kill_marked(marker):
    """Every process whose environment has marker (RUN_ENV=id): it left its group."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as handle:
                environ = handle.read(1 << 20).split(b"\0")
        except OSError:
            continue
        if marker in environ:
            kill(int(entry))


def interpreter_options():
    """The options this interpreter was started with that the probe processes keep (-S -I
    -E: a doctor asked to probe with the stdlib alone gets probes that see nothing else)."""
    flags = sys.flags
    chosen = (("-S", flags.no_site), ("-I", flags.isolated), ("-E", flags.ignore_environment))
    return [option for option, on in chosen if on]


def start_process(argv, env):
    """A probe process: pipes for its three streams, a session (and process group) of its
    own, so that ending the group ends what it started."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def send(stream, data):
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
        stream.flush()


def kill(pid, group=False):
    with contextlib.suppress(OSError):
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)


class Runner:
    def __init__(self, request):
        self.request = request
        self.record = request["record"]
        self.out_lock = threading.Lock()
        self.active = {}  # pid -> marker of each probe process running
        self.active_lock = threading.Lock()

    def write(self, line):
        with self.out_lock:
            sys.stdout.buffer.write(line + b"\n")
            sys.stdout.buffer.flush()

    def emit(self, kind, name, data):
        text = "%s %s %s %s" % (self.record, kind, name, json.dumps(data))
        self.write(text.encode("utf-8"))

    def script(self, names):
        probes = [(name, self.request["probes"][name]) for name in names]
        gpu_work = "smoke" in names
        cuda = "torch" in names  # its probe initialises the driver (torch.cuda.is_available)
        return self.request["prelude"] + "\nrun_probes(%r, gpu_work=%r, cuda=%r)\n" % (
            probes,
            gpu_work,
            cuda,
        )

    def group(self, names):
        pending = list(names)
        while pending:
            over = Process(self, pending).run()
            pending = [name for name in pending if name not in over]

    def end_all(self):
        """The lifeline closed (the doctor is gone) or the run is over: nothing stays."""
        with self.active_lock:
            running = list(self.active.items())
        for pid, marker in running:
            kill(pid, group=True)
            kill_marked(marker)
        self.end_orphans()

    def end_orphans(self):
        """What a probe left behind that was re-parented here (a daemon that cleared its
        environment and left its session): killed, and what it started in turn."""

        def known():
            with self.active_lock:
                return set(self.active)

        end_strays(known)

    def heartbeat(self):
        """An empty line a second: once the doctor's end of stdout is gone (the connection
        dropped, with no lifeline on stdin), nothing stays."""
        while True:
            time.sleep(HEARTBEAT_SECONDS)
            try:
                self.write(b"")
            except (OSError, ValueError):
                self.end_all()
                os._exit(1)

    def run(self):
        become_subreaper()
        beat = threading.Thread(target=self.heartbeat)
        beat.daemon = True
        beat.start()
        threads = [
            threading.Thread(target=self.group, args=(names,)) for names in self.request["groups"]
        ]
        for thread in threads:
            thread.daemon = True
            thread.start()
        for thread in threads:
            thread.join()
        self.end_orphans()
        self.write(("%s done" % self.record).encode("utf-8"))


class Process:
    """One probe process running `names` in order; run() returns the names it finished."""

    def __init__(self, runner, names):
        self.runner = runner
        self.request = runner.request
        self.names = names
        self.timeouts = self.request["timeouts"]
        self.prefix = (self.request["record"] + " ").encode("utf-8")
        self.stage = self.request["stage"].encode("utf-8")
        self.ready_line = self.request["ready"].encode("utf-8")
        self.lock = threading.Lock()
        self.woken = threading.Event()
        self.over = []
        self.current = None
        self.ready = False
        self.began = time.monotonic()
        self.stderr = collections.deque(maxlen=STDERR_LINES_KEPT)
        self.overflow = None
        self.eof = {"stdout": False, "stderr": False}
        self.timeout = min(self.request["startup"], self.timeouts[names[0]])
        self.deadline = self.began + self.timeout

    def run(self):
        marker = os.urandom(8).hex()
        env = dict(os.environ)
        env[self.request["run_env"]] = marker
        # Registered as it starts: end_orphans() in another group's thread must not take it
        # for a stray.
        with self.runner.active_lock:
            try:
                proc = start_process(
                    [sys.executable, *interpreter_options(), "-c", self.request["bootstrap"]],
                    env,
                )
            except (OSError, ValueError) as exc:
                self.stderr.append("cannot start %s: %s" % (sys.executable, exc))
                self.crash(self.names[0], {"returncode": 127, "started": False})
                return self.over
            self.runner.active[proc.pid] = ("%s=%s" % (self.request["run_env"], marker)).encode()
        readers = [
            threading.Thread(target=self.read, args=(proc, name)) for name in ("stdout", "stderr")
        ]
        for reader in readers:
            reader.daemon = True
            reader.start()
        data = self.runner.script(self.names).encode("utf-8")
        writer = threading.Thread(target=send, args=(proc.stdin, b"%d\n" % len(data) + data))
        writer.daemon = True  # a process that never reads must not block this one
        writer.start()
        timed_out, exited_at = False, None
        while True:
            with self.lock:
                left = self.deadline - time.monotonic()
                finished = len(self.over) == len(self.names)
                eof = all(self.eof.values())
            if finished or self.overflow:
                break
            if proc.poll() is not None:
                exited_at = exited_at or time.monotonic()
                # Its output is all in the pipes; a daemon that holds them gets a second.
                if eof or time.monotonic() - exited_at > 1:
                    break
            elif left <= 0:
                timed_out = True
                break
            self.woken.wait(max(min(left, 0.2), 0.01))
            self.woken.clear()
        kill(proc.pid, group=True)
        kill_marked(self.runner.active[proc.pid])
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=KILL_WAIT_SECONDS)  # stuck in the kernel (a hung driver): go on
        for reader in readers:
            reader.join(timeout=1)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        with self.runner.active_lock:
            self.runner.active.pop(proc.pid, None)
        self.runner.end_orphans()
        with self.lock:
            unfinished = [name for name in self.names if name not in self.over]
            if unfinished:
                name = self.current or unfinished[0]
                self.crash(name, {
                    "returncode": None if timed_out or self.overflow else proc.returncode,
                    "overflow": self.overflow,
                    "timed_out": self.timeout if timed_out else None,
                    "started": self.ready,
                })  # fmt: skip
            return list(self.over)

    def crash(self, name, facts):
        self.runner.emit("crash", name, facts)
        self.finish(name)

    def finish(self, name):
        """Holding the lock (or alone): name is over."""
        tail = "\n".join(self.stderr)
        self.runner.emit("end", name, {"seconds": time.monotonic() - self.began, "stderr": tail})
        self.over.append(name)
        self.current = None

    def read(self, proc, name):
        stream, kept, pending = getattr(proc, name), 0, b""
        limit = self.request["output_limit"]
        while True:
            try:
                chunk = os.read(stream.fileno(), 65536)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            kept += len(chunk)
            if kept > limit:
                with self.lock:
                    self.overflow = self.overflow or name
                kill(proc.pid, group=True)
                self.woken.set()
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                self.on_line(name, line)
            if name == "stdout" and not pending.startswith(b"@"):
                pending = b""  # not a record: nothing of it is needed
        if pending and name == "stderr" and kept <= limit:
            self.on_line(name, pending)  # its last words, without a newline
        with self.lock:
            self.eof[name] = True
        self.woken.set()

    def on_line(self, stream, line):
        with self.lock:
            if stream == "stderr":
                if line.startswith(self.stage):
                    self.runner.write(line)
                else:
                    text = line.decode("utf-8", "replace")
                    self.stderr.append(text[:STDERR_LINE_CHARS])
                return
            if line == self.ready_line:
                self.ready = True
                self.reset(self.names[0])
                return
            if not (self.ready and line.startswith(self.prefix)):
                return  # an import's banner
            words = line[len(self.prefix) :].split(b" ", 2)
            if len(words) < 2:
                return
            kind, name = words[0].decode("ascii", "replace"), words[1].decode("utf-8", "replace")
            if name not in self.names or name in self.over:
                return
            if kind == "begin":
                if self.current is not None or name != self.next():
                    return  # the probes begin in order, one at a time: not ours
                self.current = name
                self.began = time.monotonic()
                self.stderr.clear()
                self.reset(name)
                self.runner.write(line)
            elif kind in ("result", "error") and name == self.current:
                self.runner.write(line)
                self.finish(name)
        self.woken.set()

    def next(self):
        return next((name for name in self.names if name not in self.over), None)

    def reset(self, name):
        self.timeout = self.timeouts[name]
        self.deadline = time.monotonic() + self.timeout


def main(request):
    runner = Runner(request)
    LIFELINE_HOOKS.append(runner.end_all)  # noqa: F821 (BOOTSTRAP's namespace)
    runner.run()
