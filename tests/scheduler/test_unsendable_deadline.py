"""A job whose delay bound gives no deadline (a row written before creation capped it) is not
sent; the RPC goes on and sends other work."""

from __future__ import annotations

import logging
import math
from datetime import timedelta

import pytest

from apps.scheduler.services.dispatch import delay_bound_sendable
from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import SequenceState, ServerState
from apps.work.models import Result, Workunit
from tests.scheduler.conftest import make_jobs, make_request, rpc
from tests.sequences.conftest import DAY, Computer, step_job


@pytest.mark.parametrize("delay_bound", [1e300, math.inf, -1e300, math.nan])
def test_a_delay_bound_past_any_date_is_not_sendable(delay_bound):
    assert delay_bound_sendable(delay_bound) is False


def test_a_years_long_delay_bound_is_sendable():
    assert delay_bound_sendable(10 * 365 * 86400.0) is True


@pytest.mark.django_db
@pytest.mark.parametrize("delay_bound", [1e300, math.inf])
def test_rpc_skips_the_job_without_a_deadline_and_sends_the_next(
    client, project, account, cpu_app, delay_bound
):
    make_jobs(project, cpu_app, 1, prefix="huge")
    make_jobs(project, cpu_app, 1, prefix="ok")
    Workunit.objects.filter(name="huge0").update(delay_bound=delay_bound)
    reply = rpc(client, project, make_request(account.authenticator))
    assert [r.name for r in reply.results] == ["ok0_0"]
    assert Result.objects.get(name="huge0_0").server_state == ServerState.UNSENT


@pytest.mark.django_db
def test_the_skipped_job_is_logged(client, project, account, cpu_app, caplog):
    make_jobs(project, cpu_app, 1, prefix="huge")
    Workunit.objects.filter(name="huge0").update(delay_bound=1e300)
    with caplog.at_level(logging.WARNING, logger="apps.scheduler.services.dispatch"):
        rpc(client, project, make_request(account.authenticator))
    assert "result huge0_0 not sent: delay bound 1e+300 s gives no deadline" in caplog.text


@pytest.mark.django_db
def test_the_skipped_job_is_logged_once_not_on_every_rpc(client, project, account, cpu_app, caplog):
    make_jobs(project, cpu_app, 1, prefix="huge")
    Workunit.objects.filter(name="huge0").update(delay_bound=1e300)
    with caplog.at_level(logging.WARNING, logger="apps.scheduler.services.dispatch"):
        rpc(client, project, make_request(account.authenticator))
        rpc(client, project, make_request(account.authenticator))
    assert caplog.text.count("result huge0_0 not sent") == 1


@pytest.fixture
def host(project, account):
    """A stock client on one computer, as the sequence tests drive it."""
    return Computer(project, account.authenticator, "a")


def _sequence(project, app, now):
    spec = SequenceSpec(name="seq", job=step_job(), max_result_time=4 * DAY, length=10)
    return sequence_create(project=project, app=app, spec=spec, now=now)


@pytest.mark.django_db
def test_held_sequence_without_a_deadline_sends_no_step_and_the_rpc_goes_on(project, cpu_app, host, now):
    seq = _sequence(project, cpu_app, now)
    host.rpc(now)
    WorkSequence.objects.filter(id=seq.id).update(max_result_time=1e300)
    make_jobs(project, cpu_app, 1, prefix="plain")
    reply = host.rpc(now + timedelta(days=3), finish=(host.next_task(seq),))
    assert [r.name for r in reply.results] == ["plain0_0"]
    assert Result.objects.get(name="seq_s2_0").server_state == ServerState.INACTIVE


@pytest.mark.django_db
def test_sequence_without_a_deadline_is_not_assigned(project, cpu_app, host, now):
    seq = _sequence(project, cpu_app, now)
    WorkSequence.objects.filter(id=seq.id).update(max_result_time=1e300)
    make_jobs(project, cpu_app, 1, prefix="plain")
    reply = host.rpc(now)
    assert [r.name for r in reply.results] == ["plain0_0"]
    assert WorkSequence.objects.get(id=seq.id).state == SequenceState.UNASSIGNED


@pytest.mark.django_db
def test_sequence_relocated_from_the_host_with_a_huge_max_result_time_is_left_alone(
    project, cpu_app, host, now
):
    seq = _sequence(project, cpu_app, now)
    host.rpc(now - timedelta(days=1), seconds=0)  # the host row
    WorkSequence.objects.filter(id=seq.id).update(
        max_result_time=1e300, relocated_from_id=host.hostid, relocated_time=now
    )
    reply = host.rpc(now)
    assert reply.work_sequences_assigned == ()
