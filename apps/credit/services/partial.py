"""Partial credit (CreditNew's design lets projects that grant credit by trickle-up messages
treat a partial job as a job): a stretch of a running job's runtime credited as CreditNew
credits a whole job, and recorded so the job's validation grants only the rest."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from apps.applications.models import App, AppVersion
from apps.core.db import ModelColumns, update_rows
from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.convert import credit_policy, hav_stats
from apps.credit.domain.host_scale import host_scale_factor, host_scaling_allowed
from apps.credit.domain.peak import peak_flop_count
from apps.credit.models import PartialCredit
from apps.credit.queries import locked_rows
from apps.credit.services.ledger import CREDIT_FIELDS, Ledger, add_credit
from apps.hosts.models import Host, HostAppVersion

_HOST = ModelColumns(Host, "t", ["id", "p_fpops", *CREDIT_FIELDS])


@dataclass(frozen=True, slots=True)
class PartialJob:
    """The running result a stretch of runtime is credited for (as ``CreditJob``)."""

    result_id: int
    host_id: int
    account_id: int | None
    app_version_id: int | None
    flops_estimate: float


def partial_credit_amount(
    *, app: App, job: PartialJob, runtime: float, host_p_fpops: float, now: float
) -> float:
    """CreditNew's claim for ``runtime`` seconds of the job: its peak FLOP count (runtime ×
    the peak FLOPS captured at dispatch, else the host's benchmark) scaled by its version's
    pfc_scale and, once the host's averages allow it, the host scale."""
    policy = credit_policy(app)
    pfc = peak_flop_count(runtime, job.flops_estimate if job.flops_estimate > 0 else host_p_fpops)
    version = AppVersion.objects.filter(id=job.app_version_id).first() if job.app_version_id else None
    if version is not None:
        if version.pfc_scale > 0:
            pfc *= version.pfc_scale
        hav = HostAppVersion.objects.filter(host_id=job.host_id, app_version=version).first()
        if hav is not None and host_scaling_allowed(hav_stats(hav), now=now, policy=policy):
            scale = host_scale_factor(version.pfc, hav.pfc, policy=policy)
            if scale > 0:
                pfc *= scale
    credit = pfc * COBBLESTONE_SCALE
    if policy.max_granted_credit > 0:
        credit = min(credit, policy.max_granted_credit)
    return credit if math.isfinite(credit) and credit > 0 else 0.0


def credit_grant_partial(*, app: App, job: PartialJob, runtime: float, now: datetime) -> float:
    """Grant the credit of ``runtime`` seconds of a running job to its host, user and team
    (per app too, without counting a job), and add it to the result's PartialCredit.
    Returns the credit granted. Rows are locked in credit's order: host, then account."""
    when = now.timestamp()
    with transaction.atomic():
        hosts = locked_rows(Host, [job.host_id], _HOST)
        host = hosts.get(job.host_id)
        if host is None or runtime <= 0:
            return 0.0
        amount = partial_credit_amount(app=app, job=job, runtime=runtime, host_p_fpops=host.p_fpops, now=when)
        if amount <= 0:
            return 0.0
        record, _ = PartialCredit.objects.select_for_update().get_or_create(
            result_id=job.result_id, defaults={"app": app, "update_time": now}
        )
        record.credit += amount
        record.runtime += runtime
        record.grants += 1
        record.update_time = now
        record.save(update_fields=["credit", "runtime", "grants", "update_time"])
        add_credit(host, amount, when)
        update_rows(Host, [host], CREDIT_FIELDS)
        ledger = Ledger.load(app, [job.account_id], now)
        ledger.credit(job.account_id, amount, when, job=False)
        ledger.write()
    return amount


def partial_credit_of(result_ids: list[int]) -> dict[int, float]:
    """Credit already granted by trickles, by result id (for the validation's remainder)."""
    if not result_ids:
        return {}
    return dict(PartialCredit.objects.filter(result_id__in=result_ids).values_list("result_id", "credit"))
