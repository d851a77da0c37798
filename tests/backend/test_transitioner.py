"""The transitioner service: result creation, time-outs, error bits, claiming, idempotence."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.hosts.models import HostAppVersion
from apps.work.domain.states import AssimilateState, ErrorMask, Outcome, ServerState, ValidateState
from apps.work.domain.transitions import TRANSITION_FLAG_NO_NEW_RESULTS
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import workunits_transition
from apps.work.services.transitioner import _claim_due, workunit_transition
from tests.backend.conftest import make_wu, report, results_of, send

pytestmark = pytest.mark.django_db


def test_new_workunit_gets_target_nresults_results_with_boinc_names(project, app, now):
    wu = make_wu(project, app, now, create_results=False)
    outcome = workunits_transition(project=project, now=now)
    assert outcome.items == 1
    assert [r.name for r in results_of(wu)] == ["wu_0", "wu_1"]
    assert all(r.server_state == ServerState.UNSENT for r in results_of(wu))
    # Each new result gets its output file with a signed upload certificate.
    assert OutputFile.objects.filter(result__workunit=wu, xml_signature__gt="").count() == 2


def test_second_pass_changes_nothing(project, app, now):
    wu = make_wu(project, app, now, create_results=False)
    workunits_transition(project=project, now=now)
    before = list(Workunit.objects.filter(id=wu.id).values())
    again = workunits_transition(project=project, now=now)
    assert again.items == 0
    assert list(Workunit.objects.filter(id=wu.id).values()) == before
    assert len(results_of(wu)) == 2


def test_result_past_deadline_and_grace_times_out_and_a_replacement_is_made(
    project, app, version, hosts, now
):
    wu = make_wu(project, app, now)
    first, second = results_of(wu)
    send(first, hosts[0], version, now, delay=3600)
    send(second, hosts[1], version, now, delay=3600)
    report(second, now + timedelta(minutes=30))
    hav = HostAppVersion.objects.get(host=hosts[0], app_version=version)
    error_rate = hav.error_rate

    # Past the deadline but within the grace period: nothing times out.
    workunit_transition(workunit_id=wu.id, now=now + timedelta(seconds=3600 + 1800))
    first.refresh_from_db()
    assert first.server_state == ServerState.IN_PROGRESS

    later = now + timedelta(seconds=3600 + 3600 + 1)
    workunit_transition(workunit_id=wu.id, now=later)
    first.refresh_from_db()
    assert (first.server_state, first.outcome) == (ServerState.OVER, Outcome.NO_REPLY)
    assert [r.name for r in results_of(wu)] == ["wu_0", "wu_1", "wu_2"]
    hav.refresh_from_db()
    assert hav.error_rate > error_rate  # the host_app_version took the time-out
    assert hav.consecutive_valid == 0


def test_timed_out_workunit_is_looked_at_again_at_the_deadline_plus_grace(project, app, version, hosts, now):
    wu = make_wu(project, app, now)
    r0, r1 = results_of(wu)
    send(r0, hosts[0], version, now, delay=7200)
    send(r1, hosts[1], version, now, delay=3600)
    workunit_transition(workunit_id=wu.id, now=now)
    wu.refresh_from_db()
    assert wu.transition_time == now + timedelta(seconds=3600 + 3600)


def test_all_results_erroring_out_sets_the_error_mask(project, app, version, hosts, now):
    wu = make_wu(project, app, now, max_error_results=1, max_total_results=4)
    for i in range(3):
        workunits_transition(project=project, now=now + timedelta(minutes=i))
        for r in Result.objects.filter(workunit=wu, server_state=ServerState.UNSENT):
            send(r, hosts[r.id % len(hosts)], version, now)
            report(r, now + timedelta(minutes=i), success=False, exit_status=1)
    workunits_transition(project=project, now=now + timedelta(hours=1))
    wu.refresh_from_db()
    assert wu.error_mask & ErrorMask.TOO_MANY_ERROR_RESULTS
    assert wu.assimilate_state == AssimilateState.READY
    assert wu.transition_time is None  # never again
    assert Result.objects.filter(workunit=wu, server_state=ServerState.UNSENT).count() == 0


def test_never_creates_more_than_max_total_results(project, app, version, hosts, now):
    wu = make_wu(project, app, now, max_total_results=2, max_error_results=5)
    for r in results_of(wu):
        send(r, hosts[r.id % len(hosts)], version, now)
        report(r, now, success=False, exit_status=1)
    workunits_transition(project=project, now=now + timedelta(minutes=1))
    wu.refresh_from_db()
    assert len(results_of(wu)) == 2
    assert wu.error_mask & ErrorMask.TOO_MANY_TOTAL_RESULTS


def test_sequence_steps_get_no_new_results_and_inactive_results_never_time_out(project, app, now):
    wu = make_wu(
        project, app, now, create_results=False, extra={"transitioner_flags": TRANSITION_FLAG_NO_NEW_RESULTS}
    )
    Result.objects.create(
        project=project, app=app, workunit=wu, name="wu_0", server_state=ServerState.INACTIVE
    )
    workunits_transition(project=project, now=now + timedelta(days=30))
    assert [(r.name, r.server_state) for r in results_of(wu)] == [("wu_0", ServerState.INACTIVE)]


def test_inactive_results_are_withdrawn_like_unsent_ones_on_error(project, app, now):
    wu = make_wu(
        project, app, now, create_results=False, extra={"transitioner_flags": TRANSITION_FLAG_NO_NEW_RESULTS}
    )
    inactive = Result.objects.create(
        project=project, app=app, workunit=wu, name="wu_0", server_state=ServerState.INACTIVE
    )
    Workunit.objects.filter(id=wu.id).update(error_mask=ErrorMask.CANCELLED)
    workunit_transition(workunit_id=wu.id, now=now)
    inactive.refresh_from_db()
    assert (inactive.server_state, inactive.outcome) == (ServerState.OVER, Outcome.DIDNT_NEED)


def test_need_validate_is_set_when_successes_reach_the_quorum(project, app, version, hosts, now):
    wu = make_wu(project, app, now)
    r0, r1 = results_of(wu)
    send(r0, hosts[0], version, now)
    send(r1, hosts[1], version, now)
    report(r0, now)
    workunits_transition(project=project, now=now)
    wu.refresh_from_db()
    assert wu.need_validate is False
    report(r1, now)
    workunits_transition(project=project, now=now)
    wu.refresh_from_db()
    assert wu.need_validate is True
    assert ValidateState(r1.validate_state) == ValidateState.INIT


def test_a_workunit_claimed_by_another_worker_is_skipped(project, app, now):
    wu = make_wu(project, app, now, create_results=False)
    assert [c.workunit_id for c in _claim_due(project.id, now, 10)] == [wu.id]
    assert _claim_due(project.id, now, 10) == []  # the second worker finds nothing due
    assert workunits_transition(project=project, now=now).items == 0
    assert results_of(wu) == []


def test_a_report_during_the_pass_keeps_its_earlier_transition_time(project, app, now):
    wu = make_wu(project, app, now, create_results=False)
    [claim] = _claim_due(project.id, now, 10)
    Workunit.objects.filter(id=wu.id).update(transition_time=now)  # a report lowers it
    workunit_transition(workunit_id=wu.id, now=now, lease=claim.lease)
    wu.refresh_from_db()
    assert wu.transition_time == now
