"""A step that failed on its host: nothing more of the sequence goes to that host."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import SequenceState
from tests.sequences.conftest import DAY, daemons, step_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def seq(project, cpu_app, now):
    spec = SequenceSpec(name="seq", job=step_job(), max_result_time=4 * DAY, length=10, restartable_every=2)
    return sequence_create(project=project, app=cpu_app, spec=spec, now=now)


def test_no_step_goes_to_a_host_whose_earlier_step_failed(seq, computer, now):
    a = computer("a")
    assert [r.name for r in a.rpc(now).results] == ["seq_s0_0", "seq_s1_0"]
    reply = a.rpc(now + timedelta(days=1), fail=("seq_s0_0",), seconds=10 * DAY)
    assert reply.results == ()


def test_a_lost_step_is_not_resent_after_an_earlier_step_failed(seq, computer, now):
    a = computer("a")
    a.rpc(now)
    a.tasks.remove("seq_s1_0")  # the reply that carried it was lost
    reply = a.rpc(now + timedelta(days=1), fail=("seq_s0_0",), seconds=10 * DAY)
    assert reply.results == ()


def test_the_sequence_moves_on_from_the_failure_to_another_host(project, seq, computer, now):
    a, b = computer("a"), computer("b")
    a.rpc(now)
    later = now + timedelta(days=1)
    a.rpc(later, fail=("seq_s0_0",))
    daemons(later, project.slug)
    head = WorkSequence.objects.get(id=seq.id)
    assert (head.state, head.n_relocations) == (SequenceState.UNASSIGNED, 1)
    reply = b.rpc(later)
    assert reply.work_sequences_assigned == ("seq",)
    assert [r.name for r in reply.results] == ["seq_s0_1", "seq_s1_1"]
    # A is told it lost the sequence; its step 1, which could never run, is aborted.
    reply = a.rpc(later + timedelta(hours=1))
    assert reply.work_sequences_unassigned == ("seq",)
    assert reply.result_aborts == ("seq_s1_0",)
