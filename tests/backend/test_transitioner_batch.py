"""The transitioner's batches: many workunits claimed, read and written together.

A pass claims its due workunits a batch at a time, reads each table once per batch, and
writes each table once per batch; a batch that fails is tried again one workunit at a time.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import apps.work.services.transitioner as transitioner
from apps.hosts.models import HostAppVersion
from apps.work.domain.states import (
    AssimilateState,
    ErrorMask,
    FileDeleteState,
    Outcome,
    ServerState,
    ValidateState,
)
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import OutputSpec, result_create, workunit_transition, workunits_transition
from apps.work.services.create import results_create
from apps.work.services.transitioner import _claim_due, workunits_transition_batch
from tests.backend.conftest import make_wu, report, results_of, send

pytestmark = pytest.mark.django_db


def make_wus(project, app, now, n: int, *, prefix: str = "wu", **kw) -> list[Workunit]:
    return [make_wu(project, app, now, f"{prefix}{i}", create_results=False, **kw) for i in range(n)]


def statements_of_a_pass(project, now, **kw) -> int:
    with CaptureQueriesContext(connection) as queries:
        outcome = workunits_transition(project=project, now=now, **kw)
    assert outcome.errors == 0
    return len(queries)


def test_a_pass_makes_every_new_workunits_results_with_their_output_files(project, app, now):
    wus = make_wus(project, app, now, 5, outputs=(OutputSpec(open_name="a"), OutputSpec(open_name="b")))
    outcome = workunits_transition(project=project, now=now)
    assert (outcome.items, outcome.errors, outcome.message) == (5, 0, "5 due")
    for wu in wus:
        results = results_of(wu)
        assert [r.name for r in results] == [f"{wu.name}_0", f"{wu.name}_1"]
        files = OutputFile.objects.filter(result__workunit=wu).order_by("result_id", "ordinal")
        assert [(f.name, f.open_name) for f in files] == [
            (f"{r.name}_{i}", name) for r in results for i, name in enumerate("ab")
        ]
        assert all(f.xml_signature for f in files)
        wu.refresh_from_db()
        assert wu.transition_time > now  # the lease was replaced by the safety net


def test_a_pass_costs_the_same_statements_for_few_or_many_workunits(project, app, now):
    make_wus(project, app, now, 2, prefix="few")
    few = statements_of_a_pass(project, now)
    make_wus(project, app, now, 12, prefix="many")
    many = statements_of_a_pass(project, now)
    assert Result.objects.count() == 2 * 14
    assert many == few


def test_a_pass_claims_batch_after_batch_up_to_its_limit(monkeypatch, project, app, now):
    monkeypatch.setattr(transitioner, "CLAIM_BATCH", 2)
    wus = make_wus(project, app, now, 5)
    outcome = workunits_transition(project=project, now=now, limit=3)
    assert (outcome.items, outcome.message) == (3, "3 due")
    assert [len(results_of(wu)) for wu in wus] == [2, 2, 2, 0, 0]
    outcome = workunits_transition(project=project, now=now)
    assert (outcome.items, outcome.message) == (2, "2 due")
    assert [len(results_of(wu)) for wu in wus] == [2] * 5


def test_claims_are_oldest_first_and_a_claimed_workunit_is_not_claimed_again(project, app, now):
    wus = make_wus(project, app, now, 3)
    Workunit.objects.filter(id=wus[2].id).update(transition_time=now - timedelta(hours=2))
    first = _claim_due(project.id, now, 2)
    assert [c.workunit_id for c in first] == [wus[2].id, wus[0].id]
    assert [c.lag for c in first] == [timedelta(hours=2), timedelta(0)]
    assert [c.workunit_id for c in _claim_due(project.id, now, 10)] == [wus[1].id]
    assert _claim_due(project.id, now, 10) == []
    lease = Workunit.objects.get(id=wus[2].id).transition_time
    assert lease == first[0].lease > now


def test_a_workunit_that_fails_holds_up_only_itself(monkeypatch, project, app, now, caplog):
    wus = make_wus(project, app, now, 4)
    plan = transitioner.plan_transition

    def fails_for_one(wu, *args, **kw):
        if wu.id == wus[1].id:
            raise RuntimeError("broken workunit")
        return plan(wu, *args, **kw)

    monkeypatch.setattr(transitioner, "plan_transition", fails_for_one)
    outcome = workunits_transition(project=project, now=now)
    assert (outcome.items, outcome.errors) == (3, 1)
    assert [len(results_of(wu)) for wu in wus] == [2, 0, 2, 2]
    # The failed one keeps its lease: the next pass tries it again once it runs out.
    failed = Workunit.objects.get(id=wus[1].id)
    assert now < failed.transition_time <= now + transitioner.CLAIM_LEASE + timedelta(seconds=1)
    assert workunits_transition(project=project, now=now).items == 0
    monkeypatch.setattr(transitioner, "plan_transition", plan)
    later = now + transitioner.CLAIM_LEASE + timedelta(seconds=1)
    assert workunits_transition(project=project, now=later).items == 1
    assert len(results_of(wus[1])) == 2


def test_the_lease_rule_holds_for_each_workunit_of_a_batch(project, app, now):
    wus = make_wus(project, app, now, 3)
    claims = _claim_due(project.id, now, 10)
    Workunit.objects.filter(id=wus[1].id).update(transition_time=now)  # a report lowers it
    outcomes = workunits_transition_batch(claims, now)
    assert [o.created for o in outcomes] == [2, 2, 2]
    times = dict(Workunit.objects.filter(id__in=[w.id for w in wus]).values_list("id", "transition_time"))
    assert times[wus[1].id] == now
    assert times[wus[0].id] == times[wus[2].id] > claims[0].lease


def test_time_outs_in_several_workunits_judge_each_host_and_make_replacements(
    project, app, version, hosts, now
):
    a = make_wu(project, app, now, "a", delay_bound=3600)
    b = make_wu(project, app, now, "b", delay_bound=7200)
    for wu, (h0, h1) in ((a, hosts[:2]), (b, hosts[2:])):
        r0, r1 = results_of(wu)
        send(r0, h0, version, now, delay=3600)
        send(r1, h1, version, now)
    workunits_transition(project=project, now=now)
    rates = {h.id: HostAppVersion.objects.get(host=h).error_rate for h in hosts}

    later = now + timedelta(seconds=3600 + 3600 + 1)  # past the deadline and the grace period
    Workunit.objects.filter(id__in=[a.id, b.id]).update(transition_time=later)
    outcome = workunits_transition(project=project, now=later)
    assert outcome.items == 2
    for wu, (h0, h1) in ((a, hosts[:2]), (b, hosts[2:])):
        r0, r1, new = results_of(wu)
        assert (r0.server_state, r0.outcome) == (ServerState.OVER, Outcome.NO_REPLY)
        assert r1.server_state == ServerState.IN_PROGRESS
        assert (new.name, new.server_state) == (f"{wu.name}_2", ServerState.UNSENT)
        assert HostAppVersion.objects.get(host=h0).error_rate > rates[h0.id]
        assert HostAppVersion.objects.get(host=h1).error_rate == rates[h1.id]
    # Each host's turnaround took its own workunit's delay bound.
    turnaround = {h.id: HostAppVersion.objects.get(host=h).turnaround_avg for h in (hosts[0], hosts[2])}
    assert turnaround[hosts[0].id] != turnaround[hosts[2].id]


def test_one_batch_withdraws_checks_and_marks_files_across_workunits(project, app, version, hosts, now):
    cancelled = make_wu(project, app, now, "cancelled")
    done = make_wu(project, app, now, "done")
    c0, _c1 = results_of(cancelled)
    send(c0, hosts[0], version, now)
    report(c0, now)
    d0, d1 = results_of(done)
    for r, h in ((d0, hosts[1]), (d1, hosts[2])):
        send(r, h, version, now)
        report(r, now)
    Workunit.objects.filter(id=cancelled.id).update(error_mask=ErrorMask.CANCELLED)
    Workunit.objects.filter(id=done.id).update(
        canonical_result=d0, assimilate_state=AssimilateState.DONE, need_validate=False
    )
    Result.objects.filter(id__in=[d0.id, d1.id]).update(validate_state=ValidateState.VALID)

    outcome = workunits_transition(project=project, now=now)
    assert (outcome.items, outcome.errors) == (2, 0)
    c0, c1 = results_of(cancelled)
    assert c0.validate_state == ValidateState.NO_CHECK
    assert (c1.server_state, c1.outcome) == (ServerState.OVER, Outcome.DIDNT_NEED)
    cancelled.refresh_from_db()
    assert cancelled.assimilate_state == AssimilateState.READY
    assert cancelled.transition_time is None
    assert [r.file_delete_state for r in results_of(done)] == [FileDeleteState.READY] * 2
    done.refresh_from_db()
    assert done.file_delete_state == FileDeleteState.READY
    assert workunits_transition(project=project, now=now).items == 0


def test_workunit_transition_of_a_workunit_that_does_not_exist_raises(now):
    with pytest.raises(Workunit.DoesNotExist):
        workunit_transition(workunit_id=987654, now=now)


def test_results_create_writes_what_result_create_writes(project, app, now):
    outputs = (OutputSpec(open_name="x", max_nbytes=123, optional=True), OutputSpec(gzip_when_done=True))
    one = make_wu(project, app, now, "one", create_results=False, outputs=outputs, priority=7)
    many = make_wu(project, app, now, "many", create_results=False, outputs=outputs, priority=7)
    single = result_create(workunit=one, name="one_0")
    ids = results_create(new=[(many, "many_0"), (many, "many_1")], server_state=ServerState.INACTIVE)
    assert len(set(ids)) == 2

    skip = {"id", "workunit", "name", "create_time", "server_state"}
    fields = [f.attname for f in Result._meta.concrete_fields if f.name not in skip]
    expected = Result.objects.filter(id=single.id).values(*fields).get()
    for rid, name in zip(ids, ("many_0", "many_1"), strict=True):
        row = Result.objects.get(id=rid)
        assert (row.name, row.workunit_id, row.server_state) == (name, many.id, ServerState.INACTIVE)
        assert Result.objects.filter(id=rid).values(*fields).get() == expected
        assert abs(row.create_time - single.create_time) < timedelta(minutes=1)

    file_fields = [f.attname for f in OutputFile._meta.concrete_fields if f.name not in {"id", "result"}]

    def files(rid, old, new):
        rows = list(OutputFile.objects.filter(result_id=rid).order_by("ordinal").values(*file_fields))
        return [{k: v.replace(old, new) if k == "name" else v for k, v in r.items()} for r in rows]

    # The same columns, the certificates aside (each signs its own file's name).
    plain = [{k: v for k, v in r.items() if k != "xml_signature"} for r in files(single.id, "one_0", "x")]
    assert [
        {k: v for k, v in r.items() if k != "xml_signature"} for r in files(ids[0], "many_0", "x")
    ] == plain
    assert all(f.xml_signature for f in OutputFile.objects.filter(result_id__in=ids))


def test_results_create_of_nothing_writes_nothing():
    with CaptureQueriesContext(connection) as queries:
        assert results_create(new=[]) == []
    assert len(queries) == 0
