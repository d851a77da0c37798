"""Relocation from a restart point that can run: validated steps after it are re-opened."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import AssimilateState, SequenceState, ValidateState
from apps.work.models import Result, Workunit
from apps.work.services import InputSpec
from tests.sequences.conftest import DAY, daemons, step_job

pytestmark = pytest.mark.django_db

STEP = timedelta(days=3)


@pytest.fixture
def climate(project, cpu_app, now, tmp_path):
    """The climate run of docs/sequences.md, shortened: a full state every 7th step, from an initial state."""
    initial = tmp_path / "initial_state"
    initial.write_bytes(b"t=0\n")
    spec = SequenceSpec(
        name="clim",
        job=step_job(),
        max_result_time=4 * DAY,
        length=12,
        restartable_every=7,
        first_inputs=(InputSpec(path=initial, open_name="prev_state"),),
    )
    return sequence_create(project=project, app=cpu_app, spec=spec, now=now)


def _step_of(name: str) -> int:
    return int(name.split("_s")[-1].split("_")[0])


def _compute(host, seq, project, now, *, through: int):
    """``host`` reports its steps in order until step ``through``, the daemons after each."""
    while True:
        task = host.next_task(seq)
        assert task is not None, f"{host.name} ran out of steps"
        now += STEP
        host.rpc(now, finish=(task,))
        daemons(now, project.slug)
        if _step_of(task) >= through:
            return now


@pytest.fixture
def vanished_before_checkpoint(project, climate, computer, now):
    """Host A validated steps 0-3, then went silent with 4 and 5 running: no state uploaded yet
    (the first checkpoint is step 6), so the sequence restarts from step 0 on host C."""
    a, c = computer("a"), computer("c")
    a.rpc(now)
    now = _compute(a, climate, project, now, through=3)
    late = now + timedelta(days=13)
    daemons(late, project.slug)
    climate.refresh_from_db()
    assert (climate.state, climate.n_relocations) == (SequenceState.UNASSIGNED, 1)
    return climate, c, late


def test_relocation_before_the_first_checkpoint_reopens_the_validated_steps(vanished_before_checkpoint):
    seq, _c, _late = vanished_before_checkpoint
    seq.refresh_from_db()
    assert seq.first_unvalidated.sequence_index == 0
    assert seq.first_undispatched.sequence_index == 0
    for wu in Workunit.objects.filter(sequence_id=seq.id, sequence_index__lt=4):
        assert wu.canonical_result_id is None
        assert wu.assimilate_state == AssimilateState.INIT
    # The old branch was computed and validated honestly: it keeps its state and credit.
    assert Result.objects.get(name="clim_s2_0").validate_state == ValidateState.VALID


def test_the_new_host_runs_through_the_reopened_steps_without_being_told_to_abort_them(
    project, vanished_before_checkpoint
):
    seq, c, late = vanished_before_checkpoint
    reply = c.rpc(late)
    assert reply.work_sequences_assigned == ("clim",)
    assert [r.name for r in reply.results] == ["clim_s0_1", "clim_s1_1"]
    # A stock client with idle CPUs asks again soon; step 1 has not started yet.
    reply = c.rpc(late + timedelta(hours=1))
    assert reply.result_aborts_if_not_started == ()
    assert reply.result_aborts == ()
    now = _compute(c, seq, project, late, through=8)
    seq.refresh_from_db()
    assert (seq.state, seq.assigned_host_id, seq.n_relocations) == (SequenceState.ASSIGNED, c.hostid, 1)
    assert seq.first_unvalidated.sequence_index == 9
    assert seq.checkpoint_result.name == "clim_s6_0"  # A never got step 6
    canonical = Workunit.objects.filter(sequence_id=seq.id, sequence_index__lte=8).values_list(
        "canonical_result__host_id", flat=True
    )
    assert list(canonical) == [c.hostid] * 9
    assert not any(r.result_aborts or r.result_aborts_if_not_started for r in c.replies)
    assert now > late


def test_the_initial_state_stays_downloadable_until_the_first_checkpoint(project, vanished_before_checkpoint):
    seq, c, late = vanished_before_checkpoint
    reply = c.rpc(late)
    initial = next(f for f in reply.file_infos if f.name == "initial_state")
    assert initial.download_urls
    assert (project.download_dir / "initial_state").read_bytes() == b"t=0\n"
    _compute(c, seq, project, late, through=8)  # checkpoint 6 validated: step 0 is never redone
    daemons(late + timedelta(days=40), project.slug)
    assert not (project.download_dir / "initial_state").exists()


def test_a_reopened_step_is_assimilated_again_from_the_new_branch(project, vanished_before_checkpoint):
    seq, c, late = vanished_before_checkpoint
    c.rpc(late)
    _compute(c, seq, project, late, through=1)
    wu = Workunit.objects.get(sequence_id=seq.id, sequence_index=0)
    assert wu.canonical_result.name == "clim_s0_1"
    assert wu.assimilate_state == AssimilateState.DONE
    assert WorkSequence.objects.get(id=seq.id).first_unvalidated.sequence_index == 2
