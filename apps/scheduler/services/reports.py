"""Reported results: record what the client says, acknowledge every report.

A report is applied once. A replayed or duplicate report (the result is already over)
changes nothing and is acknowledged again so the client stops resending it; a report
of a result that is not this host's is acknowledged, ignored and explained.
"""

from __future__ import annotations

from django.db import connection

from apps.applications.models import App
from apps.core.db import ModelColumns, WriteBatch, any_of, update_rows
from apps.credit.convert import credit_policy, hav_apply, hav_stats, max_jobs_per_day_init
from apps.credit.domain.quota import JobOutcome, host_app_version_on_outcome
from apps.hosts.models import HostAppVersion
from apps.protocol import ReportedResult
from apps.scheduler.queries import output_files_client_report
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.context import RpcContext
from apps.work.domain.states import (
    EXIT_ABORTED_BY_CLIENT,
    EXIT_ABORTED_BY_PROJECT,
    EXIT_ABORTED_VIA_GUI,
    ClientState,
    Outcome,
    ServerState,
    result_open_to_its_host,
)
from apps.work.models import Result, Workunit
from apps.work.queries import results_with_workunits

MAX_STDERR = 64 * 1024
REPORT_FIELDS = (
    "server_state",
    "outcome",
    "client_state",
    "received_time",
    "exit_status",
    "cpu_time",
    "elapsed_time",
    "stderr_out",
    "fpops_cumulative",
    "peak_working_set_size",
)
# A reported output size is clamped to what the column holds (the parser allows up to 1e15).
MAX_OUTPUT_NBYTES = 10**15
# What applying a report reads (REPORT_FIELDS are written first); the rest stays deferred.
REPORTED_COLUMNS = (
    ModelColumns(
        Result,
        "r",
        (
            "id",
            "project",
            "app",
            "workunit",
            "name",
            "server_state",
            "outcome",
            "host",
            "app_version",
            "anonymous_proc_type",
        ),
    ),
    ModelColumns(Workunit, "w", ("id", "project", "app", "name", "delay_bound", "sequence_id")),
)
ABORT_EXIT_STATUSES = frozenset({EXIT_ABORTED_BY_CLIENT, EXIT_ABORTED_VIA_GUI, EXIT_ABORTED_BY_PROJECT})


def c_int(value: int) -> int:
    """An exit status as the client's C int holds it: Windows reports codes such as
    0xC0000005 unsigned, and the column (like BOINC's) is a signed 32-bit integer."""
    return value - 2**32 if value >= 2**31 else value


def report_outcome(report: ReportedResult) -> Outcome:
    """Success only with files uploaded and exit status 0 (the client's own rule)."""
    if report.state == ClientState.FILES_UPLOADED and report.exit_status == 0:
        return Outcome.SUCCESS
    return Outcome.CLIENT_ERROR


def results_report(ctx: RpcContext) -> list[Result]:
    """Apply the request's reports; returns the results that changed (partly loaded: see
    REPORTED_COLUMNS)."""
    reports = {r.name: r for r in ctx.req.results}
    if not reports:
        return []
    ctx.acks.extend(reports)
    host = ctx.host
    assert host is not None
    rows = _reported_rows(ctx, list(reports))
    changed: list[Result] = []
    for name, report in reports.items():
        result = rows.get(name)
        if result is None:
            ctx.message(f"Result {name} is unknown to this project; it was acknowledged and dropped.")
            continue
        if result.host_id != host.id:
            ctx.message(f"Result {name} was not sent to this computer; report ignored.")
            continue
        if not _accepts_report(result):
            continue  # a replay, or a result withdrawn: nothing changes
        _apply_report(ctx, result, report)
        changed.append(result)
    if changed:
        update_rows(Result, changed, REPORT_FIELDS, batch=ctx.writes)
        ctx.transition_time_lower((r.workunit_id for r in changed), ctx.now)
        _output_files_update(changed, reports, ctx.writes)
        _host_app_versions_update(ctx, changed)
    return changed


def _accepts_report(result: Result) -> bool:
    """In progress, or late but still welcome (``result_open_to_its_host``); anything
    reported before, or withdrawn, is left as it is."""
    return result_open_to_its_host(
        result.server_state, result.outcome, in_sequence=result.workunit.sequence_id is not None
    )


