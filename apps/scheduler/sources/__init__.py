"""Job sources, tried in order while the request still needs work.

Each is a function taking the RPC's Dispatcher; sequence and locality sources are added
by their issues' modules here (work sequences first: seed 001 gives a host that holds a
sequence its next steps before anything else).
"""

from __future__ import annotations

from collections.abc import Callable

from apps.scheduler.services.dispatch import Dispatcher, send_general_work

WORK_SOURCES: list[Callable[[Dispatcher], None]] = [send_general_work]
