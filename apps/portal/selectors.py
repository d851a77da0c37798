"""Read-side queries for the dashboard and server_status (what BOINC's status page shows)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Avg, Count, Max, Min, Q, Sum

from apps.applications.models import App
from apps.hosts.models import Host
from apps.projects.models import DaemonRun, Project
from apps.volunteers.models import Account
from apps.work.domain.states import AssimilateState, FileDeleteState, Outcome, ServerState
from apps.work.models import Result, Workunit

# Periods (seconds) after which a daemon that has not run is shown as not running.
DAEMON_PERIODS: dict[str, int] = {
    "transitioner": 10,
    "validator": 10,
    "assimilator": 15,
    "file_deleter": 60,
    "db_purge": 3600,
    "feeder": 600,
    "sequence_deadlines": 300,
    "batches": 60,
    "working_set": 60,
    "update_stats": 86400,
    "db_dump": 86400,
}


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    name: str
    state: str  # "running", "not running", "disabled"
    last_run: datetime | None
    duration: float
    items: int
    errors: int
    message: str


@dataclass(frozen=True, slots=True)
class AppStatus:
    name: str
    user_friendly_name: str
    unsent: int
    in_progress: int
    avg_runtime: float | None
    min_runtime: float | None
    max_runtime: float | None
    users_last_24h: int


@dataclass(frozen=True, slots=True)
class ServerStatus:
    project: Project
    results_ready_to_send: int
    results_in_progress: int
    workunits_waiting_validation: int
    workunits_waiting_assimilation: int
    workunits_waiting_deletion: int
    results_waiting_deletion: int
    transitioner_backlog_hours: float
    users_with_credit: int
    users_with_recent_credit: int
    users_last_24h: int
    hosts_with_credit: int
    hosts_with_recent_credit: int
    hosts_last_24h: int
    current_gflops: float
    apps: list[AppStatus]
    daemons: list[DaemonStatus]


def job_counts_get(*, project: Project) -> list[tuple[str, int]]:
    """BOINC's server_status.php?counts=1 figures, in its order and names."""
    results = Result.objects.filter(project=project)
    wus = Workunit.objects.filter(project=project)
    return [
        ("results_ready_to_send", results.filter(server_state=ServerState.UNSENT).count()),
        ("results_in_progress", results.filter(server_state=ServerState.IN_PROGRESS).count()),
        ("results_need_file_delete", results.filter(file_delete_state=FileDeleteState.READY).count()),
        ("wus_need_validate", wus.filter(need_validate=True).count()),
        ("wus_need_assimilate", wus.filter(assimilate_state=AssimilateState.READY).count()),
        ("wus_need_file_delete", wus.filter(file_delete_state=FileDeleteState.READY).count()),
    ]


def _last_run(*, project: Project, daemon: str) -> DaemonRun | None:
    """The later of the project's last run of ``daemon`` and the last portal-wide one.

    Two lookups on the (project, daemon, -started) index: one query with project OR NULL
    would read and sort every run the daemon ever recorded (a row per busy pass)."""
    runs = [
        DaemonRun.objects.filter(project=project, daemon=daemon).order_by("-started").first(),
        DaemonRun.objects.filter(project__isnull=True, daemon=daemon).order_by("-started").first(),
    ]
    return max((r for r in runs if r is not None), key=lambda r: r.started, default=None)


def daemon_status_list(*, project: Project, now: datetime) -> list[DaemonStatus]:
    """Last run of each daemon for the project, or portal-wide runs (project empty)."""
    statuses = []
    for name, period in DAEMON_PERIODS.items():
        run = _last_run(project=project, daemon=name)
        if project.is_daemon_paused(name):
            state = "disabled"
        elif run is not None and (now - run.started).total_seconds() <= max(3 * period, 120):
            state = "running"
        else:
            state = "not running"
        statuses.append(
            DaemonStatus(
                name=name,
                state=state,
                last_run=run.started if run else None,
                duration=run.duration if run else 0.0,
                items=run.items if run else 0,
                errors=run.errors if run else 0,
                message=run.message if run else "",
            )
        )
    return statuses


def result_counts_by_app(*, project: Project) -> dict[tuple[int, int], int]:
    """(app id, server state) -> results, for unsent and in-progress results.

    One grouped query on the (project, server_state, outcome) index for every app, not a
    join of each app with all its results."""
    rows = (
        Result.objects.filter(project=project, server_state__in=(ServerState.UNSENT, ServerState.IN_PROGRESS))
        .values_list("app_id", "server_state")
        .annotate(n=Count("id"))
    )
    return {(app_id, state): n for app_id, state, n in rows}


