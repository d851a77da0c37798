"""Trickle messages: queue what a scheduler reply carries, create trickle-downs, and run the
handlers (BOINC's trickle_handler daemon) on stored trickle-ups (stored by inbox.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

from apps.hosts.models import Host
from apps.projects.models import Project
from apps.protocol import ProtocolError, TrickleDown, trickle_down_body, xml_fragment_problem
from apps.trickles.models import HandledState, MsgFromHost, MsgToHost, TrickleHandler
from apps.work.domain.states import ServerState
from apps.work.models import Result

logger = logging.getLogger(__name__)

# BOINC keeps a message's XML in a 256 KiB column.
DEFAULT_MAX_TRICKLE_BYTES = 256 * 1024


class TrickleError(ValueError):
    """A trickle-down that cannot be created; the message says why."""


class TrickleRefused(Exception):
    """Raised by a handler for a message it will never be able to handle (no retry)."""


class TrickleRetry(Exception):
    """A handler failed in a way that may pass: the task tries again later."""


def max_trickle_bytes() -> int:
    return int(getattr(settings, "COBBLESTONE_MAX_TRICKLE_BYTES", DEFAULT_MAX_TRICKLE_BYTES))


# ------------------------------------------------------------------ trickle-downs


def trickles_to_send(*, host: Host, now: datetime) -> tuple[TrickleDown, ...]:
    """The host's pending trickle-downs for this reply, marked delivered (in the RPC's
    transaction, so they stay pending if the reply is never committed).

    One naming no task goes to the host's most recently sent task in progress, and waits
    while it has none; one whose stored body is no longer XML is logged and left pending.
    """
    pending = list(
        MsgToHost.objects.select_for_update(skip_locked=True)
        .filter(host=host, delivered=False)
        .order_by("id")
    )
    if not pending:
        return ()
    running = (
        Result.objects.filter(host=host, server_state=ServerState.IN_PROGRESS)
        .order_by("-sent_time", "-id")
        .values_list("name", flat=True)
        .first()
    )
    out: list[TrickleDown] = []
    sent: list[int] = []
    last_time = 0
    for message in pending:
        name = message.result_name or running
        if not name:
            continue
        try:
            body = trickle_down_body(message.variety, message.xml)
        except ProtocolError as exc:
            logger.warning("trickle-down %s to host %s not sent: %s", message.pk, host.pk, exc)
            continue
        # The client names the file it hands the task by this time: two of one second would
        # overwrite each other.
        last_time = max(int(message.create_time.timestamp()), last_time + 1)
        out.append(TrickleDown(result_name=name, time=last_time, body=body))
        sent.append(message.pk)
    MsgToHost.objects.filter(id__in=sent).update(delivered=True, delivered_time=now)
    return tuple(out)


def trickle_down_create(
    *, project: Project, host_id: int, variety: str, body: str, now: datetime, result_name: str = ""
) -> MsgToHost:
    """A trickle-down for the host's next reply. Raises TrickleError for a host not of the
    project, a task the host does not hold, an empty or overlong variety, or a body that is
    not XML content or is over the size limit."""
    host = Host.objects.filter(project=project, id=host_id).first()
    if host is None:
        raise TrickleError(f"project {project.slug} has no host {host_id}")
    variety = variety.strip()
    if not variety or len(variety) > 254 or any(c in variety for c in "<>&"):
        raise TrickleError("the variety must be 1 to 254 characters, without <, > or &")
    problem = xml_fragment_problem(body)
    if problem:
        raise TrickleError(f"the body is not XML content: {problem}")
    limit = max_trickle_bytes()
    if len(body.encode("utf-8")) > limit:
        raise TrickleError(f"the body is over {limit} bytes")
    if result_name and not Result.objects.filter(project=project, host=host, name=result_name).exists():
        raise TrickleError(f"host {host_id} does not hold a task named {result_name}")
    return MsgToHost.objects.create(
        project=project,
        host=host,
        result_name=result_name,
        variety=variety,
        xml=body.strip(),
        create_time=now,
    )


# ------------------------------------------------------------------ handlers


@dataclass(frozen=True, slots=True)
class Handled:
    """What became of one handling attempt (the task's return value, for its log)."""

    message_id: int
    state: str
    error: str = ""


def trickle_handle(*, message_id: int, now: datetime, final: bool = False) -> Handled:
    """Run the handler of one stored trickle-up (by its task's app and its variety).

    Handled → HANDLED. No handler for the variety: it stays UNHANDLED, the reason in
    ``error``, visible in the admin (handling it again once a handler exists is an admin
    action). A handler raising TrickleRefused → FAILED at once; any other exception is
    recorded and raises TrickleRetry, unless ``final`` (the task's last retry): FAILED.
    The handler runs in a transaction with the message's update, so its writes and the
    HANDLED mark commit together.
    """
    with transaction.atomic():
        message = (
            MsgFromHost.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("result")
            .filter(id=message_id, handled=HandledState.UNHANDLED)
            .first()
        )
        if message is None:
            return Handled(message_id, "skipped")
        config = None
        if message.result is not None:
            config = TrickleHandler.objects.filter(
                app_id=message.result.app_id, variety=message.variety, enabled=True
            ).first()
        if config is None:
            return _mark(message, HandledState.UNHANDLED, now, f"no handler for variety {message.variety!r}")
        try:
            handler = import_string(config.handler)
            with transaction.atomic():
                handler(message, config)
        except TrickleRefused as exc:
            return _mark(message, HandledState.FAILED, now, str(exc) or "refused")
        except Exception as exc:  # a project's handler may raise anything
            logger.warning("trickle %s: handler %s failed: %s", message_id, config.handler, exc)
            failed = _mark(message, HandledState.FAILED if final else HandledState.UNHANDLED, now, repr(exc))
            if final:
                return failed
            error = repr(exc)
        else:
            return _mark(message, HandledState.HANDLED, now, "")
    raise TrickleRetry(error)


def _mark(message: MsgFromHost, state: HandledState, now: datetime, error: str) -> Handled:
    message.handled = state
    message.attempts += 1
    message.error = error[:2000]
    message.handled_time = now if state != HandledState.UNHANDLED else None
    message.save(update_fields=["handled", "attempts", "error", "handled_time"])
    return Handled(message.pk, state.label, error)


def trickles_handle_pending(*, project: Project, now: datetime, variety: str = "") -> dict[str, int]:
    """One pass over the project's unhandled trickle-ups (BOINC's trickle_handler
    --one_pass), without Celery: each message's handler once, a failure left for later.
    Returns how many messages ended in each state."""
    pending = MsgFromHost.objects.filter(project=project, handled=HandledState.UNHANDLED)
    if variety:
        pending = pending.filter(variety=variety)
    counts: dict[str, int] = {}
    for message_id in pending.order_by("id").values_list("id", flat=True):
        try:
            state = trickle_handle(message_id=message_id, now=now).state
        except TrickleRetry:
            state = "retry"
        counts[state] = counts.get(state, 0) + 1
    return counts


# A trickle-up's handling task is queued when the RPC that stored it commits; one still never
# tried this long after is taken to be lost (the broker was down at that moment, or the worker
# died holding it). Well above a normal queue's wait, so a busy worker is not sent duplicates.
LOST_AFTER = timedelta(minutes=10)


def trickles_lost(*, now: datetime, limit: int = 1000) -> list[int]:
    """Ids of unhandled trickle-ups never tried since LOST_AFTER: their task was lost.

    Read project by project, so the (project, handled) index answers however many messages
    were handled before.
    """
    lost: list[int] = []
    for project_id in Project.objects.order_by("id").values_list("id", flat=True):
        lost += (
            MsgFromHost.objects.filter(
                project_id=project_id,
                handled=HandledState.UNHANDLED,
                attempts=0,
                create_time__lt=now - LOST_AFTER,
            )
            .order_by("id")
            .values_list("id", flat=True)[: limit - len(lost)]
        )
        if len(lost) >= limit:
            break
    return lost
