"""Dead rows: hosts and accounts that never took part, archived then deleted by db_purge.

Large projects collect millions of hosts attached once and never heard from again, and
accounts made and never used; every whole-table pass (the statistics export, update_stats)
and every admin list pays for them. Off unless a setting names an age:

* COBBLESTONE_PURGE_IDLE_HOSTS_DAYS: a host with no credit (total_credit 0) whose last
  scheduler contact (its creation, if it never made one) is older than this, and that no
  result row names (its results are purged first, by db_purge's own rule);
* COBBLESTONE_PURGE_IDLE_ACCOUNTS_DAYS: an account with no credit, no host, no result row,
  no web login (its creation, if never) within this time, that founded no team, has no
  job-submission rights or batches, and is not being deleted already.

Each pass takes up to ``limit`` of each, in id order, appends one JSON line per row to
``<archive_dir>/purged_hosts_YYYY-MM-DD.jsonl.gz`` or ``purged_accounts_…`` (every column
but the account's password hash and authenticator; format as db_purge's archive) and then
deletes them through the ORM, so the deletion records the statistics export lists (deleted
hosts and users, apps.hosts.deletions and apps.volunteers.deletions) are written as for any
other deletion.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Coalesce

from apps.core.db import ModelColumns
from apps.hosts.models import Host
from apps.projects.models import Project
from apps.volunteers.models import Account
from apps.work.models import Result
from apps.work.services.purge import archive_append, row_record

ARCHIVE_FORMAT = 1
# Secrets stay out of the archive: the account can no longer log in, and a copy of its keys
# on disk would outlive it.
_ACCOUNT_SECRETS = frozenset({"passwd_hash", "authenticator"})


def idle_hosts(project: Project, now: datetime, days: int) -> models.QuerySet[Host]:
    """The project's hosts the idle-host rule removes (module doc), in id order."""
    cutoff = now - timedelta(days=days)
    return (
        Host.objects.filter(project=project, total_credit=0)
        .alias(last_contact=Coalesce("rpc_time", "create_time"))
        .filter(last_contact__lt=cutoff)
        .exclude(Exists(Result.objects.filter(host=OuterRef("pk"))))
        .order_by("id")
    )


def idle_accounts(project: Project, now: datetime, days: int) -> models.QuerySet[Account]:
    """The project's accounts the idle-account rule removes (module doc), in id order."""
    cutoff = now - timedelta(days=days)
    return (
        Account.objects.filter(
            project=project, total_credit=0, deleted_time__isnull=True, delete_after__isnull=True
        )
        .alias(last_login=Coalesce("last_login_time", "create_time"))
        .filter(last_login__lt=cutoff)
        .exclude(Exists(Host.objects.filter(account=OuterRef("pk"))))
        .exclude(Exists(Result.objects.filter(account=OuterRef("pk"))))
        .exclude(Q(founded_teams__isnull=False) | Q(submitter__isnull=False) | Q(batches__isnull=False))
        .order_by("id")
    )


def dead_rows_purge(*, project: Project, now: datetime, limit: int) -> int:
    """One pass of both rules, each if its setting is on; how many rows it removed."""
    removed = 0
    host_days = settings.COBBLESTONE_PURGE_IDLE_HOSTS_DAYS
    if host_days > 0:
        removed += _archive_delete(project, now, "hosts", idle_hosts(project, now, host_days), limit)
    account_days = settings.COBBLESTONE_PURGE_IDLE_ACCOUNTS_DAYS
    if account_days > 0:
        removed += _archive_delete(project, now, "accounts", idle_accounts(project, now, account_days), limit)
    return removed


def _archive_delete(
    project: Project, now: datetime, kind: str, rows: models.QuerySet[Any], limit: int
) -> int:
    with transaction.atomic():
        picked = list(rows.select_for_update(skip_locked=True, of=("self",))[:limit])
        if not picked:
            return 0
        columns = ModelColumns(rows.model, "t")
        records = []
        for row in picked:
            record = {k: v for k, v in row_record(row, columns).items() if k not in _ACCOUNT_SECRETS}
            records.append({"format": ARCHIVE_FORMAT, "archived_at": now.isoformat(), kind[:-1]: record})
        archive_append(project.archive_dir / f"purged_{kind}_{now.date():%Y-%m-%d}.jsonl.gz", records)
        rows.model.objects.filter(id__in=[r.id for r in picked]).delete()
    return len(picked)
