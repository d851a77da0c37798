"""Scale probation and the daily job quota end to end: a stock client's RPCs (sends and
reports through the scheduler) and the validator, as docs/credit.md describes them."""

# The fixtures come from another suite's conftest, imported below; tests name them as arguments.
# ruff: noqa: F811

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.applications.models import AppVersion
from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.hosts.models import HostAppVersion
from apps.work.models import Result
from tests.scheduler.conftest import (  # noqa: F401  (fixtures)
    account,
    cpu_app,
    make_jobs,
    project,
    worker,
)
from tests.sequences.conftest import Computer, validate

pytestmark = pytest.mark.django_db

DELAY = 86400.0  # make_jobs' default delay bound is the project's: set explicitly below


@pytest.fixture
def host(project, account):
    return Computer(project, account.authenticator, "h", p_fpops=1e9, elapsed=100.0)


def _hav() -> HostAppVersion:
    return HostAppVersion.objects.get()


# --- scale probation ("Cherry picking") ---------------------------------------------------------


@pytest.fixture
def probation_app(cpu_app):
    cpu_app.host_scale_check = True
    cpu_app.save(update_fields=["host_scale_check"])
    return cpu_app


def _settle_statistics():
    """Host and version averages above their thresholds: host scale 6.0 / 4.0 = 1.5."""
    AppVersion.objects.update(pfc_n=500, pfc_avg=6.0, pfc_scale=0.5)
    HostAppVersion.objects.update(pfc_n=50, pfc_avg=4.0)


def test_sending_to_a_host_on_probation_starts_its_clock(project, probation_app, host, now):
    make_jobs(project, probation_app, 2, delay_bound=DELAY)
    host.rpc(now)
    hav = _hav()
    assert (hav.scale_probation, hav.host_scale_time) == (True, now.timestamp() + DELAY)


def test_a_job_validated_before_the_clock_runs_out_gets_no_host_scaling(project, probation_app, host, now):
    make_jobs(project, probation_app, 2, delay_bound=DELAY)
    host.rpc(now)
    _settle_statistics()
    task = host.tasks[0]
    later = now + timedelta(hours=1)
    host.rpc(later, finish=(task,))
    validate(task, later)
    result = Result.objects.get(name=task)
    assert (result.credit_approx, _hav().scale_probation) == (True, True)


def test_a_job_validated_after_the_clock_ran_out_ends_probation_and_is_host_scaled(
    project, probation_app, host, now
):
    make_jobs(project, probation_app, 2, delay_bound=DELAY)
    host.rpc(now)
    _settle_statistics()
    task = host.tasks[0]
    later = now + timedelta(seconds=DELAY + 3600)
    host.rpc(later, finish=(task,))
    validate(task, later)
    result = Result.objects.get(name=task)
    assert (result.credit_approx, _hav().scale_probation) == (False, False)
    pfc = result.elapsed_time * result.flops_estimate
    assert result.claimed_credit == pytest.approx(pfc * 0.5 * 1.5 * COBBLESTONE_SCALE)


def test_a_crash_puts_the_host_back_on_probation_for_a_delay_bound(project, probation_app, host, now):
    make_jobs(project, probation_app, 2, delay_bound=DELAY)
    host.rpc(now)
    HostAppVersion.objects.update(scale_probation=False, host_scale_time=0)
    later = now + timedelta(hours=5)
    host.rpc(later, fail=(host.tasks[0],))
    hav = _hav()
    assert (hav.scale_probation, hav.host_scale_time) == (True, later.timestamp() + DELAY)


# --- the daily quota (host punishment) -----------------------------------------------------------


def test_crashes_shrink_the_daily_quota_until_the_host_gets_one_job_a_day(project, cpu_app, host, now):
    project.daily_result_quota = 3
    project.save(update_fields=["daily_result_quota"])
    make_jobs(project, cpu_app, 40)
    host.rpc(now, seconds=1e6)
    for _ in range(3):
        host.rpc(now, fail=(host.tasks[0],))
    assert _hav().max_jobs_per_day == 1  # 3 -> 2 -> 1, and never below 1
    tomorrow = now + timedelta(days=1)
    host.tasks.clear()  # it gave up the rest
    reply = host.rpc(tomorrow, seconds=1e6)
    assert len(reply.results) == 1  # a quota of 1 is not multiplied by the CPU count
    reply = host.rpc(tomorrow + timedelta(hours=1), seconds=1e6)
    assert reply.results == ()
    assert any("reached its daily quota of tasks" in m.text for m in reply.messages)


def test_successes_double_the_quota_back_up_to_the_projects(project, cpu_app, host, now):
    project.daily_result_quota = 8
    project.save(update_fields=["daily_result_quota"])
    make_jobs(project, cpu_app, 40)
    host.rpc(now, seconds=1e6)
    HostAppVersion.objects.update(max_jobs_per_day=1)
    quotas = []
    for _ in range(5):
        host.rpc(now, finish=(host.tasks[0],))
        quotas.append(_hav().max_jobs_per_day)
    assert quotas == [2, 4, 8, 8, 8]
