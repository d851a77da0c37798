"""Granting credit for validated jobs (CreditNew in the validator), with the values the
validator passes in and gets back."""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.models import Model
from django.db.models.signals import post_save

from apps.applications.models import App, AppVersion
from apps.core.db import ModelColumns, update_rows
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
from apps.credit.domain.stats import AppVersionStats, HostAppVersionStats
from apps.credit.queries import HAV_VALIDATOR_FIELDS, HavKey, hav_key, locked_havs, locked_rows
from apps.credit.services.ledger import CREDIT_FIELDS, Ledger, add_credit
from apps.credit.services.outcomes import HostOutcome
from apps.credit.services.partial import partial_credit_of
from apps.hosts.models import Host, HostAppVersion

logger = logging.getLogger(__name__)

# What credit reads and writes of the wide host rows (the rest is deferred).
_HOST = ModelColumns(Host, "t", ["id", *CREDIT_FIELDS])
_VERSION_FIELDS = ["pfc_n", "pfc_avg", "expavg_credit", "expavg_time"]


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
class JudgedWorkunit:
    """One workunit of a validator's batch: its newly valid results (credited) and the hosts
    of its newly invalid ones (``HostOutcome`` with JobOutcome.INVALID), judged after them."""

    workunit: CreditWorkunit
    valid: Sequence[CreditJob] = ()
    invalid: Sequence[HostOutcome] = ()


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


def credit_grant(
    *, workunit: CreditWorkunit, jobs: Sequence[CreditJob], now: datetime, app: App | None = None
) -> list[ResultCredit]:
    """Credit for the newly valid results of one workunit (``credit_grant_batch`` of one)."""
    if not jobs:
        return []
    return credit_grant_batch(workunits=[JudgedWorkunit(workunit, jobs)], now=now, app=app)[0]


def credit_grant_batch(
    *, workunits: Sequence[JudgedWorkunit], now: datetime, app: App | None = None
) -> list[list[ResultCredit]]:
    """Credit for the newly valid results of several workunits of one app, as
    CreditNew's validator grants it, and the outcome of their newly invalid ones; for each workunit, the
    credit of its valid jobs in their order.

    Per valid result: the host_app_version takes the valid outcome (probation, error rate) and
    ``claimed_pfc`` updates its pfc/et/turnaround averages and yields the claim; the
    app_version pfc average takes the sample. ``granted_credit`` decides the amount once per
    workunit (case A: the canonical result's credit). The amount goes to the host, the user
    and the user's team (total and recent average credit), per app when the project keeps
    per-app credit, to the day's credit history and to the app version's recent average.
    Then each invalid result counts against its host_app_version (error rate, probation).

    The workunits are taken one after another in the order given, each seeing the running
    averages the ones before it left, so the outcome is the same as one call per workunit in
    that order; but each table is read once and written once for the whole batch. Call it
    inside the validator's transaction, so credit is granted exactly when the validation
    commits. ``app`` (with its project) is the workunits' app if the caller has read it in
    this transaction already.
    """
    if not any(w.valid or w.invalid for w in workunits):
        return [[] for _ in workunits]
    app_ids = {w.workunit.app_id for w in workunits}
    if len(app_ids) != 1:
        raise ValueError("credit_grant_batch takes the workunits of one app")
    # No savepoint: inside the validator's transaction a failure rolls back the whole batch
    # anyway, and a savepoint costs two more round trips.
    with transaction.atomic(savepoint=False):
        if app is None or app.pk not in app_ids:
            app = App.objects.select_related("project").get(id=app_ids.pop())
        batch = _Batch.load(app, workunits, now)
        credits = [batch.judge(w) for w in workunits]
        batch.write()
    return credits


