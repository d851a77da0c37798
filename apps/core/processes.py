"""Child processes that end with their parent, however the parent ends (Linux)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In a child just forked by ``parent``: be SIGKILLed when ``parent`` ends, even by SIGKILL.

    SIGKILL, not SIGTERM: a process still starting, or already in a graceful stop, may take
    SIGTERM as a mere request (Celery's warm shutdown) and outlive the parent. A parent that
    died between the fork and this call never signals, so the child ends here instead.
    """
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
