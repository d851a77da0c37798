"""A validator's batch of workunits is credited as one call per workunit in id order would
credit it, to the last bit, when several of its results credit the same host, account, team,
app version and host_app_version (whose running averages each sample moves in turn)."""

# The fixtures come from another suite's conftest, imported below; tests name them as arguments.
# ruff: noqa: F811

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.applications.models import AppVersion
from apps.credit.domain.quota import JobOutcome
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.credit.queries import HAV_VALIDATOR_FIELDS
from apps.credit.services import (
    CreditJob,
    CreditWorkunit,
    HostOutcome,
    JudgedWorkunit,
    credit_grant,
    credit_grant_batch,
    host_app_versions_record_outcomes,
)
from apps.hosts.models import Host, HostAppVersion
from apps.volunteers.models import Account, CreditHistory, Team
from tests.backend.conftest import app, make_host, project, team, version  # noqa: F401  (fixtures)
from tests.factories import HostFactory

pytestmark = pytest.mark.django_db

FPOPS_EST = 1e12


@dataclass(frozen=True)
class Job:
    host: int  # index into the hosts
    anonymous: bool
    elapsed: float


@dataclass(frozen=True)
class Wu:
    valid: tuple[Job, ...]
    invalid: tuple[Job, ...]
    canonical_credit: float | None
    unreplicated: bool


jobs = st.builds(
    Job,
    host=st.integers(min_value=0, max_value=3),
    anonymous=st.booleans(),
    elapsed=st.floats(min_value=50, max_value=3000),
)
workunits = st.lists(
    st.builds(
        Wu,
        valid=st.lists(jobs, max_size=3).map(tuple),
        invalid=st.lists(jobs, max_size=2).map(tuple),
        canonical_credit=st.none() | st.floats(min_value=0.5, max_value=50),
        unreplicated=st.booleans(),
    ),
    min_size=1,
    max_size=6,
)


@pytest.fixture
def credited(project, app, version, team):
    """Four hosts (the first two of one user) in one team: the first two with settled
    statistics near their thresholds, so host scaling starts within a batch; the last with no
    host_app_version yet. The version is near its 100 samples and off probation checks."""
    app.host_scale_check = True
    app.min_avg_pfc = 2.0
    app.save()
    AppVersion.objects.filter(id=version.id).update(pfc_n=97, pfc_avg=3.0, pfc_scale=0.8)
    first = make_host(project, team=team)
    second = HostFactory(account=first.account, project=project)
    hosts = [first, second, make_host(project, team=team), make_host(project)]
    for host, n in zip(hosts[:3], (9, 12, 2), strict=True):
        HostAppVersion.objects.create(
            host=host, app=app, app_version=version, pfc_n=n, pfc_avg=2.5, scale_probation=False
        )
    return hosts


def _judged(wus: list[Wu], hosts, app, version, now) -> list[JudgedWorkunit]:
    result_ids = iter(range(1, 1000))

    def credit_job(job: Job) -> CreditJob:
        host = hosts[job.host]
        return CreditJob(
            result_id=next(result_ids),
            host_id=host.id,
            account_id=host.account_id,
            app_version_id=None if job.anonymous else version.id,
            anonymous_proc_type="CPU" if job.anonymous else "",
            elapsed_time=job.elapsed,
            flops_estimate=3e9,
            sent_time=now.timestamp() - 7200,
            received_time=now.timestamp() - 60,
        )

    def outcome(job: Job) -> HostOutcome:
        host = hosts[job.host]
        return HostOutcome(
            host_id=host.id,
            app_id=app.id,
            app_version_id=None if job.anonymous else version.id,
            anonymous_proc_type="CPU" if job.anonymous else "",
            outcome=JobOutcome.INVALID,
            delay_bound=86400,
        )

    return [
        JudgedWorkunit(
            workunit=CreditWorkunit(
                app_id=app.id,
                fpops_est=FPOPS_EST,
                fpops_bound=1e15,
                delay_bound=86400,
                unreplicated=wu.unreplicated,
                canonical_granted_credit=wu.canonical_credit,
            ),
            valid=[credit_job(j) for j in wu.valid],
            invalid=[outcome(j) for j in wu.invalid],
        )
        for wu in wus
    ]


def _credit_state() -> dict[str, list[tuple]]:
    """Every row credit writes, by its natural key (rows made within a run get new ids)."""
    credit = ("total_credit", "expavg_credit", "expavg_time")
    return {
        "hosts": list(Host.objects.order_by("id").values_list("id", *credit)),
        "accounts": list(Account.objects.order_by("id").values_list("id", *credit)),
        "teams": list(Team.objects.order_by("id").values_list("id", *credit)),
        "versions": list(
            AppVersion.objects.order_by("id").values_list(
                "id", "pfc_n", "pfc_avg", "expavg_credit", "expavg_time"
            )
        ),
        "havs": sorted(
            HostAppVersion.objects.values_list(
                "host_id", "app_version_id", "anonymous_proc_type", *HAV_VALIDATOR_FIELDS
            ),
            key=repr,
        ),
        "user_app": sorted(
            UserAppCredit.objects.values_list("account_id", "njobs", "total", "expavg", "expavg_time")
        ),
        "team_app": sorted(
            TeamAppCredit.objects.values_list("team_id", "njobs", "total", "expavg", "expavg_time")
        ),
        "history": sorted(
            CreditHistory.objects.values_list(
                "account_id", "team_id", "day", "total_credit", "expavg_credit"
            ),
            key=repr,
        ),
    }


def _rolled_back(run):
    """What ``run`` returns and the credit state it leaves, then undone."""
    with transaction.atomic():
        returned = run()
        state = _credit_state()
        transaction.set_rollback(True)
    return returned, state


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wus=workunits)
def test_a_batch_is_credited_as_its_workunits_one_after_another(credited, app, version, now, wus):
    judged = _judged(wus, credited, app, version, now)

    def one_by_one() -> list:
        credits = []
        for w in judged:
            credits.append(credit_grant(workunit=w.workunit, jobs=w.valid, now=now))
            host_app_versions_record_outcomes(outcomes=w.invalid, now=now)
        return credits

    batch = _rolled_back(lambda: credit_grant_batch(workunits=judged, now=now))
    assert batch == _rolled_back(one_by_one)
