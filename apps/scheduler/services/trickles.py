"""The RPC's trickle messages: store the request's trickle-ups (acknowledged in the reply, so
the client deletes their files) and take the host's pending trickle-downs for the reply."""

from __future__ import annotations

from apps.scheduler.services.context import RpcContext
from apps.trickles.inbox import trickles_receive
from apps.trickles.services import trickles_to_send


def trickles_exchange(ctx: RpcContext) -> None:
    assert ctx.host is not None
    ctx.message_ack = trickles_receive(
        project=ctx.project, host=ctx.host, trickles=ctx.req.trickle_ups, now=ctx.now
    )
    ctx.trickle_downs = trickles_to_send(host=ctx.host, now=ctx.now)
