"""Redundancy: replica chains on different hosts, compared at checkpoints."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.work.domain.states import SequenceState, ValidateState
from apps.work.models import Result, WorkSequence
from apps.work.services.sequences import SequenceSpec, sequence_create, sequence_end, sequence_extend
from tests.sequences.conftest import DAY, step_job, validate

pytestmark = pytest.mark.django_db


@pytest.fixture
def chains(project, cpu_app, now):
    cpu_app.sequence_redundancy = True
    cpu_app.save(update_fields=["sequence_redundancy"])

    def make(replicas: int = 2):
        spec = SequenceSpec(
            name="r",
            job=step_job(),
            max_result_time=4 * DAY,
            length=6,
            restartable_every=2,
            replicas=replicas,
        )
        primary = sequence_create(project=project, app=cpu_app, spec=spec, now=now)
        return [primary, *WorkSequence.objects.filter(replica_of=primary).order_by("id")]

    return make


def _compute(host, seq, steps, now):
    """``host`` reports ``steps`` steps of ``seq``, each validated alone by the validator."""
    for _ in range(steps):
        now += timedelta(days=3)
        task = host.next_task(seq)
        host.rpc(now, finish=(task,))
        validate(task, now)
    return now


def _head(seq):
    return WorkSequence.objects.get(id=seq.id)


def test_each_chain_goes_to_a_different_host(chains, computer, now):
    _r, _r1 = chains()
    a, b = computer("a"), computer("b")
    assert a.rpc(now).work_sequences_assigned == ("r",)
    assert b.rpc(now).work_sequences_assigned == ("r_r1",)


def test_a_checkpoint_counts_only_once_the_chains_agree(chains, computer, now):
    r, r1 = chains()
    a, b = computer("a"), computer("b")
    a.rpc(now)
    b.rpc(now)
    _compute(a, r, 2, now)
    head = _head(r)
    assert head.checkpoint_result is None  # step 1 validated alone, not yet compared
    assert head.first_unvalidated.sequence_index == 1
    _compute(b, r1, 2, now)
    assert _head(r1).checkpoint_result.name == "r_r1_s1_0"
    validate("r_s1_0", now + timedelta(days=7))  # the validator's next call for chain r (or the daemon)
    head = _head(r)
    assert head.checkpoint_result.name == "r_s1_0"
    assert head.first_unvalidated.sequence_index == 2


def test_a_chain_that_disagrees_continues_from_the_agreed_state_on_another_host(chains, computer, now):
    r, r1, r2 = chains(replicas=3)
    a, b, c, d = computer("a"), computer("b"), computer("c"), computer("d")
    c.faulty = True
    for host in (a, b, c):
        host.rpc(now)
    _compute(a, r, 2, now)
    _compute(b, r1, 2, now)
    _compute(c, r2, 2, now)
    bad = _head(r2)
    assert bad.state == SequenceState.UNASSIGNED
    assert bad.checkpoint_result.name == "r_s1_0"  # the agreed state, adopted from chain r
    assert bad.first_undispatched.sequence_index == 2
    assert Result.objects.get(name="r_r2_s1_0").validate_state == ValidateState.INVALID
    # c holds no chain now, but it computed one of these: it may not take another.
    assert c.rpc(now + timedelta(days=7)).work_sequences_assigned == ()
    reply = d.rpc(now + timedelta(days=7))
    assert reply.work_sequences_assigned == ("r_r2",)
    assert reply.results[0].name == "r_r2_s2_1"
    infos = {f.name: f for f in reply.file_infos}
    assert infos["r_s1_0_0"].download_urls  # d downloads chain r's checkpoint state


@pytest.fixture
def open_chains(project, cpu_app, now):
    cpu_app.sequence_redundancy = True
    cpu_app.save(update_fields=["sequence_redundancy"])
    spec = SequenceSpec(
        name="r", job=step_job(), max_result_time=4 * DAY, length=None, initial_steps=3, restartable_every=2
    )
    primary = sequence_create(project=project, app=cpu_app, spec=spec, now=now)
    return [primary, *WorkSequence.objects.filter(replica_of=primary).order_by("id")]


def test_extending_a_replicated_sequence_extends_every_chain(open_chains, now):
    primary, replica = open_chains
    assert sequence_extend(sequence_id=primary.id, n_steps=5, final=True, now=now) == 5
    for chain in (primary, replica):
        chain.refresh_from_db()
        assert (chain.workunits.count(), chain.expected_length) == (8, 8)


def test_ending_a_replicated_sequence_ends_every_chain_and_tells_their_hosts(open_chains, computer, now):
    _primary, replica = open_chains
    a, b = computer("a"), computer("b")
    a.rpc(now)
    b.rpc(now)
    assert sequence_end(sequence_id=replica.id, now=now) is True
    assert {s.state for s in WorkSequence.objects.all()} == {SequenceState.ENDED}
    later = now + timedelta(hours=1)
    assert (a.rpc(later).work_sequences_ended, b.rpc(later).work_sequences_ended) == (("r",), ("r_r1",))