def app_status_list(
    *, project: Project, now: datetime, counts: dict[tuple[int, int], int] | None = None
) -> list[AppStatus]:
    """Each non-deprecated app's queue and its last day's runtimes: a fixed number of
    queries however many apps there are."""
    if counts is None:
        counts = result_counts_by_app(project=project)
    day_ago = now - timedelta(days=1)
    recent = {
        row["app_id"]: row
        for row in Result.objects.filter(
            project=project,
            server_state=ServerState.OVER,
            outcome=Outcome.SUCCESS,
            received_time__gte=day_ago,
        )
        .values("app_id")
        .annotate(
            avg=Avg("elapsed_time"),
            min=Min("elapsed_time"),
            max=Max("elapsed_time"),
            users=Count("account", distinct=True),
        )
    }
    out = []
    for app in App.objects.filter(project=project, deprecated=False):
        row = recent.get(app.id, {})
        out.append(
            AppStatus(
                name=app.name,
                user_friendly_name=app.user_friendly_name or app.name,
                unsent=counts.get((app.id, ServerState.UNSENT), 0),
                in_progress=counts.get((app.id, ServerState.IN_PROGRESS), 0),
                avg_runtime=row.get("avg"),
                min_runtime=row.get("min"),
                max_runtime=row.get("max"),
                users_last_24h=row.get("users", 0),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class WorkBacklog:
    """What the back-end daemons have still to do for a project (BOINC's status counts)."""

    workunits_waiting_transition: int
    workunits_waiting_validation: int
    workunits_waiting_assimilation: int
    workunits_waiting_deletion: int
    results_waiting_deletion: int
    transitioner_backlog_seconds: float  # how late the most overdue transition is


def work_backlog_get(*, project: Project, now: datetime) -> WorkBacklog:
    # Each count reads one (partial) index rather than every result or workunit of the project.
    wus = Workunit.objects.filter(project=project)
    oldest = wus.filter(transition_time__lt=now).aggregate(oldest=Min("transition_time"))["oldest"]
    return WorkBacklog(
        workunits_waiting_transition=wus.filter(transition_time__lte=now).count(),
        workunits_waiting_validation=wus.filter(need_validate=True).count(),
        workunits_waiting_assimilation=wus.filter(assimilate_state=AssimilateState.READY).count(),
        workunits_waiting_deletion=wus.filter(file_delete_state=FileDeleteState.READY).count(),
        results_waiting_deletion=Result.objects.filter(
            project=project, file_delete_state=FileDeleteState.READY
        ).count(),
        transitioner_backlog_seconds=(now - oldest).total_seconds() if oldest else 0.0,
    )


def server_status_get(*, project: Project, now: datetime) -> ServerStatus:
    counts = result_counts_by_app(project=project)
    backlog = work_backlog_get(project=project, now=now)
    day_ago = now - timedelta(days=1)
    accounts = Account.objects.filter(project=project).aggregate(
        credit=Count("id", filter=Q(total_credit__gt=0)),
        recent=Count("id", filter=Q(expavg_credit__gt=1)),
        new=Count("id", filter=Q(create_time__gte=day_ago)),
    )
    hosts = Host.objects.filter(project=project).aggregate(
        credit=Count("id", filter=Q(total_credit__gt=0)),
        recent=Count("id", filter=Q(expavg_credit__gt=1)),
        new=Count("id", filter=Q(create_time__gte=day_ago)),
        rac=Sum("expavg_credit"),
    )
    return ServerStatus(
        project=project,
        results_ready_to_send=sum(n for (_, state), n in counts.items() if state == ServerState.UNSENT),
        results_in_progress=sum(n for (_, state), n in counts.items() if state == ServerState.IN_PROGRESS),
        workunits_waiting_validation=backlog.workunits_waiting_validation,
        workunits_waiting_assimilation=backlog.workunits_waiting_assimilation,
        workunits_waiting_deletion=backlog.workunits_waiting_deletion,
        results_waiting_deletion=backlog.results_waiting_deletion,
        transitioner_backlog_hours=round(backlog.transitioner_backlog_seconds / 3600, 2),
        users_with_credit=accounts["credit"],
        users_with_recent_credit=accounts["recent"],
        users_last_24h=accounts["new"],
        hosts_with_credit=hosts["credit"],
        hosts_with_recent_credit=hosts["recent"],
        hosts_last_24h=hosts["new"],
        # 200 credits a day is one GFLOPS sustained (BOINC's cobblestone scale).
        current_gflops=round((hosts["rac"] or 0.0) / 200.0, 2),
        apps=app_status_list(project=project, now=now, counts=counts),
        daemons=daemon_status_list(project=project, now=now),
    )
