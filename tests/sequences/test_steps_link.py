"""A sequence's steps are the workunits holding its id: they go when the sequence is deleted."""

from __future__ import annotations

import pytest

from apps.sequences.models import WorkSequence
from apps.work.models import Result, Workunit
from tests.factories import ResultFactory, WorkSequenceFactory, WorkunitFactory

pytestmark = pytest.mark.django_db


def steps_of(sequence: WorkSequence, n: int) -> list[Workunit]:
    return [
        WorkunitFactory(
            app=sequence.app, sequence_id=sequence.id, sequence_index=i, name=f"{sequence.name}_s{i}"
        )
        for i in range(n)
    ]


def test_deleting_a_sequence_deletes_its_steps_and_their_results():
    sequence = WorkSequenceFactory()
    other = WorkunitFactory(app=sequence.app)
    for wu in steps_of(sequence, 3):
        ResultFactory(workunit=wu)

    sequence.delete()

    assert list(Workunit.objects.values_list("id", flat=True)) == [other.id]
    assert not Result.objects.exists()


def test_deleting_a_sequence_deletes_the_steps_of_its_replica_chains():
    primary = WorkSequenceFactory()
    replica = WorkSequenceFactory(app=primary.app, replica_of=primary)
    steps_of(primary, 2)
    steps_of(replica, 2)

    WorkSequence.objects.filter(id=primary.id).delete()

    assert not Workunit.objects.exists()


def test_a_sequence_lists_its_steps():
    sequence = WorkSequenceFactory()
    steps = steps_of(sequence, 2)
    WorkunitFactory(app=sequence.app)

    assert list(sequence.workunits.order_by("sequence_index")) == steps
