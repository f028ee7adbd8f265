"""The programs jetson-env starts for a run (ansible-playbook, ansible-inventory) end with it.

jetson-env ends them itself when it is interrupted (SIGINT, SIGTERM); killed outright
(SIGKILL, the OOM killer) it cannot, and an ansible-playbook left behind goes on changing
hosts. So each one is started with a parent-death signal (prctl PR_SET_PDEATHSIG, Linux):
SIGTERM when jetson-env is gone, on which ansible-playbook ends its workers and the process
groups they started (its own SIGTERM handling), as on Ctrl-C.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def ends_with_us() -> Callable[[], None] | None:
    """Popen's preexec_fn for a program that must not outlive jetson-env; None where the
    signal cannot be tied to jetson-env's life: it fires when the thread that started the
    program ends, so only the main thread's programs get it."""
    if threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()

    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # jetson-env was gone before the signal was set
            os._exit(1)

    return preexec
