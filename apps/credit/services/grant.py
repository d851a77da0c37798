"""Granting credit for validated jobs (seed 003 "Validator changes"), with the values the
validator passes in and gets back."""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime

from django.db import DEFAULT_DB_ALIAS, connection, transaction
from django.db.models import Model
from django.db.models.signals import post_save

from apps.applications.models import App, AppVersion
from apps.core.db import ModelColumns, fetch_rows, placeholders, update_rows
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

# What credit reads and writes of the wide host, account and team rows (the rest is deferred).
CREDIT_FIELDS = ["total_credit", "expavg_credit", "expavg_time"]
_HOST = ModelColumns(Host, "t", ["id", *CREDIT_FIELDS])
_ACCOUNT = ModelColumns(Account, "t", ["id", "project", "team", *CREDIT_FIELDS])
_TEAM = ModelColumns(Team, "t", ["id", "project", *CREDIT_FIELDS])
_VERSION_FIELDS = ["pfc_n", "pfc_avg", "expavg_credit", "expavg_time"]
_APP_CREDIT_FIELDS = ["njobs", "total", "expavg", "expavg_time"]
_USER_APP = ModelColumns(UserAppCredit, "c")
_TEAM_APP = ModelColumns(TeamAppCredit, "c")
_HISTORY = ModelColumns(CreditHistory, "h")


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


def _add_credit(row: Host | Account | Team | AppVersion, amount: float, now: float) -> None:
    """total += amount (where the row has one) and BOINC's recent average credit."""
    if hasattr(row, "total_credit"):
        row.total_credit += amount
    row.expavg_credit, row.expavg_time = update_rac(row.expavg_credit, row.expavg_time, amount, now)


def credit_grant(
    *, workunit: CreditWorkunit, jobs: Sequence[CreditJob], now: datetime, app: App | None = None
) -> list[ResultCredit]:
    """Credit for the newly valid results of one workunit (seed 003 "Validator changes").

    Per result: the host_app_version takes the valid outcome (probation, error rate) and
    ``claimed_pfc`` updates its pfc/et/turnaround averages and yields the claim; the
    app_version pfc average takes the sample. ``granted_credit`` decides the amount once
    for the workunit (case A: the canonical result's credit). The amount goes to the host,
    the user and the user's team (total and recent average credit), per app when the
    project keeps per-app credit, to the day's credit history and to the app version's
    recent average. Call it inside the validator's transaction, so a workunit's credit is
    granted exactly when its validation commits.

    ``app`` (with its project) is the workunit's app if the caller has read it in this
    transaction already. Each table is read once and written once, whatever the number of
    jobs: the validator runs this for every workunit.
    """
    if not jobs:
        return []
    now_unix = now.timestamp()
    # No savepoint: inside the validator's transaction a failure rolls back the whole
    # workunit anyway, and a savepoint costs two more round trips per workunit.
    with transaction.atomic(savepoint=False):
        if app is None or app.pk != workunit.app_id:
            app = App.objects.select_related("project").get(id=workunit.app_id)
        policy = credit_policy(app)
        # A host's scheduler RPC locks its host_app_versions, then (at its first write) its
        # host row: host_app_versions before hosts here too, or the two deadlock (the
        # validator has locked them already, before the results). Hosts before the app
        # version, so waiting for a host does not hold up every validator of the version.
        havs = locked_havs(app, _hav_keys(jobs))
        hosts = locked_rows(Host, (j.host_id for j in jobs), _HOST)
        versions = locked_rows(AppVersion, (j.app_version_id for j in jobs))
        _havs_create_missing(app, jobs, versions, havs)
        claims: list[PfcClaim] = []
        av_stats: dict[int, AppVersionStats] = {i: app_version_stats(v) for i, v in versions.items()}
        for job in jobs:
            claims.append(_claim_one(job, workunit, app, policy, versions, av_stats, havs, now_unix))
        amount = _grant_amount(workunit, claims, app, policy)
        update_rows(HostAppVersion, list(havs.values()), HAV_VALIDATOR_FIELDS)
        _write_versions(app, versions, av_stats, jobs, amount, now_unix)
        for job in jobs:
            host = hosts.get(job.host_id) if job.host_id else None
            if host is not None:
                _add_credit(host, amount, now_unix)
        update_rows(Host, list(hosts.values()), CREDIT_FIELDS)
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


def _hav_keys(jobs: Sequence[CreditJob]) -> set[tuple[int, int | None, str]]:
    return {hav_key(j.host_id, j.app_version_id, j.anonymous_proc_type) for j in jobs if j.host_id}


def _havs_create_missing(
    app: App,
    jobs: Sequence[CreditJob],
    versions: dict[int, Model],
    havs: dict[tuple[int, int | None, str], HostAppVersion],
) -> None:
    """Create the jobs' missing host_app_versions (the scheduler makes them on send, but a row
    may predate that or have been deleted by an admin) and add them to ``havs``."""
    missing = [
        HostAppVersion(host_id=host_id, app=app, app_version_id=version_id, anonymous_proc_type=proc)
        for host_id, version_id, proc in _hav_keys(jobs) - havs.keys()
        if (version_id in versions) or (not version_id and proc)
    ]
    for hav in missing:
        hav.save()
        havs[hav_key(hav.host_id, hav.app_version_id, hav.anonymous_proc_type)] = hav


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
    app: App,
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
        _add_credit(version, credit_by_version[version_id], now)
    update_rows(AppVersion, list(versions.values()), _VERSION_FIELDS)
    # As save() would: the scheduler's catalog drops this process's cached versions (their
    # pfc averages) on AppVersion saves. Its receiver looks at version.app: give it the app
    # already loaded rather than a query per version.
    for version in versions.values():
        assert isinstance(version, AppVersion)
        if version.app_id == app.pk:
            version.app = app
        post_save.send(
            sender=AppVersion,
            instance=version,
            created=False,
            update_fields=frozenset(_VERSION_FIELDS),
            raw=False,
            using=DEFAULT_DB_ALIAS,
        )


