"""Deleted hosts are remembered for the statistics export (BOINC's host_deleted).

Hosts go when an admin deletes them or their account; a host was exported only if its
owner consented, so only such hosts are recorded. See apps.volunteers.deletions.
"""

from __future__ import annotations

from typing import Any

from apps.core import clock
from apps.hosts.models import DeletedHost, Host
from apps.volunteers.deletions import deleted_with_project
from apps.volunteers.models import Account


def host_deletion_record(sender: type, instance: Host, origin: Any = None, **kwargs: Any) -> None:
    """Record an exported host about to be deleted (pre_delete: its owner is still readable)."""
    if deleted_with_project(origin):
        return
    consent = Account.objects.filter(id=instance.account_id).values_list("stats_export_consent", flat=True)
    if not consent.first():
        return
    DeletedHost.objects.update_or_create(
        project_id=instance.project_id,
        hostid=instance.id,
        defaults={"host_cpid": instance.host_cpid, "create_time": clock.now()},
    )
