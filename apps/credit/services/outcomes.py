"""Error rate, host punishment and scale probation for judged jobs (docs/credit.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from apps.applications.models import App, AppVersion
from apps.core.db import update_rows
from apps.credit.convert import (
    credit_policy,
    hav_apply,
    hav_stats,
    max_jobs_per_day_init,
)
from apps.credit.domain.quota import JobOutcome, host_app_version_on_outcome
from apps.credit.queries import HAV_VALIDATOR_FIELDS, hav_key, locked_havs
from apps.hosts.models import HostAppVersion


@dataclass(frozen=True, slots=True)
class HostOutcome:
    """A judged job of a host: valid, invalid (the validator) or timed out (the transitioner)."""

    host_id: int
    app_id: int
    app_version_id: int | None
    anonymous_proc_type: str
    outcome: JobOutcome
    delay_bound: float
    unreplicated: bool = False


def host_app_versions_record_outcomes(
    *, outcomes: Sequence[HostOutcome], now: datetime, app: App | None = None
) -> int:
    """CreditNew's error rate, host punishment and scale probation for judged jobs.

    VALID: consecutive valid, probation may end; INVALID: error rate up, consecutive valid
    reset; TIMEOUT: the daily quota loses one job, error rate up, probation (the domain caps
    the host's scale at 1) and the turnaround average takes the delay bound. Returns the
    number of host_app_version rows updated; jobs without a row are skipped. ``app`` (with
    its project) is one the caller has already read in its transaction; it is not read again.
    """
    if not outcomes:
        return 0
    now_unix = now.timestamp()
    by_app: dict[int, list[HostOutcome]] = defaultdict(list)
    for o in outcomes:
        by_app[o.app_id].append(o)
    updated = 0
    # No savepoint: the callers' transactions (validator, transitioner) are all or nothing.
    with transaction.atomic(savepoint=False):
        apps = {app.pk: app} if app is not None and app.pk in by_app else {}
        missing = by_app.keys() - apps.keys()
        if missing:
            apps |= {a.id: a for a in App.objects.select_related("project").filter(id__in=missing)}
        for app_id, items in sorted(by_app.items()):
            if app_id in apps:
                updated += _record_for_app(apps[app_id], items, now_unix)
    return updated


def _record_for_app(app: App, items: Sequence[HostOutcome], now: float) -> int:
    havs = locked_havs(app, {hav_key(o.host_id, o.app_version_id, o.anonymous_proc_type) for o in items})
    references: dict[int | None, float] = dict(
        AppVersion.objects.filter(id__in={o.app_version_id for o in items if o.app_version_id}).values_list(
            "id", "pfc_avg"
        )
    )
    policy = credit_policy(app)
    quota = max_jobs_per_day_init(app, app.project)
    touched: dict[int, HostAppVersion] = {}
    for o in items:
        hav = havs.get(hav_key(o.host_id, o.app_version_id, o.anonymous_proc_type))
        if hav is None:
            continue
        stats = host_app_version_on_outcome(
            hav_stats(hav),
            o.outcome,
            now=now,
            delay_bound=o.delay_bound,
            reference_pfc_avg=references.get(o.app_version_id, app.min_avg_pfc),
            max_jobs_per_day_init=quota,
            unreplicated=o.unreplicated,
            policy=policy,
        )
        hav_apply(hav, stats)
        touched[hav.pk] = hav
    update_rows(HostAppVersion, list(touched.values()), HAV_VALIDATOR_FIELDS)
    return len(touched)
