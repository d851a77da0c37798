"""The folding example of docs/sequences.md end to end: trajectories of unknown length, two or three steps at a
time, extended by the back end until the project ends them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create, sequence_end_many
from apps.work.domain.states import ErrorMask, Outcome, SequenceState, ServerState
from apps.work.models import Result, Workunit
from tests.sequences.conftest import DAY, daemons, step_job

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

STEP = timedelta(hours=12)
FOLD_FPOPS = 4.32e13  # 43200 s (12 hours) on a fast host


@pytest.fixture
def trajectories(project, cpu_app, now):
    project.purge_min_age_days = 365
    project.save(update_fields=["purge_min_age_days"])
    return [
        sequence_create(
            project=project,
            app=cpu_app,
            spec=SequenceSpec(
                name=f"traj{i}",
                job=step_job(FOLD_FPOPS),
                max_result_time=DAY,
                restartable_every=1,  # small state: every step uploads it
            ),
            now=now,
        )
        for i in range(3)
    ]


def _steps(seq: WorkSequence) -> int:
    return Workunit.objects.filter(sequence_id=seq.id).count()


def _advance(host, seq, now, project, n):
    for _ in range(n):
        now += STEP
        host.rpc(now, finish=(host.next_task(seq),))
        daemons(now, project.slug)
    return now


def test_folding_trajectories_are_extended_until_the_project_ends_them(project, trajectories, computer, now):
    t0, t1, _t2 = trajectories
    assert [_steps(t) for t in trajectories] == [3, 3, 3]  # "only creates 2 or 3 results in each"
    a, b = computer("host-a"), computer("host-b")

    assert a.rpc(now).work_sequences_assigned == ("traj0",)
    assert b.rpc(now).work_sequences_assigned == ("traj1",)
    assert len(a.tasks) == 2
    assert len(b.tasks) == 2

    now = _advance(a, t0, now, project, 6)
    _advance(b, t1, now - 6 * STEP, project, 2)
    # The default hook kept extending: never fewer than two steps left to send.
    assert _steps(t0) >= 8
    t0.refresh_from_db()
    assert t0.state == SequenceState.ASSIGNED
    assert t0.first_unvalidated.sequence_index == 6
    assert _steps(t0) - t0.first_undispatched.sequence_index >= 1
    assert len(a.tasks) == 2

    # A more promising trajectory was found: the project ends traj0.
    running = list(a.tasks)
    assert sequence_end_many(sequence_ids=[t0.id], now=now) == 1
    unsent = Result.objects.filter(workunit__sequence_id=t0.id, server_state=ServerState.INACTIVE)
    assert not unsent.exists()
    reply = a.rpc(now + timedelta(minutes=5), seconds=DAY)
    assert reply.work_sequences_ended == ("traj0",)
    assert sorted(reply.result_aborts) == sorted(running)
    # ... and the host, now holding none, is given the trajectory nobody had.
    assert reply.work_sequences_assigned == ("traj2",)
    t0.refresh_from_db()
    assert (t0.state, t0.assigned_host, t0.ended_notified) == (SequenceState.ENDED, None, True)
    assert t0.expected_length == _steps(t0)
    assert all(
        wu.canonical_result_id or wu.error_mask & ErrorMask.CANCELLED
        for wu in Workunit.objects.filter(sequence_id=t0.id)
    )
    # The end is said once; a later RPC is quiet about it.
    assert a.rpc(now + timedelta(minutes=10)).work_sequences_ended == ()


def test_hook_ends_a_trajectory_with_a_final_step(project, cpu_app, trajectories, computer, now):
    cpu_app.sequence_hook = "tests.sequences.hooks.fold_to_eight"
    cpu_app.save(update_fields=["sequence_hook"])
    t0 = trajectories[0]
    a = computer("host-a")
    a.rpc(now)
    while a.next_task(t0) is not None:
        now = _advance(a, t0, now, project, 1)
    t0.refresh_from_db()
    assert _steps(t0) == 8
    assert t0.state == SequenceState.ENDED
    assert a.rpc(now + STEP).work_sequences_ended == ("traj0",)
    last = Result.objects.get(
        workunit__sequence_id=t0.id, workunit__sequence_index=7, outcome=Outcome.SUCCESS
    )
    assert [o.upload for o in last.output_files.order_by("ordinal")] == [True, True]
    assert not last.output_files.get(ordinal=0).sticky  # the final state leaves the host