@dataclass(slots=True)
class _Batch:
    """The rows a batch credits, locked, with the running values the workunits update in turn.

    Rows are locked in one order, the same in every module here (apps.credit.services): a
    host's scheduler RPC locks its host_app_versions, then (at its first write) its host row,
    so host_app_versions come before hosts here too, or the two deadlock (the validator has
    locked them already, before the results). Hosts before the app versions, so waiting for a
    host does not hold up every validator of the version.
    """

    app: App
    policy: CreditPolicy
    quota: int
    now: float
    havs: dict[HavKey, HostAppVersion]
    stats: dict[HavKey, HostAppVersionStats]
    hosts: dict[int, Model]
    versions: dict[int, Model]
    av_stats: dict[int, AppVersionStats]
    ledger: Ledger
    # Credit already granted by trickles, by result id: the validation grants the rest.
    partial: dict[int, float]
    new_havs: dict[HavKey, HostAppVersion] = field(default_factory=dict)
    credited_versions: set[int] = field(default_factory=set)

    @classmethod
    def load(cls, app: App, workunits: Sequence[JudgedWorkunit], now: datetime) -> _Batch:
        jobs = [j for w in workunits for j in w.valid]
        judged = [o for w in workunits for o in w.invalid]
        keys = {hav_key(j.host_id, j.app_version_id, j.anonymous_proc_type) for j in jobs if j.host_id}
        keys |= {hav_key(o.host_id, o.app_version_id, o.anonymous_proc_type) for o in judged}
        havs = locked_havs(app, keys)
        hosts = locked_rows(Host, (j.host_id for j in jobs), _HOST)
        # Only the versions of valid jobs take credit: those are locked. The versions of
        # invalid results are read for their averages alone, and locking them too would hold
        # up every other validator of the version for nothing.
        versions = locked_rows(AppVersion, (j.app_version_id for j in jobs))
        read = {o.app_version_id for o in judged if o.app_version_id} - versions.keys()
        averages = {**AppVersion.objects.in_bulk(read), **versions} if read else versions
        return cls(
            app=app,
            policy=credit_policy(app),
            quota=max_jobs_per_day_init(app, app.project),
            now=now.timestamp(),
            havs=havs,
            stats={key: hav_stats(hav) for key, hav in havs.items()},
            hosts=hosts,
            versions=versions,
            av_stats={i: app_version_stats(v) for i, v in averages.items()},
            ledger=Ledger.load(app, (j.account_id for j in jobs), now),
            partial=partial_credit_of([j.result_id for j in jobs]),
        )

    def judge(self, w: JudgedWorkunit) -> list[ResultCredit]:
        """One workunit: its valid jobs' claims and credit, then its invalid results."""
        claims = [self._claim(job, w.workunit) for job in w.valid]
        credits: list[ResultCredit] = []
        if w.valid:
            amount = _grant_amount(w.workunit, claims, self.app, self.policy)
            self._credit(w.valid, amount)
            credits = [
                ResultCredit(
                    result_id=job.result_id,
                    claimed_credit=_finite(claim.claimed_credit),
                    granted_credit=amount,
                    credit_approx=claim.approx,
                    runtime_outlier=claim.runtime_outlier,
                )
                for job, claim in zip(w.valid, claims, strict=True)
            ]
        for outcome in w.invalid:
            self._invalid(outcome)
        return credits

    def _hav_stats(self, job: CreditJob) -> tuple[HavKey | None, HostAppVersionStats]:
        """The job's host_app_version statistics, and its key if they are kept. A missing row
        is made (the scheduler makes them on send, but a row may predate that or have been
        deleted by an admin), unless the job has no version to make it for."""
        if not job.host_id:
            return None, HostAppVersionStats()
        key = hav_key(job.host_id, job.app_version_id, job.anonymous_proc_type)
        if key not in self.stats:
            version_id, proc = key[1], key[2]
            if not ((version_id in self.versions) or (not version_id and proc)):
                return None, HostAppVersionStats()
            hav = HostAppVersion(
                host_id=key[0], app=self.app, app_version_id=version_id, anonymous_proc_type=proc
            )
            self.new_havs[key] = self.havs[key] = hav
            self.stats[key] = hav_stats(hav)
        return key, self.stats[key]

    def _claim(self, job: CreditJob, wu: CreditWorkunit) -> PfcClaim:
        key, stats = self._hav_stats(job)
        version = self.versions.get(job.app_version_id) if job.app_version_id else None
        reference = self.av_stats[version.pk].pfc.avg if version is not None else self.app.min_avg_pfc
        # is_valid before the claim, as BOINC's validator: probation, error rate.
        stats = host_app_version_on_outcome(
            stats,
            JobOutcome.VALID,
            now=self.now,
            delay_bound=wu.delay_bound,
            reference_pfc_avg=reference,
            max_jobs_per_day_init=self.quota,
            unreplicated=wu.unreplicated,
            policy=self.policy,
        )
        claim = claimed_pfc(
            _validated_job(job, wu),
            hav=stats,
            app_version=self.av_stats.get(version.pk) if version is not None else None,
            min_avg_pfc=self.app.min_avg_pfc,
            now=self.now,
            policy=self.policy,
        )
        if key is not None:
            self.stats[key] = claim.host_app_version
        if version is not None and claim.app_version_pfc is not None:
            self.av_stats[version.pk] = replace(self.av_stats[version.pk], pfc=claim.app_version_pfc)
        return claim

    def _credit(self, jobs: Sequence[CreditJob], amount: float) -> None:
        # An app version takes one workunit's credit in one addition, as a call per workunit
        # did, so its recent average comes out the same to the last bit.
        by_version: dict[int, float] = defaultdict(float)
        for job in jobs:
            if job.app_version_id in self.versions:
                by_version[job.app_version_id] += amount
        for version_id, credit in by_version.items():
            add_credit(self.versions[version_id], credit, self.now)
            self.credited_versions.add(version_id)
        for job in jobs:
            rest = max(amount - self.partial.get(job.result_id, 0.0), 0.0)
            host = self.hosts.get(job.host_id) if job.host_id else None
            if host is not None:
                add_credit(host, rest, self.now)
            self.ledger.credit(job.account_id, rest, self.now)

    def _invalid(self, o: HostOutcome) -> None:
        """Error rate, probation and quota of an invalid result's host_app_version (one that
        does not exist is not made)."""
        key = hav_key(o.host_id, o.app_version_id, o.anonymous_proc_type)
        if key not in self.stats:
            return
        version = self.av_stats.get(o.app_version_id) if o.app_version_id else None
        self.stats[key] = host_app_version_on_outcome(
            self.stats[key],
            o.outcome,
            now=self.now,
            delay_bound=o.delay_bound,
            reference_pfc_avg=version.pfc.avg if version is not None else self.app.min_avg_pfc,
            max_jobs_per_day_init=self.quota,
            unreplicated=o.unreplicated,
            policy=self.policy,
        )

    def write(self) -> None:
        """Each table once: host_app_versions (new ones inserted with their statistics), app
        versions, hosts, then accounts, teams, per-app credit and history."""
        for key, hav in self.havs.items():
            hav_apply(hav, self.stats[key])
        update_rows(
            HostAppVersion, [h for k, h in self.havs.items() if k not in self.new_havs], HAV_VALIDATOR_FIELDS
        )
        if self.new_havs:
            HostAppVersion.objects.bulk_create(self.new_havs.values())
        versions = [self.versions[i] for i in sorted(self.credited_versions)]
        for version in versions:
            assert isinstance(version, AppVersion)
            # pfc_scale is the feeder's; only the average and the recent credit are written.
            version.pfc = self.av_stats[version.pk].pfc
        update_rows(AppVersion, versions, _VERSION_FIELDS)
        self._versions_saved(versions)
        update_rows(Host, list(self.hosts.values()), CREDIT_FIELDS)
        self.ledger.write()

    def _versions_saved(self, versions: list[Model]) -> None:
        """As save() would: the scheduler's catalog drops this process's cached versions (their
        pfc averages) on AppVersion saves. Its receiver looks at version.app: give it the app
        already loaded rather than a query per version."""
        for version in versions:
            assert isinstance(version, AppVersion)
            if version.app_id == self.app.pk:
                version.app = self.app
            post_save.send(
                sender=AppVersion,
                instance=version,
                created=False,
                update_fields=frozenset(_VERSION_FIELDS),
                raw=False,
                using=DEFAULT_DB_ALIAS,
            )
