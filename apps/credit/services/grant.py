"""Granting credit for validated jobs (seed 003 "Validator changes"), with the values the
validator passes in and gets back."""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

from django.db import transaction
from django.db.models import Model

from apps.applications.models import App, AppVersion
from apps.core.domain.resources import ANONYMOUS_CODES, COBBLESTONE_SCALE, ProcType
from apps.credit.convert import (
    app_version_stats,
    credit_policy,
    hav_apply,
    hav_stats,
    max_jobs_per_day_init,
)
from apps.credit.domain.claim import PfcClaim, ValidatedJob, claimed_pfc
from apps.credit.domain.grant import granted_credit
from apps.credit.domain.peak import default_pfc
from apps.credit.domain.policy import CreditPolicy
from apps.credit.domain.quota import JobOutcome, host_app_version_on_outcome
from apps.credit.domain.rac import update_rac
from apps.credit.domain.stats import AppVersionStats, HostAppVersionStats
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.credit.services.rows import HAV_VALIDATOR_FIELDS, hav_key, locked_havs, locked_rows
from apps.hosts.models import Host, HostAppVersion
from apps.volunteers.models import Account, CreditHistory, Team

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CreditJob:
    """One valid result, as far as credit is concerned (times are Unix seconds).

    app_version_id is the AppVersion row's id, or None for anonymous platform (then
    anonymous_proc_type names the resource) or when the version is unknown.
    """

    result_id: int
    host_id: int | None
    account_id: int | None
    app_version_id: int | None
    anonymous_proc_type: str
    elapsed_time: float
    flops_estimate: float
    sent_time: float
    received_time: float


@dataclass(frozen=True, slots=True)
class CreditWorkunit:
    """The workunit fields credit needs. ``canonical_granted_credit`` is set in the validator's
    case A: a result that matches an existing canonical result gets that result's credit."""

    app_id: int
    fpops_est: float
    fpops_bound: float
    delay_bound: float
    unreplicated: bool = False
    canonical_granted_credit: float | None = None


@dataclass(frozen=True, slots=True)
class ResultCredit:
    """What the validator writes on the result row."""

    result_id: int
    claimed_credit: float
    granted_credit: float
    credit_approx: bool
    runtime_outlier: bool


def _domain_version_id(app_version_id: int | None, anonymous_proc_type: str) -> int:
    """result.app_version_id as BOINC has it: the version, -2.. for anonymous, 0 unknown."""
    if app_version_id:
        return app_version_id
    if anonymous_proc_type:
        return ANONYMOUS_CODES[ProcType(anonymous_proc_type)]
    return 0


def _validated_job(job: CreditJob, wu: CreditWorkunit) -> ValidatedJob:
    return ValidatedJob(
        app_version_id=_domain_version_id(job.app_version_id, job.anonymous_proc_type),
        fpops_est=wu.fpops_est,
        fpops_bound=wu.fpops_bound,
        elapsed_time=job.elapsed_time,
        peak_flops=job.flops_estimate,
        sent_time=job.sent_time,
        received_time=job.received_time,
    )


def _finite(x: float) -> float:
    return x if math.isfinite(x) and x >= 0 else 0.0


def _grant_amount(wu: CreditWorkunit, claims: Sequence[PfcClaim], app: App, policy: CreditPolicy) -> float:
    if wu.canonical_granted_credit is not None:
        return wu.canonical_granted_credit
    try:
        grant = granted_credit(
            claims,
            fpops_est=wu.fpops_est,
            fpops_bound=wu.fpops_bound,
            min_avg_pfc=app.min_avg_pfc,
            policy=policy,
        )
        return _finite(grant.credit)
    except ArithmeticError:
        # Extreme claims can still break the averaging; the job keeps its default credit.
        logger.warning("granted_credit failed for app %s; granting the workunit default", app.id)
        fallback = default_pfc(wu.fpops_est, app.min_avg_pfc) * COBBLESTONE_SCALE
        cap = policy.max_granted_credit
        return min(fallback, cap) if cap > 0 else fallback


def _add_credit(row: Host | Account | Team | AppVersion, amount: float, now: float, start: float) -> None:
    """total += amount (where the row has one) and BOINC's recent average credit."""
    if hasattr(row, "total_credit"):
        row.total_credit += amount
    row.expavg_credit, row.expavg_time = update_rac(
        row.expavg_credit, row.expavg_time, amount, now, work_start_time=start or None
    )


