"""The validator's credit: granted credit on host/user/team totals and RAC, per-app credit,
history, host_app_version statistics, app_version pfc samples, and the feeder."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection

from apps.applications.models import AppVersion
from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.domain.quota import JobOutcome
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.credit.services import (
    HostOutcome,
    credit_grant,
    credit_normalize_app,
    host_app_versions_record_outcomes,
)
from apps.hosts.models import HostAppVersion
from apps.volunteers.models import CreditHistory
from apps.work.models import Result
from apps.work.services import workunits_transition, workunits_validate
from tests.backend.conftest import make_host, make_wu, report, results_of, send
from tests.credit.builders import credit_job, credit_workunit
from tests.factories import AppVersionFactory, PlatformFactory

pytestmark = pytest.mark.django_db


def _validated(project, app, version, hosts, now, name="wu", elapsed=(300.0, 300.0)):
    wu = make_wu(project, app, now, name=name)
    for i, r in enumerate(results_of(wu)):
        send(r, hosts[i], version, now)
        report(r, now + timedelta(hours=1), output=b"ok\n", elapsed=elapsed[i])
    workunits_transition(project=project, now=now + timedelta(hours=1))
    workunits_validate(project=project, now=now + timedelta(hours=1))
    return wu


def test_granted_credit_lands_on_host_user_and_team_totals_and_rac(project, app, version, hosts, team, now):
    wu = _validated(project, app, version, hosts, now)
    r0, r1 = results_of(wu)
    # Fresh statistics: no scaling, the claims are approximate, the design grants the default.
    expected = 1e12 * COBBLESTONE_SCALE
    assert r0.granted_credit == pytest.approx(expected)
    assert r1.granted_credit == pytest.approx(expected)
    for host in hosts[:2]:
        host.refresh_from_db()
        host.account.refresh_from_db()
        assert host.total_credit == pytest.approx(expected)
        assert host.expavg_credit > 0
        assert host.account.total_credit == pytest.approx(expected)
        assert host.account.expavg_credit > 0
    team.refresh_from_db()
    assert team.total_credit == pytest.approx(2 * expected)
    assert team.expavg_credit > 0
    assert r0.claimed_credit == pytest.approx(300 * hosts[0].p_fpops * COBBLESTONE_SCALE)


def test_per_app_credit_and_the_days_history_rows_are_written(project, app, version, hosts, team, now):
    _validated(project, app, version, hosts, now)
    account = hosts[0].account
    user_app = UserAppCredit.objects.get(account=account, app=app)
    assert user_app.njobs == 1
    assert user_app.total > 0
    assert TeamAppCredit.objects.get(team=team, app=app).njobs == 2
    day = (now + timedelta(hours=1)).date()
    assert CreditHistory.objects.get(account=account, day=day).total_credit == pytest.approx(user_app.total)
    assert CreditHistory.objects.filter(team=team, day=day).count() == 1


def test_host_app_version_statistics_are_updated(project, app, version, hosts, now):
    _validated(project, app, version, hosts, now)
    hav = HostAppVersion.objects.get(host=hosts[0], app_version=version)
    assert (hav.pfc_n, hav.et_n, hav.turnaround_n) == (1, 1, 1)
    assert hav.pfc_avg == pytest.approx(300 * hosts[0].p_fpops / 1e12)
    assert hav.turnaround_avg == pytest.approx(3600)
    assert hav.consecutive_valid == 1
    assert hav.scale_probation is False  # the first valid result ends the initial probation


def test_app_version_takes_each_pfc_sample_and_recent_credit(project, app, version, hosts, now):
    _validated(project, app, version, hosts, now, name="a")
    _validated(project, app, version, hosts, now, name="b")
    version.refresh_from_db()
    assert version.pfc_n == 4
    assert version.expavg_credit > 0


def test_invalid_result_counts_against_its_host(project, app, version, hosts, now):
    wu = make_wu(project, app, now, target_nresults=3)
    outputs = [b"1\n", b"1\n", b"2\n"]
    for i, r in enumerate(results_of(wu)):
        send(r, hosts[i], version, now)
        report(r, now, output=outputs[i])
    hav = HostAppVersion.objects.get(host=hosts[2], app_version=version)
    hav.consecutive_valid = 5
    hav.save()
    workunits_transition(project=project, now=now)
    workunits_validate(project=project, now=now)
    hav.refresh_from_db()
    assert hav.consecutive_valid == 0
    assert hav.error_rate > 0.1


def test_timeout_puts_the_host_on_probation_with_its_scale_capped(project, app, version, hosts, now):
    app.host_scale_check = True
    app.save()
    hav = HostAppVersion.objects.create(
        host=hosts[0], app=app, app_version=version, scale_probation=False, pfc_n=20, pfc_avg=0.1
    )
    version.pfc_n, version.pfc_avg = 200, 0.5
    version.save()
    host_app_versions_record_outcomes(
        outcomes=[HostOutcome(hosts[0].id, app.id, version.id, "", JobOutcome.TIMEOUT, delay_bound=86400)],
        now=now,
    )
    hav.refresh_from_db()
    assert hav.scale_probation is True
    assert hav.pfc_avg == pytest.approx(0.5)  # host scale = av avg / hav avg is at most 1 now
    assert hav.host_scale_time == pytest.approx(now.timestamp() + 86400)


def test_feeder_sets_pfc_scale_and_min_avg_pfc(project, app, version):
    other = AppVersionFactory(app=app, platform=PlatformFactory(name="windows_x86_64"))
    AppVersion.objects.filter(id=version.id).update(pfc_n=150, pfc_avg=2.0)
    AppVersion.objects.filter(id=other.id).update(pfc_n=50, pfc_avg=4.0)
    # Only one version above the threshold: the design's rule gives it scale 1.
    assert credit_normalize_app(app_id=app.id) == 2
    AppVersion.objects.filter(id=other.id).update(pfc_n=150)
    credit_normalize_app(app_id=app.id)
    version.refresh_from_db()
    other.refresh_from_db()
    app.refresh_from_db()
    assert app.min_avg_pfc == pytest.approx(3.0)
    assert version.pfc_scale == pytest.approx(1.5)
    assert other.pfc_scale == pytest.approx(0.75)
    assert credit_normalize_app(app_id=app.id) == 0  # nothing changed since


def test_credit_grant_case_a_grants_the_canonical_credit(project, app, version, hosts, now):
    job = credit_job(hosts[0], version, now, elapsed_time=10, sent_time=now.timestamp() - 100)
    [credit] = credit_grant(
        workunit=credit_workunit(app, canonical_granted_credit=12.5),
        jobs=[job],
        now=now,
    )
    assert credit.granted_credit == 12.5
    hosts[0].refresh_from_db()
    assert hosts[0].total_credit == 12.5


@pytest.mark.django_db(transaction=True)
def test_concurrent_validators_keep_every_app_version_pfc_sample(project, app, version, team, now):
    """Threads validating different workunits of one app version at once (row locks on
    PostgreSQL, the write lock on SQLite): no pfc sample and no credit is lost."""
    hosts = [make_host(project, team=team) for _ in range(8)]
    n_wus = 12
    for i in range(n_wus):
        wu = make_wu(project, app, now, name=f"c{i}")
        for j, r in enumerate(results_of(wu)):
            send(r, hosts[(i + j) % 8], version, now)
            report(r, now, output=b"same\n")
    workunits_transition(project=project, now=now)
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def validate() -> None:
        try:
            barrier.wait()
            for _ in range(3):
                workunits_validate(project=project, now=now, limit=2)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=validate) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    workunits_validate(project=project, now=now)  # whatever a thread's lost claim left
    version.refresh_from_db()
    assert version.pfc_n == 2 * n_wus
    team.refresh_from_db()
    total = sum(Result.objects.values_list("granted_credit", flat=True))
    assert team.total_credit == pytest.approx(total)
