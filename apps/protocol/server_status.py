"""``server_status.php?xml=1``: the XML export BOINC projects publish (html/user/server_status.php).

Element names and nesting are BOINC's, so status aggregators that read stock projects read
this one: ``<server_status>`` holds ``<update_time>``, ``<daemon_status>`` (one ``<daemon>``
with host, command, status per daemon) and ``<database_file_states>`` (the counts, then
``<tasks_by_app>`` with one ``<app>`` per application). Runtimes are in hours, as BOINC's.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.protocol import numbers as num
from apps.protocol.xmlwrite import Block, new_document, serialize

_IN = "    "


@dataclass(frozen=True, slots=True)
class DaemonState:
    """One daemon line; status is "running", "not running" or "disabled" (BOINC's words)."""

    host: str
    command: str
    status: str


@dataclass(frozen=True, slots=True)
class AppTasks:
    """One application's row of "Tasks by application"; runtimes in hours, 0 when unknown."""

    id: int
    name: str
    unsent: int
    in_progress: int
    avg_runtime: float = 0.0
    min_runtime: float = 0.0
    max_runtime: float = 0.0
    users: int = 0


@dataclass(frozen=True, slots=True)
class ServerStatusDoc:
    """Everything the export holds, in BOINC's order."""

    update_time: int
    daemons: tuple[DaemonState, ...]
    results_ready_to_send: int
    results_in_progress: int
    workunits_waiting_for_validation: int
    workunits_waiting_for_assimilation: int
    workunits_waiting_for_deletion: int
    results_waiting_for_deletion: int
    transitioner_backlog_hours: float
    users_with_recent_credit: int
    users_with_credit: int
    users_registered_in_past_24_hours: int
    hosts_with_recent_credit: int
    hosts_with_credit: int
    hosts_registered_in_past_24_hours: int
    current_floating_point_speed: float
    apps: tuple[AppTasks, ...] = ()


_COUNTS = (
    "results_ready_to_send",
    "results_in_progress",
    "workunits_waiting_for_validation",
    "workunits_waiting_for_assimilation",
    "workunits_waiting_for_deletion",
    "results_waiting_for_deletion",
    "transitioner_backlog_hours",
    "users_with_recent_credit",
    "users_with_credit",
    "users_registered_in_past_24_hours",
    "hosts_with_recent_credit",
    "hosts_with_credit",
    "hosts_registered_in_past_24_hours",
    "current_floating_point_speed",
)


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return num.format_int(value)
    return num.format_float(value, client=False)


def _app(parent: Block, app: AppTasks) -> None:
    with parent.block("app", _IN * 3) as block:
        block.leaf("id", num.format_int(app.id), _IN * 4)
        block.leaf("name", app.name, _IN * 4)
        for tag in ("unsent", "in_progress", "avg_runtime", "min_runtime", "max_runtime", "users"):
            block.leaf(tag, _number(getattr(app, tag)), _IN * 4)


def render_server_status(doc: ServerStatusDoc) -> bytes:
    """The ``<server_status>`` document (no XML declaration, like the rest of the protocol)."""
    root = new_document("server_status")
    root.leaf("update_time", num.format_int(doc.update_time), _IN)
    with root.block("daemon_status", _IN) as daemons:
        for d in doc.daemons:
            with daemons.block("daemon", _IN * 2) as block:
                block.leaf("host", d.host, _IN * 3)
                block.leaf("command", d.command, _IN * 3)
                block.leaf("status", d.status, _IN * 3)
    with root.block("database_file_states", _IN) as states:
        for tag in _COUNTS:
            states.leaf(tag, _number(getattr(doc, tag)), _IN * 2)
        with states.block("tasks_by_app", _IN * 2) as apps:
            for app in doc.apps:
                _app(apps, app)
    return serialize(root)
