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


def daemon_status_list(*, project: Project, now: datetime) -> list[DaemonStatus]:
    """Last run of each daemon for the project, or portal-wide runs (project empty)."""
    statuses = []
    for name, period in DAEMON_PERIODS.items():
        run = (
            DaemonRun.objects.filter(Q(project=project) | Q(project__isnull=True), daemon=name)
            .order_by("-started")
            .first()
        )
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


def app_status_list(*, project: Project, now: datetime) -> list[AppStatus]:
    day_ago = now - timedelta(days=1)
    apps = App.objects.filter(project=project, deprecated=False).annotate(
        unsent=Count("results", filter=Q(results__server_state=ServerState.UNSENT)),
        in_progress=Count("results", filter=Q(results__server_state=ServerState.IN_PROGRESS)),
    )
    out = []
    for app in apps:
        recent = Result.objects.filter(
            app=app, outcome=Outcome.SUCCESS, received_time__gte=day_ago, server_state=ServerState.OVER
        ).aggregate(
            avg=Avg("elapsed_time"),
            min=Min("elapsed_time"),
            max=Max("elapsed_time"),
            users=Count("account", distinct=True),
        )
        out.append(
            AppStatus(
                name=app.name,
                user_friendly_name=app.user_friendly_name or app.name,
                unsent=app.unsent,
                in_progress=app.in_progress,
                avg_runtime=recent["avg"],
                min_runtime=recent["min"],
                max_runtime=recent["max"],
                users_last_24h=recent["users"],
            )
        )
    return out


def server_status_get(*, project: Project, now: datetime) -> ServerStatus:
    results = Result.objects.filter(project=project)
    counts = results.aggregate(
        unsent=Count("id", filter=Q(server_state=ServerState.UNSENT)),
        in_progress=Count("id", filter=Q(server_state=ServerState.IN_PROGRESS)),
        delete=Count("id", filter=Q(file_delete_state=FileDeleteState.READY)),
    )
    wus = Workunit.objects.filter(project=project)
    wu_counts = wus.aggregate(
        validate=Count("id", filter=Q(need_validate=True)),
        assimilate=Count("id", filter=Q(assimilate_state=AssimilateState.READY)),
        delete=Count("id", filter=Q(file_delete_state=FileDeleteState.READY)),
        oldest=Min("transition_time", filter=Q(transition_time__lt=now)),
    )
    backlog = (now - wu_counts["oldest"]).total_seconds() / 3600 if wu_counts["oldest"] else 0.0
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
        results_ready_to_send=counts["unsent"],
        results_in_progress=counts["in_progress"],
        workunits_waiting_validation=wu_counts["validate"],
        workunits_waiting_assimilation=wu_counts["assimilate"],
        workunits_waiting_deletion=wu_counts["delete"],
        results_waiting_deletion=counts["delete"],
        transitioner_backlog_hours=round(backlog, 2),
        users_with_credit=accounts["credit"],
        users_with_recent_credit=accounts["recent"],
        users_last_24h=accounts["new"],
        hosts_with_credit=hosts["credit"],
        hosts_with_recent_credit=hosts["recent"],
        hosts_last_24h=hosts["new"],
        # 200 credits a day is one GFLOPS sustained (seed 003's cobblestone scale).
        current_gflops=round((hosts["rac"] or 0.0) / 200.0, 2),
        apps=app_status_list(project=project, now=now),
        daemons=daemon_status_list(project=project, now=now),
    )
