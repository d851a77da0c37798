"""Job sources, tried in order while the request still needs work.

Each is a function taking the RPC's Dispatcher: targeted and broadcast jobs first (as
BOINC's send_targeted_jobs and send_broadcast_jobs), then one job of each non-CPU-intensive
app, then work sequences (a host that holds a sequence gets its next steps before anything
else, docs/sequences.md), then locality, then the general source.
"""

from __future__ import annotations

from collections.abc import Callable

from apps.scheduler.services.dispatch import Dispatcher, send_general_work
from apps.scheduler.services.sources.assigned import send_assigned_work
from apps.scheduler.services.sources.locality import send_locality_work
from apps.scheduler.services.sources.nci import send_nci_work
from apps.scheduler.services.sources.sequences import send_sequence_work

# Locality before the general source: a host holding large files gets their work first.
WORK_SOURCES: list[Callable[[Dispatcher], None]] = [
    send_assigned_work,
    send_nci_work,
    send_sequence_work,
    send_locality_work,
    send_general_work,
]
