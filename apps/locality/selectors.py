"""Reads for locality scheduling: the scheduler's per-file queries, the working set, the admin page."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Max, QuerySet, Sum

from apps.applications.models import App
from apps.hosts.models import Host
from apps.locality.domain.savings import FileDeliveries, TransferSavings, transfer_savings_per_file
from apps.locality.models import HostFile, LocalityFile, NeedWork
from apps.locality.triggers import Trigger, trigger_exists, trigger_names, trigger_root
from apps.projects.models import Project
from apps.work.domain.states import ServerState
from apps.work.models import Result

# Hosts that contacted the scheduler this recently count as active (N in the working set's N/M files).
ACTIVE_HOST_WINDOW = timedelta(days=1)


def locality_file_map(*, project: Project, names: Iterable[str]) -> dict[str, LocalityFile]:
    return {f.name: f for f in LocalityFile.objects.filter(project=project, name__in=list(names))}


def result_unsent_for_file(*, project: Project, file_name: str, after_id: int | None) -> QuerySet[Result]:
    """Unsent results of the file's workunits above ``after_id``, in increasing id order
    (the design's per user/file invariant); the scheduler locks and slices it."""
    qs = Result.objects.filter(
        project=project, server_state=ServerState.UNSENT, workunit__locality_file_name=file_name
    )
    if after_id is not None:
        qs = qs.filter(id__gt=after_id)
    return qs.select_related("workunit").order_by("id")


def user_last_sent_ids(*, project: Project, account_id: int, file_names: Iterable[str]) -> dict[str, int]:
    """The largest result id of each file already sent to the user (one query)."""
    names = list(file_names)
    if not names:
        return {}
    rows = (
        Result.objects.filter(project=project, account_id=account_id, workunit__locality_file_name__in=names)
        .values("workunit__locality_file_name")
        .annotate(last=Max("id"))
    )
    return {row["workunit__locality_file_name"]: row["last"] for row in rows}


def file_has_results(*, project: Project, file_name: str, state: ServerState) -> bool:
    return Result.objects.filter(
        project=project, server_state=state, workunit__locality_file_name=file_name
    ).exists()


def any_file_has_unsent(*, project: Project, file_names: Iterable[str]) -> bool:
    return Result.objects.filter(
        project=project, server_state=ServerState.UNSENT, workunit__locality_file_name__in=list(file_names)
    ).exists()


def file_no_work_available(*, project: Project, file: LocalityFile | None, file_name: str) -> bool:
    """The generator said it can make no more work for the file (flag or BOINC trigger file)."""
    if file is not None and file.no_work_available:
        return True
    return trigger_exists(trigger_root(project), Trigger.NO_WORK_AVAILABLE, file_name)


def any_file_no_work_available(*, project: Project, file_names: Iterable[str]) -> bool:
    names = list(file_names)
    if LocalityFile.objects.filter(project=project, name__in=names, no_work_available=True).exists():
        return True
    root = trigger_root(project)
    return any(trigger_exists(root, Trigger.NO_WORK_AVAILABLE, name) for name in names)


def unsent_counts(*, project: Project) -> dict[str, int]:
    """Unsent results per locality file (files without any are absent)."""
    rows = (
        Result.objects.filter(project=project, server_state=ServerState.UNSENT)
        .exclude(workunit__locality_file_name="")
        .values("workunit__locality_file_name")
        .annotate(n=Count("id"))
    )
    return {row["workunit__locality_file_name"]: row["n"] for row in rows}


def working_set_names(*, project: Project) -> set[str]:
    """The working set: the manager's rows, plus file_working_set/ when a BOINC manager keeps it."""
    names = set(
        LocalityFile.objects.filter(project=project, in_working_set=True).values_list("name", flat=True)
    )
    return names | trigger_names(trigger_root(project), Trigger.WORKING_SET)


def file_holder_counts(
    *, project: Project, now: datetime, file_names: Iterable[str] | None = None
) -> dict[str, int]:
    """Active hosts holding each file (not told to delete it, seen within the active
    window); all of the project's held files when ``file_names`` is None."""
    qs = HostFile.objects.filter(
        file__project=project, delete_requested=False, last_seen__gte=now - ACTIVE_HOST_WINDOW
    )
    if file_names is not None:
        names = list(file_names)
        if not names:
            return {}
        qs = qs.filter(file__name__in=names)
    return {row["file__name"]: row["n"] for row in qs.values("file__name").annotate(n=Count("id"))}


def project_target_nresults(*, project: Project) -> int:
    """M in the working set's N/M: the largest target_nresults of the project's apps."""
    value = App.objects.filter(project=project, deprecated=False).aggregate(m=Max("target_nresults"))["m"]
    return max(1, value or 1)


def active_host_count(*, project: Project, now: datetime) -> int:
    return Host.objects.filter(project=project, rpc_time__gte=now - ACTIVE_HOST_WINDOW).count()


# --- the admin page -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileRow:
    name: str
    nbytes: int
    unsent: int
    hosts: int  # hosts that received it from the scheduler
    downloads: int
    in_working_set: bool
    no_work_available: bool
    files_no_work: bool
    no_work_since: datetime | None


@dataclass(frozen=True, slots=True)
class NeedWorkRow:
    file_name: str
    requested_time: datetime
    host_id: int | None


@dataclass(frozen=True, slots=True)
class LocalityOverview:
    working_set: list[FileRow]
    with_work: list[FileRow]
    without_work: list[FileRow]
    files_with_work: int
    files_without_work: int
    pending_need_work: list[NeedWorkRow]
    savings: TransferSavings
    measured_bytes_sent: int  # HostFile downloads × size: re-downloads after deletion included
    measured_downloads: int
    target_working_set: int


def _transfer_savings(project: Project) -> TransferSavings:
    """Counted per file by the database: the rows are at most one per large file, however
    many hosts and results the project's history holds. A file's first deliveries are the
    hosts the scheduler sent it to while they did not hold it (HostFile.downloads > 0): a
    host that already held the file when its results came downloaded nothing."""
    sizes = dict(LocalityFile.objects.filter(project=project).values_list("name", "nbytes"))
    sent = Result.objects.filter(project=project, host__isnull=False, sent_time__isnull=False).exclude(
        workunit__locality_file_name=""
    )
    rows = sent.values("workunit__locality_file_name").annotate(n=Count("id"))
    downloaded = dict(
        HostFile.objects.filter(file__project=project, downloads__gt=0)
        .values("file__name")
        .annotate(hosts=Count("id"))
        .values_list("file__name", "hosts")
    )
    per_file = [
        FileDeliveries(
            file_name=row["workunit__locality_file_name"],
            nbytes=sizes.get(row["workunit__locality_file_name"], 0),
            deliveries=row["n"],
            hosts=min(downloaded.get(row["workunit__locality_file_name"], 0), row["n"]),
        )
        for row in rows
    ]
    hosts = sent.aggregate(hosts=Count("host_id", distinct=True))["hosts"]
    return transfer_savings_per_file(per_file, hosts=hosts)


def locality_overview_get(*, project: Project, target_working_set: int, limit: int = 200) -> LocalityOverview:
    """Everything the per-project locality page shows; lists are cut at ``limit`` rows."""
    counts = unsent_counts(project=project)
    per_file = {
        row["file_id"]: row
        for row in HostFile.objects.filter(file__project=project, sent_by_scheduler=True)
        .values("file_id")
        .annotate(hosts=Count("id"), downloads=Sum("downloads"))
    }
    rows = []
    for f in LocalityFile.objects.filter(project=project).order_by("name"):
        stats = per_file.get(f.id, {})
        rows.append(
            FileRow(
                name=f.name,
                nbytes=f.nbytes,
                unsent=counts.get(f.name, 0),
                hosts=stats.get("hosts", 0),
                downloads=stats.get("downloads") or 0,
                in_working_set=f.in_working_set,
                no_work_available=f.no_work_available,
                files_no_work=f.files_no_work,
                no_work_since=f.no_work_since,
            )
        )
    with_work = [r for r in rows if r.unsent > 0]
    without_work = [r for r in rows if r.unsent == 0]
    pending = [
        NeedWorkRow(file_name=n.file.name, requested_time=n.requested_time, host_id=n.requested_by_host_id)
        for n in NeedWork.objects.filter(file__project=project, handled_time__isnull=True)
        .select_related("file")
        .order_by("requested_time")[:limit]
    ]
    measured = sum(r.downloads * r.nbytes for r in rows)
    return LocalityOverview(
        working_set=[r for r in rows if r.in_working_set][:limit],
        with_work=with_work[:limit],
        without_work=without_work[:limit],
        files_with_work=len(with_work),
        files_without_work=len(without_work),
        pending_need_work=pending,
        savings=_transfer_savings(project),
        measured_bytes_sent=measured,
        measured_downloads=sum(r.downloads for r in rows),
        target_working_set=target_working_set,
    )
