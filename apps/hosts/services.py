"""Writes on hosts and their per-app-version records."""

from __future__ import annotations

from django.db import transaction

from apps.hosts.models import HostAppVersion


def host_app_version_reset_probation(*, ids: list[int]) -> int:
    """Admin action: lift scale probation so host scaling applies again (seed 003)."""
    with transaction.atomic():
        return HostAppVersion.objects.filter(id__in=ids).update(scale_probation=False, host_scale_time=0)