def _grant_to_users(
    app: App, jobs: Sequence[CreditJob], amount: float, now: datetime, now_unix: float
) -> None:
    """Users, their teams, per-app credit and the day's history, one statement per table."""
    accounts = locked_rows(Account, (j.account_id for j in jobs), _ACCOUNT)
    teams = locked_rows(Team, (a.team_id for a in accounts.values() if isinstance(a, Account)), _TEAM)
    by_app = app.project.credit_by_app
    user_app, team_app = _app_credit_rows(app, accounts, teams) if by_app else ({}, {})
    for job in jobs:
        account = accounts.get(job.account_id) if job.account_id else None
        if not isinstance(account, Account):
            continue
        _add_credit(account, amount, now_unix)
        team = teams.get(account.team_id) if account.team_id else None
        if team is not None:
            _add_credit(team, amount, now_unix)
        if by_app:
            _add_app_credit(user_app[account.pk], amount, now_unix)
            if team is not None:
                _add_app_credit(team_app[team.pk], amount, now_unix)
    update_rows(Account, list(accounts.values()), CREDIT_FIELDS)
    update_rows(Team, list(teams.values()), CREDIT_FIELDS)
    for model, rows in ((UserAppCredit, user_app), (TeamAppCredit, team_app)):
        # A row made by _app_credit_rows is inserted with its credit, not inserted then updated.
        new = [r for r in rows.values() if r._state.adding]
        update_rows(model, [r for r in rows.values() if not r._state.adding], _APP_CREDIT_FIELDS)
        model.objects.bulk_create(new)
    _history(now.date(), accounts, teams)


def _app_credit_rows(
    app: App, accounts: dict[int, Model], teams: dict[int, Model]
) -> tuple[dict[int, UserAppCredit], dict[int, TeamAppCredit]]:
    """The accounts' and teams' per-app rows, by owner id, read in one statement (both tables
    have the same columns in the same order); a missing one is made here, unsaved (the
    owners are locked, so no other validator makes it meanwhile)."""
    parts, params = [], []
    for kind, (cols, owner, owners) in enumerate(
        ((_USER_APP, "account_id", accounts), (_TEAM_APP, "team_id", teams))
    ):
        if owners:
            table = connection.ops.quote_name(cols.model._meta.db_table)
            parts.append(
                f"SELECT {kind}, {cols.sql()} FROM {table} c WHERE c.app_id = %s AND c.{owner} IN ({placeholders(owners)})"
            )
            params += [app.pk, *owners]
    user_app: dict[int, UserAppCredit] = {}
    team_app: dict[int, TeamAppCredit] = {}
    for row in fetch_rows(" UNION ALL ".join(parts), params) if parts else ():
        if row[0] == 0:
            u = _USER_APP.build(row, 1)
            user_app[u.account_id] = u
        else:
            t = _TEAM_APP.build(row, 1)
            team_app[t.team_id] = t
    # Made in the owners' (id) order, so the inserted rows get their ids in that order.
    user_app = {pk: user_app.get(pk) or UserAppCredit(app=app, account_id=pk) for pk in accounts}
    team_app = {pk: team_app.get(pk) or TeamAppCredit(app=app, team_id=pk) for pk in teams}
    return user_app, team_app


def _history(day: date, accounts: dict[int, Model], teams: dict[int, Model]) -> None:
    """The day's CreditHistory row of each account and team holds its current credit: one
    read for both owners, one insert of the missing rows, one update of the others."""
    if not accounts and not teams:
        return
    conds, params = [], [CreditHistory._meta.get_field("day").get_db_prep_value(day, connection)]
    for column, owners in (("account_id", accounts), ("team_id", teams)):
        if owners:
            conds.append(f"h.{column} IN ({placeholders(owners)})")
            params += list(owners)
    table = connection.ops.quote_name(CreditHistory._meta.db_table)
    sql = f"SELECT {_HISTORY.sql()} FROM {table} h WHERE h.day = %s AND ({' OR '.join(conds)})"
    existing: dict[str, dict[int, CreditHistory]] = {"account": {}, "team": {}}
    for h in (_HISTORY.build(row) for row in fetch_rows(sql, params)):
        if h.account_id in accounts:
            existing["account"][h.account_id] = h
        if h.team_id in teams:
            existing["team"][h.team_id] = h
    new: list[CreditHistory] = []
    changed: dict[int, CreditHistory] = {}
    for owner, rows in (("account", accounts), ("team", teams)):
        for pk, row in rows.items():
            assert isinstance(row, Account | Team)
            h = existing[owner].get(pk)
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
                changed[h.pk] = h
    CreditHistory.objects.bulk_create(new)
    update_rows(CreditHistory, list(changed.values()), ["total_credit", "expavg_credit"])


def _add_app_credit(row: UserAppCredit | TeamAppCredit, amount: float, now: float) -> None:
    row.njobs += 1
    row.total += amount
    row.expavg, row.expavg_time = update_rac(row.expavg, row.expavg_time, amount, now)