def credit_grant(*, workunit: CreditWorkunit, jobs: Sequence[CreditJob], now: datetime) -> list[ResultCredit]:
    """Credit for the newly valid results of one workunit (seed 003 "Validator changes").

    Per result: the host_app_version takes the valid outcome (probation, error rate) and
    ``claimed_pfc`` updates its pfc/et/turnaround averages and yields the claim; the
    app_version pfc average takes the sample. ``granted_credit`` decides the amount once
    for the workunit (case A: the canonical result's credit). The amount goes to the host,
    the user and the user's team (total and recent average credit), per app when the
    project keeps per-app credit, to the day's credit history and to the app version's
    recent average. Call it inside the validator's transaction, so a workunit's credit is
    granted exactly when its validation commits.
    """
    if not jobs:
        return []
    now_unix = now.timestamp()
    with transaction.atomic():
        app = App.objects.select_related("project").get(id=workunit.app_id)
        policy = credit_policy(app)
        # Hosts first: a host's scheduler RPC holds its row for the whole request, and waiting
        # for it must not also hold up every other validator on the app version's row.
        hosts = locked_rows(Host, (j.host_id for j in jobs))
        versions = locked_rows(AppVersion, (j.app_version_id for j in jobs))
        havs = _havs_for(app, jobs, versions)
        claims: list[PfcClaim] = []
        av_stats: dict[int, AppVersionStats] = {i: app_version_stats(v) for i, v in versions.items()}
        for job in jobs:
            claims.append(_claim_one(job, workunit, app, policy, versions, av_stats, havs, now_unix))
        amount = _grant_amount(workunit, claims, app, policy)
        if havs:
            HostAppVersion.objects.bulk_update(list(havs.values()), HAV_VALIDATOR_FIELDS)
        _write_versions(versions, av_stats, jobs, amount, now_unix)
        for job in jobs:
            host = hosts.get(job.host_id) if job.host_id else None
            if host is not None:
                _add_credit(host, amount, now_unix, job.sent_time)
        Host.objects.bulk_update(list(hosts.values()), ["total_credit", "expavg_credit", "expavg_time"])
        _grant_to_users(app, jobs, amount, now, now_unix)
    return [
        ResultCredit(
            result_id=job.result_id,
            claimed_credit=_finite(claim.claimed_credit),
            granted_credit=amount,
            credit_approx=claim.approx,
            runtime_outlier=claim.runtime_outlier,
        )
        for job, claim in zip(jobs, claims, strict=True)
    ]


def _havs_for(
    app: App, jobs: Sequence[CreditJob], versions: dict[int, Model]
) -> dict[tuple[int, int | None, str], HostAppVersion]:
    """The jobs' host_app_versions, locked; a missing one is created (the scheduler makes
    them on send, but a row may predate that or have been deleted by an admin)."""
    keys = {hav_key(j.host_id, j.app_version_id, j.anonymous_proc_type) for j in jobs if j.host_id}
    havs = locked_havs(app, keys)
    missing = [
        HostAppVersion(host_id=host_id, app=app, app_version_id=version_id, anonymous_proc_type=proc)
        for host_id, version_id, proc in keys - havs.keys()
        if (version_id in versions) or (not version_id and proc)
    ]
    for hav in missing:
        hav.save()
        havs[hav_key(hav.host_id, hav.app_version_id, hav.anonymous_proc_type)] = hav
    return havs


def _claim_one(
    job: CreditJob,
    wu: CreditWorkunit,
    app: App,
    policy: CreditPolicy,
    versions: dict[int, Model],
    av_stats: dict[int, AppVersionStats],
    havs: dict[tuple[int, int | None, str], HostAppVersion],
    now: float,
) -> PfcClaim:
    hav = havs.get(hav_key(job.host_id, job.app_version_id, job.anonymous_proc_type)) if job.host_id else None
    stats = hav_stats(hav) if hav is not None else HostAppVersionStats()
    version = versions.get(job.app_version_id) if job.app_version_id else None
    reference = av_stats[version.pk].pfc.avg if version is not None else app.min_avg_pfc
    # is_valid before the claim, as BOINC's validator: probation, error rate.
    stats = host_app_version_on_outcome(
        stats,
        JobOutcome.VALID,
        now=now,
        delay_bound=wu.delay_bound,
        reference_pfc_avg=reference,
        max_jobs_per_day_init=max_jobs_per_day_init(app, app.project),
        unreplicated=wu.unreplicated,
        policy=policy,
    )
    claim = claimed_pfc(
        _validated_job(job, wu),
        hav=stats,
        app_version=av_stats.get(version.pk) if version is not None else None,
        min_avg_pfc=app.min_avg_pfc,
        now=now,
        policy=policy,
    )
    if hav is not None:
        hav_apply(hav, claim.host_app_version)
    if version is not None and claim.app_version_pfc is not None:
        av_stats[version.pk] = replace(av_stats[version.pk], pfc=claim.app_version_pfc)
    return claim


