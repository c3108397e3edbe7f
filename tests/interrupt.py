"""Ctrl-C as a terminal delivers it, for the tests that send SIGINT to a CLI they start."""

from __future__ import annotations

import signal


def interruptible() -> None:
    """A `preexec_fn`: SIGINT back to its default action. A shell without job control starts a background job
    (CI's runner, `make test &`) with SIGINT ignored, every child inherits that, and Python then installs no
    KeyboardInterrupt handler: the CLI would run on to its own end whatever it does with a Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
