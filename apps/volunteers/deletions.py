"""Deleted accounts are remembered for the statistics export (BOINC's user_deleted).

A receiver rather than a service: accounts are deleted through the admin and by
cascades, and every path must leave the record. Deleting a whole project records
nothing (its export goes with it).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.core import clock
from apps.projects.models import Project
from apps.volunteers.models import Account, DeletedAccount


def deleted_with_project(origin: Any) -> bool:
    """Whether a deletion started from a project (an instance or a queryset of them)."""
    return isinstance(origin, Project) or (isinstance(origin, QuerySet) and origin.model is Project)


def account_deletion_record(sender: type, instance: Account, origin: Any = None, **kwargs: Any) -> None:
    """Record an exported account about to be deleted (pre_delete: it is still readable)."""
    if deleted_with_project(origin) or not instance.stats_export_consent:
        return
    DeletedAccount.objects.update_or_create(
        project_id=instance.project_id,
        userid=instance.id,
        defaults={"cpid": instance.public_cpid, "create_time": clock.now()},
    )
