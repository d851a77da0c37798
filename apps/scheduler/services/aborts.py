"""Tell the host about results it holds that the server cancelled or no longer needs."""

from __future__ import annotations

from apps.core.db import any_of, fetch_rows
from apps.scheduler.services.context import RpcContext
from apps.work.domain.states import Outcome, ServerState


def results_to_abort(ctx: RpcContext) -> None:
    """BOINC's send_result_abort, from the client's ``other_results`` list.

    * not in the database, or not this host's, or already over on the server
      (timed out, cancelled, not needed): ``result_abort``;
    * its workunit errored or was cancelled: ``result_abort``;
    * its workunit already has a canonical result: ``result_abort_if_not_started``.
    """
    others = ctx.req.other_results
    if not others:
        return
    host = ctx.host
    assert host is not None
    names = [o.name for o in others]
    named, params = any_of("r.name", names, "text")
    # name -> (host_id, server_state, outcome, workunit error_mask, canonical_result_id)
    rows = {
        row[0]: row[1:]
        for row in fetch_rows(
            "SELECT r.name, r.host_id, r.server_state, r.outcome, w.error_mask, w.canonical_result_id"
            f" FROM work_result r JOIN work_workunit w ON w.id = r.workunit_id WHERE r.project_id = %s AND {named}",
            [ctx.project.id, *params],
        )
    }
    for name in names:
        row = rows.get(name)
        if row is None:
            ctx.aborts.append(name)
            continue
        host_id, server_state, outcome, error_mask, canonical_result_id = row
        if (
            host_id != host.id
            or (server_state == ServerState.OVER and outcome != Outcome.SUCCESS)
            or error_mask
        ):
            ctx.aborts.append(name)
        elif canonical_result_id and server_state == ServerState.IN_PROGRESS:
            ctx.aborts_if_not_started.append(name)
