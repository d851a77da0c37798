"""Read queries behind the volunteer pages; each page is a handful of queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Avg, Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from apps.applications.models import App, AppVersion
from apps.credit.convert import max_jobs_per_day_init
from apps.credit.domain.quota import initial_max_jobs_per_day
from apps.credit.models import UserAppCredit
from apps.hosts.models import Host, HostAppVersion
from apps.projects.models import Project
from apps.volunteers.models import Account, CreditHistory, Team
from apps.work.domain.states import ValidateState
from apps.work.models import Result

TOP_ORDER = {"recent": "-expavg_credit", "total": "-total_credit"}


def top_accounts(project: Project, order: str) -> QuerySet[Account]:
    return (
        Account.objects.filter(project=project, deleted_time__isnull=True)
        .select_related("team")
        .order_by(TOP_ORDER[order], "id")
    )


def top_hosts(project: Project, order: str) -> QuerySet[Host]:
    return Host.objects.filter(project=project).select_related("account").order_by(TOP_ORDER[order], "id")


def top_teams(project: Project, order: str) -> QuerySet[Team]:
    # Members counted per team shown (a subquery on the account's team index), not by a join
    # and GROUP BY over every account before the page is cut.
    members = (
        Account.objects.filter(team=OuterRef("pk"))
        .order_by()
        .values("team")
        .annotate(n=Count("*"))
        .values("n")
    )
    return (
        Team.objects.filter(project=project)
        .select_related("founder")
        .annotate(nusers=Coalesce(Subquery(members), 0))
        .order_by(TOP_ORDER[order], "id")
    )


def credit_history(*, account: Account | None = None, team: Team | None = None) -> list[tuple]:
    rows = (
        CreditHistory.objects.filter(account=account) if account else CreditHistory.objects.filter(team=team)
    )
    return list(rows.order_by("day").values_list("day", "total_credit"))


def app_breakdown(account: Account) -> QuerySet[UserAppCredit]:
    return UserAppCredit.objects.filter(account=account).select_related("app").order_by("-total")


@dataclass(frozen=True, slots=True)
class VersionStats:
    """One row of a host page: how an app version does on this host (CreditNew's statistics)."""

    label: str
    jobs_valid: int
    avg_credit: float | None
    error_rate: float
    turnaround_avg: float
    turnaround_n: float
    scale_probation: bool
    max_jobs_per_day: int | None  # the quota per CPU or GPU the scheduler uses; None: no quota
    consecutive_valid: int


def _daily_quota(hav: HostAppVersion, project: Project) -> int | None:
    """What the scheduler applies: a row not yet initialised (0) starts at the app's (else
    the project's) initial quota, and with no initial quota there is no limit at all."""
    init = max_jobs_per_day_init(hav.app, project)
    return initial_max_jobs_per_day(hav.max_jobs_per_day, init) if init > 0 else None


def host_version_stats(host: Host, project: Project) -> list[VersionStats]:
    credit = {
        (row["app_id"], row["app_version_id"], row["anonymous_proc_type"]): row
        for row in Result.objects.filter(host=host, validate_state=ValidateState.VALID)
        .values("app_id", "app_version_id", "anonymous_proc_type")
        .annotate(n=Count("id"), avg=Avg("granted_credit"))
    }
    out = []
    havs = HostAppVersion.objects.filter(host=host).select_related("app", "app_version__platform")
    for hav in havs:
        label = (
            str(hav.app_version)
            if hav.app_version
            else f"{hav.app.name} (anonymous {hav.anonymous_proc_type})"
        )
        row = credit.get((hav.app_id, hav.app_version_id, hav.anonymous_proc_type), {})
        out.append(
            VersionStats(
                label=label,
                jobs_valid=row.get("n", 0),
                avg_credit=row.get("avg"),
                error_rate=hav.error_rate,
                turnaround_avg=hav.turnaround_avg,
                turnaround_n=hav.turnaround_n,
                scale_probation=hav.scale_probation,
                max_jobs_per_day=_daily_quota(hav, project),
                consecutive_valid=hav.consecutive_valid,
            )
        )
    return out


def project_totals(project: Project) -> dict:
    """Users (deleted accounts left out) and credit (theirs counted: it was earned)."""
    return Account.objects.filter(project=project).aggregate(
        users=Count("id", filter=Q(deleted_time__isnull=True)),
        credit=Sum("total_credit"),
        active=Count("id", filter=Q(expavg_credit__gt=1)),
    )


# --- the XML web RPCs ---------------------------------------------------------------------

RPC_MAX_TEAMS = 100  # team_lookup.php answers at most this many teams, as BOINC's


def teams_named(project: Project, text: str) -> list[Team]:
    """Teams whose name contains ``text`` (any case), most recent credit first."""
    return list(
        Team.objects.filter(project=project, name__icontains=text).order_by("-expavg_credit", "id")[
            :RPC_MAX_TEAMS
        ]
    )


def teams_with_ids(project: Project, ids: list[int]) -> list[Team]:
    """The teams of these ids that exist, in the order asked."""
    found = Team.objects.filter(project=project, pk__in=ids[:RPC_MAX_TEAMS]).in_bulk()
    return [found[i] for i in dict.fromkeys(ids[:RPC_MAX_TEAMS]) if i in found]


def team_members(team: Team) -> QuerySet[Account]:
    return team.members.order_by("id")


def apps_current_versions(project: Project) -> list[tuple[App, list[AppVersion]]]:
    """The project's apps and, per platform and plan class, the newest version (apps.php)."""
    versions = (
        AppVersion.objects.filter(
            app__project=project, app__deprecated=False, deprecated=False, platform__deprecated=False
        )
        .select_related("platform")
        .order_by("app_id", "platform__name", "plan_class", "-version_num")
    )
    newest: dict[int, dict[tuple[str, str], AppVersion]] = {}
    for version in versions:
        newest.setdefault(version.app_id, {}).setdefault((version.platform.name, version.plan_class), version)
    apps = App.objects.filter(project=project, deprecated=False).order_by("id")
    return [(app, list(newest.get(app.pk, {}).values())) for app in apps]
