"""What the tests that signal a running ``attenzione`` command share."""

from __future__ import annotations

import os
import signal


def as_terminal_job() -> None:
    """In the child before exec: a process group of its own (a terminal's foreground job), and
    SIGINT at its default, which Python turns into KeyboardInterrupt (a test run from a
    background shell job would otherwise pass on an ignored SIGINT: ``cmd &`` starts with
    SIGINT ignored, and a child inherits that)."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
