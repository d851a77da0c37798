"""BOINC's update_stats: the daily decay of recent average credit and the day's credit history."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from apps.credit.domain.rac import decay_rac
from apps.hosts.models import Host
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.volunteers.models import Account, CreditHistory, Team


def credit_update_stats(*, project: Project, now: datetime, batch: int = 1000) -> DaemonPass:
    """BOINC's update_stats: decay the recent average credit of hosts, users and teams to
    ``now`` (no new work), and write the day's credit history of users and teams.

    Each chunk of ``batch`` rows is its own transaction with its rows locked, so a
    validator granting credit meanwhile is neither lost nor decayed twice.
    """
    now_unix = now.timestamp()
    rows = 0
    for model in (Host, Account, Team):
        rows += _decay_all(model, project, now_unix, batch)
    history = _history_all(project, now, batch)
    return DaemonPass(items=rows + history, message=f"{rows} decayed, {history} history rows")


def _decay_all(model: type[Host | Account | Team], project: Project, now: float, batch: int) -> int:
    last_id, count = 0, 0
    while True:
        with transaction.atomic():
            chunk = list(
                model.objects.select_for_update()
                .filter(project=project, id__gt=last_id, expavg_time__gt=0)
                .order_by("id")[:batch]
            )
            for row in chunk:
                row.expavg_credit, row.expavg_time = decay_rac(row.expavg_credit, row.expavg_time, now)
            model.objects.bulk_update(chunk, ["expavg_credit", "expavg_time"])
        count += len(chunk)
        if len(chunk) < batch:
            return count
        last_id = chunk[-1].id


def _history_all(project: Project, now: datetime, batch: int) -> int:
    day = now.date()
    count = 0
    for owner_field, model in (("account", Account), ("team", Team)):
        last_id = 0
        while True:
            chunk = list(
                model.objects.filter(project=project, id__gt=last_id, total_credit__gt=0).order_by("id")[
                    :batch
                ]
            )
            with transaction.atomic():
                existing = {
                    getattr(h, f"{owner_field}_id"): h
                    for h in CreditHistory.objects.filter(**{f"{owner_field}__in": chunk, "day": day})
                }
                new, old = [], []
                for owner in chunk:
                    h = existing.get(owner.id)
                    if h is None:
                        new.append(
                            CreditHistory(
                                project=project,
                                day=day,
                                total_credit=owner.total_credit,
                                expavg_credit=owner.expavg_credit,
                                **{owner_field: owner},
                            )
                        )
                    else:
                        h.total_credit, h.expavg_credit = owner.total_credit, owner.expavg_credit
                        old.append(h)
                CreditHistory.objects.bulk_create(new)
                CreditHistory.objects.bulk_update(old, ["total_credit", "expavg_credit"])
            count += len(chunk)
            if len(chunk) < batch:
                break
            last_id = chunk[-1].id
    return count
