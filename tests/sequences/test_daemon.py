"""The sequence-deadline daemon and the progress service, one behaviour per test."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.sequences.models import WorkSequence
from apps.sequences.services import (
    SequenceSpec,
    sequence_create,
    sequence_deadlines_check,
    sequence_on_result_validated,
)
from apps.work.domain.states import ErrorMask, Outcome, SequenceState, ServerState
from apps.work.models import InputFile, Result, Workunit
from apps.work.services.validator import workunit_validate
from tests.sequences.conftest import DAY, STEP_FPOPS, step_job, validate

pytestmark = pytest.mark.django_db

GRACE = timedelta(hours=1)  # the project's report_grace_period
DAY_DELTA = timedelta(days=1)


def _sequence(project, app, now, *, length=10, **kw):
    spec = SequenceSpec(name="seq", job=step_job(), max_result_time=4 * DAY, length=length, **kw)
    return sequence_create(project=project, app=app, spec=spec, now=now)


def _deadline(name):
    return Result.objects.get(name=name).report_deadline


def test_host_that_stops_responding_loses_its_sequence_after_the_deadline(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    computer("a").rpc(now)
    deadline = _deadline("seq_s0_0")
    assert deadline == now + timedelta(days=12)  # 3 x max_result_time by default
    assert (
        sequence_deadlines_check(
            project=project, now=deadline + GRACE - timedelta(seconds=1), limit=100
        ).items
        == 0
    )
    seq.refresh_from_db()
    assert seq.state == SequenceState.ASSIGNED

    assert (
        sequence_deadlines_check(
            project=project, now=deadline + GRACE + timedelta(seconds=1), limit=100
        ).items
        == 1
    )
    seq.refresh_from_db()
    assert (seq.state, seq.assigned_host, seq.first_undispatched.sequence_index) == (
        SequenceState.UNASSIGNED,
        None,
        0,
    )
    assert Result.objects.get(name="seq_s0_0").outcome == Outcome.NO_REPLY
    assert Result.objects.get(name="seq_s0_1").server_state == ServerState.INACTIVE
    assert Result.objects.get(name="seq_s1_1").server_state == ServerState.INACTIVE


def test_second_daemon_pass_changes_nothing(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    computer("a").rpc(now)
    late = _deadline("seq_s0_0") + GRACE + timedelta(seconds=1)
    assert sequence_deadlines_check(project=project, now=late, limit=100).items == 1
    rows = Result.objects.filter(workunit__sequence_id=seq.id).count()
    assert sequence_deadlines_check(project=project, now=late, limit=100).items == 0
    assert Result.objects.filter(workunit__sequence_id=seq.id).count() == rows


def test_client_error_on_a_step_relocates_the_sequence(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    Result.objects.filter(name="seq_s0_0").update(server_state=ServerState.OVER, outcome=Outcome.CLIENT_ERROR)
    assert sequence_deadlines_check(project=project, now=now + timedelta(hours=1), limit=100).items == 1
    seq.refresh_from_db()
    assert seq.state == SequenceState.UNASSIGNED


def test_progress_is_refreshed_by_the_daemon_without_the_validator_call(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    host.rpc(now + timedelta(days=3), finish=("seq_s0_0",))
    workunit_validate(
        workunit_id=Result.objects.get(name="seq_s0_0").workunit_id, now=now + timedelta(days=3)
    )
    seq.refresh_from_db()
    assert seq.first_unvalidated.sequence_index == 0
    assert sequence_deadlines_check(project=project, now=now + timedelta(days=3), limit=100).items == 1
    seq.refresh_from_db()
    assert seq.first_unvalidated.sequence_index == 1
    assert seq.last_progress_time == now + timedelta(days=3)


def test_validator_call_extends_an_open_ended_sequence_at_once(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now, length=None, initial_steps=3)
    host = computer("a")
    host.rpc(now)  # steps 0 and 1 go; one is left to send
    host.rpc(now + timedelta(days=3), finish=("seq_s0_0",))  # step 2 goes; none left
    validate("seq_s0_0", now + timedelta(days=3))
    assert Workunit.objects.filter(sequence_id=seq.id).count() == 6
    new = Result.objects.get(name="seq_s3_0")
    assert new.server_state == ServerState.INACTIVE
    assert ("seq_s2_0_0", "prev_state") in set(new.workunit.file_refs.values_list("file__name", "open_name"))


def test_non_sequence_workunit_is_ignored_by_the_call(project, cpu_app, now):
    from tests.scheduler.conftest import make_jobs

    wu = make_jobs(project, cpu_app, 1)[0]
    assert sequence_on_result_validated(workunit_id=wu.id, now=now) is False


def test_broken_hook_is_logged_and_changes_nothing(project, cpu_app, computer, now, caplog):
    cpu_app.sequence_hook = "tests.sequences.hooks.broken"
    cpu_app.save(update_fields=["sequence_hook"])
    seq = _sequence(project, cpu_app, now, length=None, initial_steps=2)
    host = computer("a")
    host.rpc(now)
    host.rpc(now + timedelta(days=3), finish=("seq_s0_0",))
    validate("seq_s0_0", now + timedelta(days=3))
    assert Workunit.objects.filter(sequence_id=seq.id).count() == 2
    assert "hook" in caplog.text
    seq.refresh_from_db()
    assert seq.first_unvalidated.sequence_index == 1


def test_too_many_relocations_end_in_error_and_the_host_is_told(project, cpu_app, computer, now, settings):
    settings.COBBLESTONE_SEQUENCE_MAX_RELOCATIONS = 0
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    late = _deadline("seq_s0_0") + GRACE + timedelta(seconds=1)
    assert sequence_deadlines_check(project=project, now=late, limit=100).items == 1
    seq.refresh_from_db()
    assert seq.state == SequenceState.ERROR
    assert seq.error_reason == "relocated 1 time; the limit is 0"
    assert all(wu.error_mask & ErrorMask.CANCELLED for wu in Workunit.objects.filter(sequence_id=seq.id))
    reply = host.rpc(late)
    assert reply.work_sequences_unassigned == ("seq",)
    assert set(reply.result_aborts) == {"seq_s0_0", "seq_s1_0"}
    seq.refresh_from_db()
    assert seq.assigned_host is None


def test_steps_sent_together_are_due_one_max_result_time_apart(project, cpu_app, computer, now):
    _sequence(project, cpu_app, now)
    reply = computer("a").rpc(now, seconds=10 * STEP_FPOPS / 1e9)
    due = sorted(Result.objects.get(name=r.name).report_deadline for r in reply.results)
    assert len(due) >= 5
    # The first three fit the default delay bound (3 x 4 days); then one more day-4 each.
    assert [(d - now) / DAY_DELTA for d in due[:5]] == [12, 12, 12, 16, 20]


def test_a_host_keeping_to_max_result_time_keeps_a_sequence_it_fetched_ahead(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")  # each step in 3 days, within the 4-day maximum result time
    host.rpc(now, seconds=10 * STEP_FPOPS / 1e9)
    t = now
    for _ in range(5):
        t += timedelta(days=3)
        host.rpc(t, finish=(host.next_task(seq),), seconds=0)
        assert sequence_deadlines_check(project=project, now=t + timedelta(days=1), limit=100).items == 0
    seq.refresh_from_db()
    assert (seq.state, seq.n_relocations) == (SequenceState.ASSIGNED, 0)


def test_a_relocated_sequence_goes_to_another_host_not_back(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    a, b = computer("a"), computer("b")
    a.rpc(now)
    late = _deadline("seq_s0_0") + GRACE + timedelta(seconds=1)
    assert sequence_deadlines_check(project=project, now=late, limit=100).items == 1
    a.rpc(late)  # told the sequence is no longer its own
    reply = a.rpc(late + timedelta(minutes=1))
    assert reply.work_sequences_assigned == ()
    assert b.rpc(late + timedelta(minutes=2)).work_sequences_assigned == ("seq",)
    seq.refresh_from_db()
    assert (seq.assigned_host_id, seq.relocated_from_id) == (b.hostid, a.hostid)


def test_a_relocated_sequence_goes_back_to_its_only_host_after_a_delay_bound(project, cpu_app, computer, now):
    _sequence(project, cpu_app, now)
    a = computer("a")
    a.rpc(now)
    late = _deadline("seq_s0_0") + GRACE + timedelta(seconds=1)
    assert sequence_deadlines_check(project=project, now=late, limit=100).items == 1
    a.rpc(late)  # told the sequence is no longer its own
    assert a.rpc(late + timedelta(days=11)).work_sequences_assigned == ()
    # No other host came within one delay bound (3 x 4 days): the old host may have it back.
    assert a.rpc(late + timedelta(days=12, minutes=1)).work_sequences_assigned == ("seq",)


def test_withdrawn_step_result_is_made_again(project, cpu_app, now):
    _sequence(project, cpu_app, now)
    Result.objects.filter(name="seq_s0_0").update(server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED)
    assert sequence_deadlines_check(project=project, now=now, limit=100).items == 1
    assert Result.objects.get(name="seq_s0_1").server_state == ServerState.INACTIVE
    # and step 1 now reads the state of the new result
    assert Workunit.objects.get(name="seq_s1").file_refs.filter(file__name="seq_s0_1_0").exists()


def test_checkpoint_state_is_staged_then_released_by_the_next_checkpoint(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now, restartable_every=2)
    host = computer("a")
    host.rpc(now)
    for step in range(4):
        when = now + timedelta(days=3 * (step + 1))
        host.rpc(when, finish=(f"seq_s{step}_0",))
        validate(f"seq_s{step}_0", when)
        seq.refresh_from_db()
        if step == 1:
            assert seq.checkpoint_result.name == "seq_s1_0"
            assert (project.download_dir / "seq_s1_0_0").read_bytes() == b"seq step 1 file 0\n"
            assert InputFile.objects.get(name="seq_s1_0_0").no_delete is True
    assert seq.checkpoint_result.name == "seq_s3_0"
    assert not (project.download_dir / "seq_s1_0_0").exists()
    assert InputFile.objects.get(name="seq_s1_0_0").no_delete is False
    assert WorkSequence.objects.get(id=seq.id).first_unvalidated.sequence_index == 4


def test_sequence_of_a_deleted_host_is_relocated(project, cpu_app, computer, now):
    from apps.hosts.models import Host

    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    Host.objects.filter(id=host.hostid).delete()
    assert sequence_deadlines_check(project=project, now=now + timedelta(hours=1), limit=100).items == 1
    seq.refresh_from_db()
    assert (seq.state, seq.first_undispatched.sequence_index) == (SequenceState.UNASSIGNED, 0)
