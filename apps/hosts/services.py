"""Writes on hosts and their per-app-version records."""

from __future__ import annotations

from django.db import transaction

from apps.hosts.models import Host, HostAppVersion


def host_app_version_reset_probation(*, ids: list[int]) -> int:
    """Admin action: lift scale probation so host scaling applies again (docs/credit.md)."""
    with transaction.atomic():
        return HostAppVersion.objects.filter(id__in=ids).update(scale_probation=False, host_scale_time=0)


def hosts_block(*, ids: list[int], blocked: bool = True) -> int:
    """Admin action: block hosts from the scheduler (BOINC's block_host, ``max_results_day = -1``),
    or unblock them; how many changed."""
    with transaction.atomic():
        return Host.objects.filter(id__in=ids).exclude(blacklisted=blocked).update(blacklisted=blocked)