def _write_versions(
    versions: dict[int, Model],
    av_stats: dict[int, AppVersionStats],
    jobs: Sequence[CreditJob],
    amount: float,
    now: float,
) -> None:
    credit_by_version: dict[int, float] = defaultdict(float)
    for job in jobs:
        if job.app_version_id in versions:
            credit_by_version[job.app_version_id] += amount
    for version_id, version in versions.items():
        assert isinstance(version, AppVersion)
        # pfc_scale is the feeder's; only the average and the recent credit are written.
        version.pfc = av_stats[version_id].pfc
        _add_credit(version, credit_by_version[version_id], now, now)
        version.save(update_fields=["pfc_n", "pfc_avg", "expavg_credit", "expavg_time"])


def _grant_to_users(
    app: App, jobs: Sequence[CreditJob], amount: float, now: datetime, now_unix: float
) -> None:
    """Users, their teams, per-app credit and the day's history, in a few bulk statements."""
    accounts = locked_rows(Account, (j.account_id for j in jobs))
    teams = locked_rows(Team, (a.team_id for a in accounts.values() if isinstance(a, Account)))
    by_app = app.project.credit_by_app
    user_app = _app_credit_rows(UserAppCredit, "account", accounts, app) if by_app else {}
    team_app = _app_credit_rows(TeamAppCredit, "team", teams, app) if by_app else {}
    for job in jobs:
        account = accounts.get(job.account_id) if job.account_id else None
        if not isinstance(account, Account):
            continue
        _add_credit(account, amount, now_unix, job.sent_time)
        team = teams.get(account.team_id) if account.team_id else None
        if team is not None:
            _add_credit(team, amount, now_unix, job.sent_time)
        if by_app:
            _add_app_credit(user_app[account.pk], amount, now_unix, job.sent_time)
            if team is not None:
                _add_app_credit(team_app[team.pk], amount, now_unix, job.sent_time)
    fields = ["total_credit", "expavg_credit", "expavg_time"]
    Account.objects.bulk_update(list(accounts.values()), fields)
    Team.objects.bulk_update(list(teams.values()), fields)
    app_fields = ["njobs", "total", "expavg", "expavg_time"]
    UserAppCredit.objects.bulk_update(list(user_app.values()), app_fields)
    TeamAppCredit.objects.bulk_update(list(team_app.values()), app_fields)
    _history(now.date(), "account", accounts)
    _history(now.date(), "team", teams)


def _app_credit_rows(
    model: type[UserAppCredit] | type[TeamAppCredit], owner: str, owners: dict[int, Model], app: App
) -> dict[int, Any]:
    """The owners' per-app rows, created where missing (the owners are locked, so no race)."""
    if not owners:
        return {}
    rows = {
        getattr(r, f"{owner}_id"): r
        for r in model.objects.filter(app=app, **{f"{owner}_id__in": list(owners)})
    }
    missing = [model(app=app, **{f"{owner}_id": pk}) for pk in owners if pk not in rows]
    for row in model.objects.bulk_create(missing):
        rows[getattr(row, f"{owner}_id")] = row
    return rows


def _history(day: date, owner: str, owners: dict[int, Model]) -> None:
    """The day's CreditHistory row of each owner (account or team) holds its current credit."""
    if not owners:
        return
    existing = {
        getattr(h, f"{owner}_id"): h
        for h in CreditHistory.objects.filter(day=day, **{f"{owner}_id__in": list(owners)})
    }
    new = []
    for pk, row in owners.items():
        assert isinstance(row, Account | Team)
        h = existing.get(pk)
        if h is None:
            new.append(
                CreditHistory(
                    project_id=row.project_id,
                    day=day,
                    total_credit=row.total_credit,
                    expavg_credit=row.expavg_credit,
                    **{f"{owner}_id": pk},
                )
            )
        else:
            h.total_credit, h.expavg_credit = row.total_credit, row.expavg_credit
    CreditHistory.objects.bulk_create(new)
    CreditHistory.objects.bulk_update(list(existing.values()), ["total_credit", "expavg_credit"])


def _add_app_credit(row: UserAppCredit | TeamAppCredit, amount: float, now: float, start: float) -> None:
    row.njobs += 1
    row.total += amount
    row.expavg, row.expavg_time = update_rac(
        row.expavg, row.expavg_time, amount, now, work_start_time=start or None
    )
