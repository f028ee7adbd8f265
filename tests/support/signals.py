"""Signal dispositions for the processes the tests start."""

import signal


def sigint_as_in_a_terminal() -> None:
    """Popen's preexec_fn: SIGINT at its default, as a command typed in a terminal has it.

    A suite started in the background by a non-interactive shell inherits SIGINT ignored,
    and a Python that starts so never raises KeyboardInterrupt: a Ctrl-C test would test
    how the suite was launched, not the doctor."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
