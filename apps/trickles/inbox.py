"""Trickle-ups in: stored from a scheduler request, then handed to their handlers' Celery
task after the commit. Apart from services.py because it enqueues that task, and the task
module imports services.py for the handling it runs."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from datetime import datetime
from functools import partial

from django.db import transaction

from apps.hosts.models import Host
from apps.projects.models import Project
from apps.protocol import TrickleUp
from apps.trickles.models import HandledState, MsgFromHost
from apps.trickles.services import max_trickle_bytes
from apps.trickles.tasks import trickle_handle_task
from apps.work.models import Result

logger = logging.getLogger(__name__)


def _digest(body: str) -> str:
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


def trickles_receive(*, project: Project, host: Host, trickles: Sequence[TrickleUp], now: datetime) -> bool:
    """Store the request's trickle-ups once each; True if the reply must carry <message_ack/>.

    Every trickle is acknowledged, stored or not: the client deletes all the trickle files it
    sent when it sees the ack, and one it can never get stored (not XML, too big, naming a
    task the host does not hold) would otherwise come back with every RPC. Those are logged
    and dropped. Called inside the RPC's transaction, so a failure stores none of them.
    """
    if not trickles:
        return False
    limit = max_trickle_bytes()
    names = {t.result_name for t in trickles}
    held = {
        r.name: r
        for r in Result.objects.filter(project=project, host=host, name__in=names).only(
            "id", "name", "app_id"
        )
    }
    candidates: dict[tuple[str, int, str], MsgFromHost] = {}
    for t in trickles:
        reason = _refusal(t, held, limit)
        if reason:
            logger.warning("trickle from host %s (%s) ignored: %s", host.pk, t.result_name[:80], reason)
            continue
        digest = _digest(t.body)
        candidates[(t.result_name, t.time, digest)] = MsgFromHost(
            project=project,
            host=host,
            result=held[t.result_name],
            result_name=t.result_name,
            variety=t.variety[:254],
            xml=t.body,
            send_time=t.time,
            digest=digest,
            create_time=now,
        )
    if candidates:
        known = set(
            MsgFromHost.objects.filter(host=host, result_name__in={k[0] for k in candidates}).values_list(
                "result_name", "send_time", "digest"
            )
        )
        new = [m for key, m in candidates.items() if key not in known]
        # A concurrent RPC of the same host (a client retrying) may store the same ones.
        MsgFromHost.objects.bulk_create(new, ignore_conflicts=True)
        if new:
            ids = list(
                MsgFromHost.objects.filter(
                    host=host, handled=HandledState.UNHANDLED, attempts=0, digest__in={m.digest for m in new}
                ).values_list("id", flat=True)
            )
            transaction.on_commit(partial(trickles_enqueue, ids), robust=True)
    return True


def _refusal(trickle: TrickleUp, held: dict[str, Result], limit: int) -> str:
    if trickle.problem:
        return f"its body is not XML ({trickle.problem})"
    if len(trickle.body.encode("utf-8")) > limit:
        return f"its body is over {limit} bytes"
    if trickle.result_name not in held:
        return "it names a task this computer does not hold"
    return ""


def trickles_enqueue(message_ids: list[int]) -> None:
    """Boundary to Celery (tests replace it): one handling task per stored message."""
    for message_id in message_ids:
        trickle_handle_task.delay(message_id)


def trickles_handle_again(*, message_ids: Sequence[int]) -> int:
    """Put messages back to UNHANDLED and queue them (after a handler was added or fixed)."""
    ids = list(message_ids)
    with transaction.atomic():
        count = MsgFromHost.objects.filter(id__in=ids).update(
            handled=HandledState.UNHANDLED, handled_time=None
        )
        transaction.on_commit(partial(trickles_enqueue, ids), robust=True)
    return count
