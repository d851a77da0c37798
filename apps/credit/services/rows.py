"""Row locking shared by the credit services: rows by id in id order, host_app_versions by key."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Model, Q

from apps.applications.models import App
from apps.credit.convert import HAV_STAT_FIELDS
from apps.hosts.models import HostAppVersion

# The validator never changes the daily counter; the scheduler increments it concurrently.
HAV_VALIDATOR_FIELDS = [f for f in HAV_STAT_FIELDS if f != "n_jobs_today"]


def locked_rows(model: type[Model], ids: Iterable[int | None]) -> dict[int, Model]:
    """Rows by id, locked FOR UPDATE in id order (the order every locker here uses)."""
    wanted = sorted({i for i in ids if i is not None})
    if not wanted:
        return {}
    return {row.pk: row for row in model.objects.select_for_update().filter(id__in=wanted).order_by("id")}


def hav_key(
    host_id: int, app_version_id: int | None, anonymous_proc_type: str
) -> tuple[int, int | None, str]:
    return (host_id, app_version_id, "" if app_version_id else anonymous_proc_type)


def locked_havs(
    app: App, keys: set[tuple[int, int | None, str]]
) -> dict[tuple[int, int | None, str], HostAppVersion]:
    if not keys:
        return {}
    cond = Q()
    for host_id, version_id, proc in keys:
        if version_id:
            cond |= Q(host_id=host_id, app_version_id=version_id)
        else:
            cond |= Q(host_id=host_id, app=app, app_version__isnull=True, anonymous_proc_type=proc)
    rows = HostAppVersion.objects.select_for_update().filter(cond).order_by("id")
    return {hav_key(h.host_id, h.app_version_id, h.anonymous_proc_type): h for h in rows}