def _reported_rows(ctx: RpcContext, names: list[str]) -> dict[str, Result]:
    """The reported results by name, locked, with their workunits and (cached) versions."""
    # In id order, as the daemons lock results: a transitioner or validator batch holds many
    # workunits' results, and two lockers taking two of them in opposite orders deadlock.
    lock = " ORDER BY r.id FOR UPDATE OF r" if connection.features.has_select_for_update else ""
    named, params = any_of("r.name", names, "text")
    found = results_with_workunits(
        f"r.project_id = %s AND {named}",
        [ctx.project.id, *params],
        tail=lock,
        columns=REPORTED_COLUMNS,
    )
    versions = {v.id: v for v in project_catalog(ctx.project).versions}
    rows = {}
    for result in found:
        # A deprecated version is not in the catalog; the ORM loads it on first use.
        if result.app_version_id in versions:
            result.app_version = versions[result.app_version_id]
        rows[result.name] = result
    return rows


def _apply_report(ctx: RpcContext, result: Result, report: ReportedResult) -> None:
    outcome = report_outcome(report)
    result.server_state = ServerState.OVER
    result.outcome = outcome
    result.client_state = report.state
    result.received_time = ctx.now
    result.exit_status = c_int(report.exit_status)
    result.cpu_time = report.final_cpu_time
    result.elapsed_time = report.final_elapsed_time
    result.stderr_out = report.stderr_out[:MAX_STDERR]
    result.fpops_cumulative = report.fpops_cumulative
    result.peak_working_set_size = report.final_peak_working_set_size


def _output_files_update(
    results: list[Result], reports: dict[str, ReportedResult], batch: WriteBatch
) -> None:
    """Record the size and MD5 the client computed for outputs the server has not received.

    A received file keeps the MD5 the upload handler computed from its bytes: the
    client's report must not be able to change it. One UPDATE joins the reported
    (result, file name) pairs to the stored rows, so nothing is read first.
    """
    files: dict[tuple[int, str], tuple[str, int]] = {}  # the last report of a name wins
    for result in results:
        for reported in reports[result.name].files:
            nbytes = max(0, min(int(reported.nbytes), MAX_OUTPUT_NBYTES))
            files[(result.id, reported.name)] = (reported.md5_cksum[:32], nbytes)
    if not files:
        return
    rows = [(rid, name, md5, nbytes) for (rid, name), (md5, nbytes) in files.items()]
    output_files_client_report(rows, batch)


def _host_app_versions_update(ctx: RpcContext, results: list[Result]) -> None:
    """CreditNew's host punishment: a crash costs one job of the daily quota (an abort does
    not), a success doubles it, and errors raise the error rate and start scale probation."""
    host = ctx.host
    assert host is not None
    wanted = {r.app_id for r in results}
    apps = {i: ctx.apps[i] for i in wanted if i in ctx.apps}
    if len(apps) < len(wanted):  # deprecated apps are not in the catalog
        apps.update({a.id: a for a in App.objects.filter(id__in=wanted - set(apps))})
    havs = ctx.havs
    touched: dict[int, HostAppVersion] = {}
    for result in results:
        key = (
            result.app_id,
            result.app_version_id,
            "" if result.app_version_id else result.anonymous_proc_type,
        )
        hav = havs.get(key)
        if hav is None:
            continue
        app = apps[result.app_id]
        reference = result.app_version.pfc_avg if result.app_version else app.min_avg_pfc
        stats = host_app_version_on_outcome(
            hav_stats(hav),
            result_job_outcome(result),
            now=ctx.now_unix,
            delay_bound=result.workunit.delay_bound,
            reference_pfc_avg=reference,
            max_jobs_per_day_init=max_jobs_per_day_init(app, ctx.project),
            policy=credit_policy(app, ctx.project),
        )
        hav_apply(hav, stats)
        touched[hav.pk] = hav
    ctx.dirty_havs.update(touched)  # written with the sends' counters (host_app_versions_save)


def result_job_outcome(result: Result) -> JobOutcome:
    """How the host is judged for a reported result (success, crash, or abort)."""
    if result.outcome == Outcome.SUCCESS:
        return JobOutcome.SUCCESS
    aborted = result.client_state == ClientState.ABORTED or result.exit_status in ABORT_EXIT_STATUSES
    return JobOutcome.CLIENT_ABORTED if aborted else JobOutcome.CLIENT_ERROR
