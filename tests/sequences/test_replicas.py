"""Redundancy: replica chains on different hosts, compared at checkpoints."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.sequences.models import WorkSequence
from apps.sequences.services import (
    SequenceSpec,
    sequence_create,
    sequence_end,
    sequence_extend,
    sequence_refresh,
)
from apps.work.domain.states import SequenceState, ServerState, ValidateState
from apps.work.models import Result
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


def _agree_then_disagree(chains, computer, now):
    """Chains r (host a) and r_r1 (host b) agree at checkpoint 1, then b computes wrong state."""
    r, r1 = chains()
    a, b = computer("a"), computer("b")
    a.rpc(now)
    b.rpc(now)
    _compute(a, r, 2, now)
    _compute(b, r1, 2, now)
    sequence_refresh(sequence_id=r.id, now=now + timedelta(days=6))
    assert _head(r).checkpoint_result.name == "r_s1_0"
    b.faulty = True
    _compute(a, r, 2, now + timedelta(days=6))
    later = _compute(b, r1, 2, now + timedelta(days=6))
    for chain in (r, r1):  # the validator's or the daemon's next call for each chain
        sequence_refresh(sequence_id=chain.id, now=later)
    return r, r1, later


def test_disagreeing_chains_both_restart_from_the_last_agreed_checkpoint(chains, computer, now):
    r, r1, later = _agree_then_disagree(chains, computer, now)
    for chain, agreed in ((r, "r_s1_0"), (r1, "r_r1_s1_0")):
        head = _head(chain)
        assert head.state == SequenceState.UNASSIGNED
        assert head.checkpoint_result.name == agreed
        assert head.first_undispatched.sequence_index == 2
        assert head.n_disagreements == 1
    assert Result.objects.get(name="r_s3_0").validate_state == ValidateState.INVALID
    assert Result.objects.get(name="r_r1_s3_0").validate_state == ValidateState.INVALID
    c, d = computer("c"), computer("d")
    reply = c.rpc(later + timedelta(days=7))
    assert (reply.work_sequences_assigned, reply.results[0].name) == (("r",), "r_s2_1")
    reply = d.rpc(later + timedelta(days=7))
    assert (reply.work_sequences_assigned, reply.results[0].name) == (("r_r1",), "r_r1_s2_1")


def test_chains_that_keep_disagreeing_end_in_error_with_the_reason(project, chains, computer, now):
    project.sequence_max_disagreements = 0
    project.save(update_fields=["sequence_max_disagreements"])
    r, r1, _later = _agree_then_disagree(chains, computer, now)
    reason = "the replica chains disagreed at step 3 (1 time; the project allows 0 restarts)"
    assert (_head(r1).state, _head(r1).error_reason) == (SequenceState.ERROR, reason)
    # Chain r saw its sibling fail first: no quorum can form without it.
    assert (_head(r).state, _head(r).error_reason) == (
        SequenceState.ERROR,
        f"replica chain r_r1 ended in error: {reason}",
    )
    assert not Result.objects.filter(
        workunit__sequence_id__in=[r.id, r1.id], server_state=ServerState.INACTIVE
    ).exists()


def test_a_chain_in_error_ends_its_siblings(project, chains, computer, now):
    r, r1 = chains()
    WorkSequence.objects.filter(id=r.id).update(state=SequenceState.ERROR, error_reason="relocated too often")
    sequence_refresh(sequence_id=r1.id, now=now)
    head = _head(r1)
    assert head.state == SequenceState.ERROR
    assert head.error_reason == "replica chain r ended in error: relocated too often"


def _agree_then_disagree_at_the_end(chains, computer, now):
    """Chains r (host a) and r_r1 (host b) agree at checkpoints 1 and 3; then b computes wrong
    state for the last two steps, so they disagree at step 5, the final checkpoint."""
    r, r1 = chains()
    a, b = computer("a"), computer("b")
    a.rpc(now)
    b.rpc(now)
    for start in (now, now + timedelta(days=6)):
        _compute(a, r, 2, start)
        _compute(b, r1, 2, start)
        for chain in (r, r1):
            sequence_refresh(sequence_id=chain.id, now=start + timedelta(days=6))
    assert _head(r).checkpoint_result.name == "r_s3_0"
    b.faulty = True
    _compute(a, r, 2, now + timedelta(days=12))
    later = _compute(b, r1, 2, now + timedelta(days=12))
    for chain in (r, r1):
        sequence_refresh(sequence_id=chain.id, now=later)
    return r, r1, later


def test_chains_that_disagree_at_the_final_checkpoint_restart_from_the_last_agreed_one(chains, computer, now):
    r, r1, later = _agree_then_disagree_at_the_end(chains, computer, now)
    for chain, agreed in ((r, "r_s3_0"), (r1, "r_r1_s3_0")):
        head = _head(chain)
        # Not ENDED although every step has a validated result: the last one is not agreed.
        assert head.state == SequenceState.UNASSIGNED
        assert head.checkpoint_result.name == agreed
        assert head.first_undispatched.sequence_index == 4
        assert head.n_disagreements == 1
    assert Result.objects.get(name="r_s5_0").validate_state == ValidateState.INVALID
    assert Result.objects.get(name="r_r1_s5_0").validate_state == ValidateState.INVALID
    c, d = computer("c"), computer("d")
    reply = c.rpc(later + timedelta(days=7))
    assert (reply.work_sequences_assigned, reply.results[0].name) == (("r",), "r_s4_1")
    reply = d.rpc(later + timedelta(days=7))
    assert (reply.work_sequences_assigned, reply.results[0].name) == (("r_r1",), "r_r1_s4_1")


def test_chains_restarted_after_disagreeing_at_the_final_checkpoint_end_once_they_agree(
    chains, computer, now
):
    r, r1, later = _agree_then_disagree_at_the_end(chains, computer, now)
    c, d = computer("c"), computer("d")
    c.rpc(later)
    d.rpc(later)
    _compute(c, r, 2, later)
    done = _compute(d, r1, 2, later)
    for chain in (r, r1):
        sequence_refresh(sequence_id=chain.id, now=done)
    assert [(_head(chain).state, _head(chain).checkpoint_result.name) for chain in (r, r1)] == [
        (SequenceState.ENDED, "r_s5_1"),
        (SequenceState.ENDED, "r_r1_s5_1"),
    ]


def test_chains_that_disagree_at_the_final_checkpoint_once_too_often_end_in_error(
    project, chains, computer, now
):
    project.sequence_max_disagreements = 0
    project.save(update_fields=["sequence_max_disagreements"])
    r, r1, _later = _agree_then_disagree_at_the_end(chains, computer, now)
    reason = "the replica chains disagreed at step 5 (1 time; the project allows 0 restarts)"
    assert (_head(r1).state, _head(r1).error_reason) == (SequenceState.ERROR, reason)
    assert (_head(r).state, _head(r).error_reason) == (
        SequenceState.ERROR,
        f"replica chain r_r1 ended in error: {reason}",
    )
