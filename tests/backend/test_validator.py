"""The validator service: quorum, canonical result, case A, comparisons, unreadable outputs."""

from __future__ import annotations

import errno
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection

from apps.work.domain.states import AssimilateState, Outcome, ServerState, ValidateState
from apps.work.models import Result, Workunit
from apps.work.services import workunits_transition, workunits_validate
from tests.backend.conftest import make_wu, refresh, report, results_of, send

pytestmark = pytest.mark.django_db


def _reported(project, app, version, hosts, now, outputs, **wu_kw):
    """A workunit whose results were sent to hosts and reported with ``outputs``."""
    wu = make_wu(project, app, now, **wu_kw)
    for i, (r, out) in enumerate(zip(results_of(wu), outputs, strict=False)):
        send(r, hosts[i], version, now)
        report(r, now + timedelta(minutes=10), output=out)
    workunits_transition(project=project, now=now + timedelta(minutes=11))
    return wu


def _states(wu):
    return [ValidateState(r.validate_state) for r in results_of(wu)]


def test_agreeing_results_make_a_canonical_result_and_hand_it_to_the_assimilator(
    project, app, version, hosts, now
):
    wu = _reported(project, app, version, hosts, now, [b"1 2 3\n", b"1 2 3\n"])
    outcome = workunits_validate(project=project, now=now + timedelta(minutes=12))
    wu.refresh_from_db()
    assert outcome.items == 1
    assert _states(wu) == [ValidateState.VALID, ValidateState.VALID]
    assert wu.canonical_result_id == results_of(wu)[0].id
    assert wu.assimilate_state == AssimilateState.READY
    assert wu.need_validate is False
    assert all(r.granted_credit > 0 for r in results_of(wu))
    assert wu.canonical_credit == results_of(wu)[0].granted_credit


def test_disagreeing_results_are_inconclusive_and_a_third_replica_is_made(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"1\n", b"2\n"])
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    wu.refresh_from_db()
    assert _states(wu) == [ValidateState.INCONCLUSIVE, ValidateState.INCONCLUSIVE]
    assert wu.canonical_result_id is None
    assert wu.target_nresults == 3
    workunits_transition(project=project, now=now + timedelta(minutes=13))
    assert [r.name for r in results_of(wu)] == ["wu_0", "wu_1", "wu_2"]

    third = results_of(wu)[2]
    send(third, hosts[2], version, now + timedelta(minutes=14))
    report(third, now + timedelta(minutes=20), output=b"2\n")
    workunits_transition(project=project, now=now + timedelta(minutes=21))
    workunits_validate(project=project, now=now + timedelta(minutes=22))
    wu.refresh_from_db()
    assert _states(wu) == [ValidateState.INVALID, ValidateState.VALID, ValidateState.VALID]
    assert wu.canonical_result_id == results_of(wu)[1].id
    assert results_of(wu)[0].granted_credit == 0


def test_a_result_whose_output_is_missing_gets_validate_error(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"7\n", b"7\n"])
    missing = results_of(wu)[1]
    (project.upload_dir / missing.output_files.get().name).unlink()
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    missing.refresh_from_db()
    assert (missing.outcome, missing.validate_state) == (Outcome.VALIDATE_ERROR, ValidateState.INVALID)
    wu.refresh_from_db()
    assert wu.canonical_result_id is None
    # The validate error frees a slot: the transitioner makes a new replica.
    workunits_transition(project=project, now=now + timedelta(minutes=13))
    assert len(results_of(wu)) == 3


def test_single_replication_validates_alone(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"x\n"], min_quorum=1, target_nresults=1)
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    wu.refresh_from_db()
    assert wu.canonical_result_id == results_of(wu)[0].id
    assert _states(wu) == [ValidateState.VALID]


