"""Read queries behind the task pages (results.php, result.php, workunit.php) and their JSON."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet

from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.domain import default_pfc
from apps.hosts.models import Host
from apps.portal.task_states import AWAITING_VALIDATION, FILTERS, TaskFilter
from apps.projects.models import Project
from apps.volunteers.models import Account
from apps.work.models import Result, Workunit


@dataclass(frozen=True, slots=True)
class TaskSummary:
    """An account's or a computer's tasks at a glance: how many in each of BOINC's filters,
    the credit granted (its total credit) and the credit its completed tasks wait for."""

    counts: dict[TaskFilter, int]
    granted_credit: float
    pending_credit: float


def _owner(account: Account | None, host: Host | None) -> Q:
    if account is not None:
        return Q(account=account)
    if host is not None:
        return Q(host=host)
    raise ValueError("an account or a host")


def task_list(
    *,
    project: Project,
    account: Account | None = None,
    host: Host | None = None,
    state: TaskFilter = TaskFilter.ALL,
    app_id: int | None = None,
    names: bool = False,
) -> QuerySet[Result]:
    """The tasks sent to an account or a computer, newest first, as results.php lists them;
    with ``names``, each with its workunit's name (``workunit_name``)."""
    rows = Result.objects.filter(_owner(account, host), FILTERS[state], project=project)
    if app_id is not None:
        rows = rows.filter(app_id=app_id)
    if names:
        rows = rows.annotate(workunit_name=F("workunit__name"))
    return rows.select_related("app", "app_version__platform").order_by("-sent_time", "-id")


def task_summary(
    *, project: Project, account: Account | None = None, host: Host | None = None
) -> TaskSummary:
    """Counts per filter in one query; the pending credit estimated as the validator's
    fallback grants it (the workunit's estimated FLOPs at the app's scale), since the real
    figure is decided only when the task is validated."""
    owner = Result.objects.filter(_owner(account, host), project=project)
    counts = owner.aggregate(**{f.name: Count("id", filter=FILTERS[f]) for f in TaskFilter})
    pending = owner.filter(AWAITING_VALIDATION).values_list("workunit__rsc_fpops_est", "app__min_avg_pfc")
    estimate = sum(default_pfc(fpops, min_avg) for fpops, min_avg in pending) * COBBLESTONE_SCALE
    total = (account or host).total_credit  # type: ignore[union-attr]  # callers give one of the two
    return TaskSummary(
        counts={f: counts[f.name] for f in TaskFilter},
        granted_credit=total,
        pending_credit=estimate,
    )


def pending_claims(*, project: Project, account: Account) -> list[tuple[Result, float]]:
    """The account's tasks awaiting validation with their claimed credit (pending.php): the
    stored claim, else the estimate the task pages add up (task_summary)."""
    rows = (
        Result.objects.filter(AWAITING_VALIDATION, project=project, account=account)
        .annotate(fpops=F("workunit__rsc_fpops_est"), min_avg=F("app__min_avg_pfc"))
        .order_by("id")
    )
    return [(r, r.claimed_credit or default_pfc(r.fpops, r.min_avg) * COBBLESTONE_SCALE) for r in rows]


def task_get(*, project: Project, result_id: int | None = None, name: str | None = None) -> Result | None:
    rows = Result.objects.filter(project=project).select_related(
        "app", "app_version__platform", "workunit", "host"
    )
    if result_id is not None:
        return rows.filter(pk=result_id).first()
    return rows.filter(name=name).first() if name else None


def workunit_get(*, project: Project, wu_id: int) -> Workunit | None:
    return Workunit.objects.filter(project=project, pk=wu_id).select_related("app").first()


def workunit_tasks(workunit: Workunit) -> QuerySet[Result]:
    return workunit.results.select_related("app", "app_version__platform").order_by("id")


def workunit_inputs(workunit: Workunit) -> list[tuple[str, float]]:
    """(name the app opens, size in bytes) of each input file."""
    return [
        (ref.open_name or ref.file.name, ref.file.nbytes)
        for ref in workunit.file_refs.select_related("file").order_by("id")
    ]
