"""CreditNew's credit paths through the validator (and, for probation, the scheduler): how
replicated claims combine, anonymous-platform credit, and scale probation."""

# The fixtures come from another suite's conftest, imported below; tests name them as arguments.
# ruff: noqa: F811

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.applications.models import AppVersion
from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.hosts.models import HostAppVersion
from apps.work.models import Result
from apps.work.services import workunits_transition, workunits_validate
from tests.backend.conftest import (  # noqa: F401  (fixtures)
    app,
    hosts,
    make_wu,
    project,
    report,
    results_of,
    send,
    team,
    version,
)
from tests.factories import AppFactory

pytestmark = pytest.mark.django_db

FPOPS_EST = 1e12  # make_wu's estimate
PFC = 300 * 3e9  # 300 s at the hosts' 3 GFLOPS: 0.9 per fpops_est


def _settle(version, app, *, host_avgs):
    """Statistics above their thresholds: version average 6.0 and pfc_scale 0.5, each host's
    average as given (None: too few samples for host normalization)."""
    AppVersion.objects.filter(id=version.id).update(pfc_n=500, pfc_avg=6.0, pfc_scale=0.5)
    app.min_avg_pfc = 3.0
    app.save(update_fields=["min_avg_pfc"])
    for host, avg in host_avgs.items():
        HostAppVersion.objects.update_or_create(
            host=host,
            app_version=version,
            app=app,
            defaults={"pfc_n": 3 if avg is None else 50, "pfc_avg": avg or 4.0, "scale_probation": False},
        )


def _validate_pair(project, app, version, hosts, now):
    wu = make_wu(project, app, now)
    for result, host in zip(results_of(wu), hosts[:2], strict=False):
        send(result, host, version, now)
        report(result, now + timedelta(hours=1))
    workunits_transition(project=project, now=now + timedelta(hours=1))
    workunits_validate(project=project, now=now + timedelta(hours=1))
    return results_of(wu)


# --- replication: "we take the set of instances for which approx is false" ---------------------


def test_replicated_exact_claims_are_averaged(project, app, version, hosts, now):
    _settle(version, app, host_avgs={hosts[0]: 0.6, hosts[1]: 1.2})  # host scales 10 and 5
    r0, r1 = _validate_pair(project, app, version, hosts, now)
    # PFC x pfc_scale x host scale; the version average takes the first job's sample before
    # the second is claimed, so its host scale is a little under 5.
    claims = [PFC * 0.5 * 10, PFC * 0.5 * 5]
    assert (r0.claimed_credit, r1.claimed_credit) == pytest.approx(
        [c * COBBLESTONE_SCALE for c in claims], rel=1e-3
    )
    assert (r0.credit_approx, r1.credit_approx) == (False, False)
    assert (
        r0.granted_credit == r1.granted_credit == pytest.approx((r0.claimed_credit + r1.claimed_credit) / 2)
    )


def test_an_approximate_claim_does_not_count_when_an_exact_one_exists(project, app, version, hosts, now):
    _settle(version, app, host_avgs={hosts[0]: 0.6, hosts[1]: None})
    r0, r1 = _validate_pair(project, app, version, hosts, now)
    assert (r0.credit_approx, r1.credit_approx) == (False, True)
    assert r0.granted_credit == r1.granted_credit == pytest.approx(PFC * 0.5 * 10 * COBBLESTONE_SCALE)


def test_only_approximate_claims_grant_min_avg_pfc_times_fpops_est(project, app, version, hosts, now):
    _settle(version, app, host_avgs={hosts[0]: None, hosts[1]: None})
    r0, r1 = _validate_pair(project, app, version, hosts, now)
    assert r0.granted_credit == r1.granted_credit == pytest.approx(3.0 * FPOPS_EST * COBBLESTONE_SCALE)


# --- anonymous platform ------------------------------------------------------------------------


@pytest.fixture
def single(project):
    return AppFactory(project=project, name="anon")


def _validate_anonymous(project, app, host, now) -> Result:
    wu = make_wu(project, app, now, name="anon_wu")
    [result] = results_of(wu)
    result.anonymous_proc_type = "CPU"
    send(result, host, None, now)
    report(result, now + timedelta(hours=1))
    workunits_transition(project=project, now=now + timedelta(hours=1))
    workunits_validate(project=project, now=now + timedelta(hours=1))
    result.refresh_from_db()
    return result


def test_anonymous_platform_without_min_avg_pfc_gets_fpops_est(project, single, hosts, now):
    result = _validate_anonymous(project, single, hosts[0], now)
    assert result.granted_credit == pytest.approx(FPOPS_EST * COBBLESTONE_SCALE)
    hav = HostAppVersion.objects.get(host=hosts[0], app=single, anonymous_proc_type="CPU")
    assert (hav.app_version_id, hav.pfc_n) == (None, 1)  # its own record per app and resource


def test_anonymous_platform_unsettled_host_gets_min_avg_pfc_times_fpops_est(project, single, hosts, now):
    single.min_avg_pfc = 3.0
    single.save(update_fields=["min_avg_pfc"])
    result = _validate_anonymous(project, single, hosts[0], now)
    assert (result.granted_credit, result.credit_approx) == (pytest.approx(3e12 * COBBLESTONE_SCALE), True)


def test_anonymous_platform_settled_host_is_normalized_to_min_avg_pfc(project, single, hosts, now):
    single.min_avg_pfc = 3.0
    single.save(update_fields=["min_avg_pfc"])
    HostAppVersion.objects.create(
        host=hosts[0], app=single, anonymous_proc_type="CPU", pfc_n=50, pfc_avg=1.8, scale_probation=False
    )
    result = _validate_anonymous(project, single, hosts[0], now)
    assert (result.granted_credit, result.credit_approx) == (
        pytest.approx(PFC * 3.0 / 1.8 * COBBLESTONE_SCALE),
        False,
    )