def test_case_a_a_late_matching_result_gets_the_canonical_credit(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"], target_nresults=3)
    late = results_of(wu)[2]
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    send(late, hosts[2], version, now)
    report(late, now + timedelta(minutes=30), output=b"5\n", elapsed=9999)
    workunits_transition(project=project, now=now + timedelta(minutes=31))
    workunits_validate(project=project, now=now + timedelta(minutes=32))
    wu.refresh_from_db()
    late.refresh_from_db()
    assert late.validate_state == ValidateState.VALID
    assert late.granted_credit == wu.canonical_credit


def test_case_a_a_late_differing_result_is_invalid(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"], target_nresults=3)
    late = results_of(wu)[2]
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    send(late, hosts[2], version, now)
    report(late, now + timedelta(minutes=30), output=b"6\n")
    workunits_transition(project=project, now=now + timedelta(minutes=31))
    workunits_validate(project=project, now=now + timedelta(minutes=32))
    late.refresh_from_db()
    assert late.validate_state == ValidateState.INVALID
    assert late.granted_credit == 0


def test_unsent_siblings_are_withdrawn_at_consensus(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"], target_nresults=3)
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    unsent = results_of(wu)[2]
    assert (unsent.server_state, unsent.outcome) == (ServerState.OVER, Outcome.DIDNT_NEED)


def test_tolerant_numeric_comparison_accepts_small_differences(project, app, version, hosts, now):
    app.validator, app.validator_rel_tol = "tolerant_numeric", 1e-3
    app.save()
    wu = _reported(project, app, version, hosts, now, [b"1.0000 abc 2e3\n", b"1.0001 abc 2000\n"])
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    assert _states(wu) == [ValidateState.VALID, ValidateState.VALID]


def test_trivial_comparison_accepts_any_outputs(project, app, version, hosts, now):
    app.validator = "trivial"
    app.save()
    wu = _reported(project, app, version, hosts, now, [b"a\n", b"b\n"])
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    assert _states(wu) == [ValidateState.VALID, ValidateState.VALID]


def test_an_unreadable_upload_area_is_retried_later_not_failed(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"])
    project.upload_dir.rename(project.data_dir / "moved")
    at = now + timedelta(minutes=12)
    outcome = workunits_validate(project=project, now=at)
    wu.refresh_from_db()
    assert outcome.errors == 1
    assert _states(wu) == [ValidateState.INIT, ValidateState.INIT]
    assert wu.need_validate is False
    # BOINC's min(transition time, now + 6 h): the 10-day safety net gives way to 6 h, not
    # to the claim's 10-minute lease (which would retry and log every 10 minutes).
    assert wu.transition_time == at + timedelta(hours=6)


def test_an_output_that_cannot_be_read_now_delays_only_its_workunit(
    monkeypatch, project, app, version, hosts, now
):
    stuck = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"], name="stuck")
    fine = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"], name="fine")
    unreadable = results_of(stuck)[0].output_files.get().name
    read_bytes = Path.read_bytes

    def failing_disk(path: Path) -> bytes:
        if path.name == unreadable:
            raise OSError(errno.EIO, "Input/output error")
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", failing_disk)
    at = now + timedelta(minutes=12)
    outcome = workunits_validate(project=project, now=at)

    stuck, fine = refresh(stuck, fine)
    assert (outcome.items, outcome.errors) == (1, 1)
    assert fine.canonical_result_id is not None
    assert (stuck.canonical_result_id, stuck.transition_time) == (None, at + timedelta(hours=6))


def test_a_second_validator_pass_changes_nothing(project, app, version, hosts, now):
    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"])
    workunits_validate(project=project, now=now + timedelta(minutes=12))
    before = list(Result.objects.filter(workunit=wu).values())
    Workunit.objects.filter(id=wu.id).update(need_validate=True)  # as if flagged again
    assert workunits_validate(project=project, now=now + timedelta(minutes=13)).items == 0
    assert list(Result.objects.filter(workunit=wu).values()) == before


def test_a_validator_that_dies_after_its_claim_leaves_the_workunit_to_be_flagged_again(
    project, app, version, hosts, now
):
    from apps.work.services.validator import workunits_claim

    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"])
    at = now + timedelta(minutes=12)
    # ... and the worker is killed before validating.
    assert [c.id for c in workunits_claim(app_id=app.id, now=at, limit=10)] == [wu.id]
    assert workunits_claim(app_id=app.id, now=at, limit=10) == []
    workunits_transition(project=project, now=at + timedelta(minutes=11))
    wu.refresh_from_db()
    assert wu.need_validate is True
    workunits_validate(project=project, now=at + timedelta(minutes=12))
    wu.refresh_from_db()
    assert wu.canonical_result_id is not None


def test_a_validator_claim_replaces_a_transitioners_lease_so_a_dead_validator_is_noticed(
    project, app, version, hosts, now
):
    """A transitioner holding the workunit commits its planned time only where its own lease
    is still there: the validator's claim must take that place, or nobody flags it again."""
    from apps.work.services.transitioner import Claim, workunits_transition_batch
    from apps.work.services.validator import CLAIM_LEASE, workunits_claim

    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"])
    at = now + timedelta(minutes=12)
    transitioner_lease = at + timedelta(minutes=9)
    Workunit.objects.filter(id=wu.id).update(transition_time=transitioner_lease)
    assert [c.id for c in workunits_claim(app_id=app.id, now=at, limit=10)] == [wu.id]
    # The transitioner's batch, begun before the claim, commits after it.
    workunits_transition_batch([Claim(wu.id, transitioner_lease)], at)
    wu.refresh_from_db()
    # The validator's lease (its own by the microseconds), not the plan's time.
    assert at + CLAIM_LEASE <= wu.transition_time < at + CLAIM_LEASE + timedelta(seconds=1)
    # The validator dies; when its lease runs out the transitioner flags the workunit again.
    workunits_transition(project=project, now=at + CLAIM_LEASE + timedelta(seconds=1))
    wu.refresh_from_db()
    assert wu.need_validate is True


def test_a_validator_claim_keeps_a_transition_time_already_due(project, app, version, hosts, now):
    from apps.work.services.validator import workunits_claim

    wu = _reported(project, app, version, hosts, now, [b"5\n", b"5\n"])
    at = now + timedelta(minutes=12)
    due = at - timedelta(seconds=30)
    Workunit.objects.filter(id=wu.id).update(transition_time=due)
    workunits_claim(app_id=app.id, now=at, limit=10)
    wu.refresh_from_db()
    assert wu.transition_time == due


# A pass reads and writes each table it touches once per batch, whatever the number of its
# workunits and of their results. The pass: apps, the claim (SQLite: select and update, in a
# savepoint pair inside the test's transaction). The batch: before its locks, results with
# their workunits, the app, output files; then (a savepoint pair here) the
# host_app_versions' lock (PostgreSQL), results (locked), workunits, apps;
# host_app_versions, hosts, app versions, accounts, teams, per-app credit (both tables), the
# partial credit trickles granted, and their writes, the per-app and history inserts (every
# row is new here), history; the unsent siblings, the results and the workunits.
BATCH_STATEMENTS = {"sqlite": 32, "postgresql": 30}


@pytest.mark.parametrize(("workunits", "replicas"), [(1, 2), (1, 4), (6, 2)])
def test_validation_statements_do_not_grow_with_the_workunits_or_their_results(
    project, app, version, hosts, now, workunits, replicas, django_assert_num_queries
):
    wus = [
        _reported(
            project, app, version, hosts, now, [b"5\n"] * replicas, name=f"wu{i}", target_nresults=replicas
        )
        for i in range(workunits)
    ]
    with django_assert_num_queries(BATCH_STATEMENTS[connection.vendor]):
        outcome = workunits_validate(project=project, now=now + timedelta(minutes=12))
    assert outcome.items == workunits
    assert [_states(wu) for wu in wus] == [[ValidateState.VALID] * replicas] * workunits
