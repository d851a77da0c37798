"""BOINC's update_stats: the daily decay of recent average credit and the day's credit history."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Exp

from apps.credit.domain.rac import CREDIT_HALF_LIFE
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.hosts.models import Host
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.volunteers.models import Account, CreditHistory, Team

# Its DaemonRun name: the credit chart reads the day of its last pass.
UPDATE_STATS_DAEMON = "update_stats"
# Hosts', users' and teams' averages at or below this are left as they are, as BOINC's
# update_stats leaves them: a recent average only tends to 0, so without a floor every
# host that ever earned credit would be rewritten every day, decades after it left.
DECAY_FLOOR = 0.1


def credit_update_stats(*, project: Project, now: datetime, batch: int = 1000) -> DaemonPass:
    """BOINC's update_stats: decay the recent average credit of hosts, users and teams (and
    of users' and teams' credit per app) to ``now`` (no new work), and write the day's credit
    history of the users and teams whose total is not already their last history row's.

    Each chunk of ``batch`` rows is its own transaction with its rows locked, so a
    validator granting credit meanwhile is neither lost nor decayed twice. Every row is
    decayed to the same ``now``, so figures shown side by side (a user's average and its
    per-app ones, a team's and its members') are of the same moment.
    """
    now_unix = now.timestamp()
    rows = 0
    for model in (Host, Account, Team):
        owned = model.objects.filter(project=project)
        rows += _decay_all(owned, "expavg_credit", now_unix, batch, floor=DECAY_FLOOR)
    rows += _decay_all(UserAppCredit.objects.filter(account__project=project), "expavg", now_unix, batch)
    rows += _decay_all(TeamAppCredit.objects.filter(team__project=project), "expavg", now_unix, batch)
    history = _history_all(project, now, batch)
    return DaemonPass(items=rows + history, message=f"{rows} decayed, {history} history rows")


def _decay_all(rows: QuerySet[Any], avg_field: str, now: float, batch: int, *, floor: float = 0.0) -> int:
    """Decay ``avg_field`` (and its ``expavg_time``) of ``rows`` to ``now`` as decay_rac does,
    ``batch`` rows a transaction, by one UPDATE each computing the decay in the database.

    Only rows with an average above ``floor`` are read: at a large project's size most rows
    never earned credit or are idle, and reading every row cost minutes. A row updated after
    ``now`` (a grant since the pass took its time) keeps its newer figure, as decay_rac
    leaves it. The chunk's rows are locked in id order first, the order validators lock
    them in, so the two never deadlock; the UPDATE re-reads a row a grant committed meanwhile.
    """
    model = rows.model
    pending = list(
        rows.filter(expavg_time__gt=0, expavg_time__lte=now, **{f"{avg_field}__gt": floor})
        .order_by("id")
        .values_list("id", flat=True)
    )
    # decay_rac's factor exp(-(now - t) * ln2 / half_life), as one expression on the row.
    factor = Exp((Value(now) - F("expavg_time")) * Value(-math.log(2) / CREDIT_HALF_LIFE))
    count = 0
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        with transaction.atomic():
            locked = list(
                model.objects.select_for_update(no_key=True)
                .filter(id__in=chunk, expavg_time__lte=now)
                .order_by("id")
                .values_list("id", flat=True)
            )
            count += model.objects.filter(id__in=locked, expavg_time__lte=now).update(
                **{avg_field: F(avg_field) * factor, "expavg_time": now}
            )
    return count


def _history_all(project: Project, now: datetime, batch: int) -> int:
    """The day's CreditHistory row of each user and team with credit whose total differs
    from their last row's (or who have none yet), from their totals.

    A grant writes the day's row itself (apps.credit.services.ledger), so the others'
    totals are already on record: the credit chart carries a total forward over the days
    with no row (apps.portal.volunteer_selectors.credit_history). Writing every owner's row
    every day cost most of the pass and a year of those rows hundreds of millions.

    Each chunk of owners is read with SELECT ... FOR UPDATE in the transaction that writes
    their rows, in id order as the validator locks them (apps.credit.services; users and
    teams in separate transactions, so no account is locked while a team is awaited). A
    grant to an owner then either commits first and is read here, or waits and writes the
    day's row itself afterwards: the row never falls behind the totals. The rows are
    written by one upsert, so a pass the same day (or an overlapping one) updates them.
    """
    day = now.date()
    count = 0
    for owner_field, model in (("account", Account), ("team", Team)):
        last = (
            CreditHistory.objects.filter(**{owner_field: OuterRef("pk")})
            .order_by("-day")
            .values("total_credit")[:1]
        )
        stale = list(
            model.objects.filter(project=project, total_credit__gt=0)
            .alias(last_total=Subquery(last))
            .filter(
                Q(last_total__isnull=True)
                | Q(last_total__lt=F("total_credit"))
                | Q(last_total__gt=F("total_credit"))
            )
            .order_by("id")
            .values_list("id", flat=True)
        )
        for start in range(0, len(stale), batch):
            ids = stale[start : start + batch]
            with transaction.atomic():
                chunk: list[Any] = list(  # accounts or teams: mypy joins the two to Model
                    model.objects.select_for_update()
                    .filter(id__in=ids)
                    .only("id", "total_credit", "expavg_credit")
                    .order_by("id")
                )
                CreditHistory.objects.bulk_create(
                    [
                        CreditHistory(
                            project=project,
                            day=day,
                            total_credit=owner.total_credit,
                            expavg_credit=owner.expavg_credit,
                            **{f"{owner_field}_id": owner.id},
                        )
                        for owner in chunk
                    ],
                    update_conflicts=True,
                    unique_fields=[owner_field, "day"],
                    update_fields=["total_credit", "expavg_credit"],
                )
            count += len(chunk)
    return count
