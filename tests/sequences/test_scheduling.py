"""The sequence source and the per-RPC reconciliation, one behaviour per test."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.protocol import OtherResult
from apps.scheduler.services import scheduler_request_handle
from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import Outcome, SequenceState, ServerState
from apps.work.models import Result
from tests.scheduler.conftest import PLATFORM, make_jobs
from tests.sequences.conftest import DAY, STEP_FPOPS, step_job

pytestmark = pytest.mark.django_db


def _sequence(project, app, now, name="seq", length=10, **kw):
    spec = SequenceSpec(name=name, job=step_job(), max_result_time=4 * DAY, length=length, **kw)
    return sequence_create(project=project, app=app, spec=spec, now=now)


def test_host_asking_for_nothing_is_kept_two_steps_ahead(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    reply = host.rpc(now + timedelta(days=3), finish=(host.next_task(seq),), seconds=0)
    assert [r.name for r in reply.results] == ["seq_s2_0"]
    assert sorted(host.tasks) == ["seq_s1_0", "seq_s2_0"]


def test_larger_request_gets_more_steps_in_order(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    reply = computer("a").rpc(now, seconds=4 * STEP_FPOPS / 1e9)
    assert [r.name for r in reply.results] == [f"seq_s{i}_0" for i in range(4)]
    seq.refresh_from_db()
    assert seq.first_undispatched.sequence_index == 4


def test_two_hosts_never_share_a_sequence(project, cpu_app, computer, now):
    _sequence(project, cpu_app, now, name="one")
    _sequence(project, cpu_app, now, name="two")
    a, b, c = computer("a"), computer("b"), computer("c")
    assert a.rpc(now).work_sequences_assigned == ("one",)
    assert b.rpc(now).work_sequences_assigned == ("two",)
    assert c.rpc(now).results == ()
    assert {s.assigned_host_id for s in WorkSequence.objects.all()} == {a.hostid, b.hostid}


def test_conditional_claim_refuses_a_sequence_taken_meanwhile(project, cpu_app, computer, now, monkeypatch):
    seq = _sequence(project, cpu_app, now)
    other = computer("other")
    other.rpc(now - timedelta(days=1), seconds=0)  # a host row to hold it
    import apps.scheduler.services.sources.sequences as source

    real = source.heads_locked

    def racing(qs, **kw):  # another RPC claims it between the read and the claim
        rows = list(real(qs, **kw))
        WorkSequence.objects.filter(id=seq.id).update(
            state=SequenceState.ASSIGNED, assigned_host_id=other.hostid
        )
        return rows

    monkeypatch.setattr(source, "heads_locked", racing)
    reply = computer("a").rpc(now)
    assert reply.work_sequences_assigned == ()
    assert reply.results == ()


def test_slow_host_never_gets_a_sequence_it_cannot_meet(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    reply = computer("slow", p_fpops=5e8).rpc(now, seconds=DAY)
    assert reply.results == ()
    assert any("not fast enough" in m.text for m in reply.messages)
    seq.refresh_from_db()
    assert seq.state == SequenceState.UNASSIGNED


def test_a_host_holding_a_sequence_gets_no_second_one(project, cpu_app, computer, now):
    _sequence(project, cpu_app, now, name="one")
    _sequence(project, cpu_app, now, name="two")
    host = computer("a")
    host.rpc(now)
    reply = host.rpc(now + timedelta(hours=1), seconds=10 * DAY)
    assert reply.work_sequences_assigned == ()
    assert all(r.name.startswith("one_") for r in reply.results)


def test_fraction_bound_leaves_room_for_other_work(project, cpu_app, computer, now, worker):
    other = app_create(project=project, name="other", user_friendly_name="Other")
    app_version_add(
        project=project,
        app_name="other",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    make_jobs(project, other, 10, prefix="plain", fpops_est=STEP_FPOPS, delay_bound=30 * DAY)
    _sequence(project, cpu_app, now)
    cpu_app.max_sequence_job_fraction = 0.5
    cpu_app.save(update_fields=["max_sequence_job_fraction"])
    reply = computer("a").rpc(now, seconds=8 * STEP_FPOPS / 1e9)
    names = [r.name for r in reply.results]
    steps = [n for n in names if n.startswith("seq_")]
    assert len(steps) == 4  # half of the 8 jobs asked for
    assert len(names) - len(steps) == 4


def test_without_the_bound_sequence_work_comes_first(project, cpu_app, computer, now, worker):
    other = app_create(project=project, name="other", user_friendly_name="Other")
    app_version_add(
        project=project,
        app_name="other",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    make_jobs(project, other, 10, prefix="plain", fpops_est=STEP_FPOPS, delay_bound=30 * DAY)
    _sequence(project, cpu_app, now)
    reply = computer("a").rpc(now, seconds=4 * STEP_FPOPS / 1e9)
    assert [r.name for r in reply.results] == [f"seq_s{i}_0" for i in range(4)]


def test_stock_client_that_lost_its_tasks_loses_the_sequence(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    host.tasks = []  # the client was reset: it lists nothing
    reply = host.rpc(now + timedelta(hours=1), seconds=0)
    assert reply.work_sequences_unassigned == ("seq",)
    seq.refresh_from_db()
    assert (seq.state, seq.first_undispatched.sequence_index, seq.n_relocations) == (
        SequenceState.UNASSIGNED,
        0,
        1,
    )
    assert set(
        Result.objects.filter(name__in=["seq_s0_0", "seq_s1_0"]).values_list("outcome", flat=True)
    ) == {Outcome.DIDNT_NEED}


def test_idle_holder_keeps_its_sequence(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now, length=1)
    host = computer("a")
    host.rpc(now)
    reply = host.rpc(now + timedelta(days=3), finish=("seq_s0_0",))
    assert reply.work_sequences_unassigned == ()
    host.rpc(now + timedelta(days=3, hours=1))  # lists nothing, holds nothing in progress
    seq.refresh_from_db()
    assert seq.state == SequenceState.ASSIGNED


def test_steps_of_a_lost_reply_are_sent_again(project, cpu_app, computer, now):
    _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    host.tasks = ["seq_s0_0"]  # the reply that carried step 1 never arrived
    reply = host.rpc(now + timedelta(hours=1), seconds=0)
    assert [r.name for r in reply.results] == ["seq_s1_0"]
    assert Result.objects.get(name="seq_s1_0").sent_time == now + timedelta(hours=1)


def test_cobblestone_client_list_is_authoritative(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    base = make_request_for(host, now)
    reply = scheduler_request_handle(
        project=project, req=replace(base, work_sequences=()), now=now + timedelta(hours=1)
    )
    assert reply.work_sequences_unassigned == ("seq",)
    seq.refresh_from_db()
    assert seq.state == SequenceState.UNASSIGNED


def test_a_listed_sequence_the_project_does_not_have_is_named_unassigned(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    WorkSequence.objects.filter(pk=seq.pk).delete()  # an admin removed it
    base = make_request_for(host, now)
    reply = scheduler_request_handle(
        project=project, req=replace(base, work_sequences=("seq", "ghost")), now=now + timedelta(hours=1)
    )
    assert sorted(reply.work_sequences_unassigned) == ["ghost", "seq"]


def test_reported_step_releases_the_previous_state_on_the_host(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    host = computer("a")
    host.rpc(now)
    host.rpc(now + timedelta(days=3), finish=(host.next_task(seq),))
    reply = host.rpc(now + timedelta(days=6), finish=(host.next_task(seq),))
    assert reply.delete_file_infos == ("seq_s0_0_0",)


def test_state_file_stays_on_the_host_and_the_report_is_uploaded(project, cpu_app, computer, now):
    _sequence(project, cpu_app, now)
    reply = computer("a").rpc(now)
    infos = {f.name: f for f in reply.file_infos}
    state, report = infos["seq_s0_0_0"], infos["seq_s0_0_1"]
    assert (state.upload_urls, state.sticky, state.generated_locally) == ((), True, True)
    assert report.upload_urls
    assert not report.sticky
    # Step 1 reads step 0's state as prev_state, declared as the host's own file.
    wu1 = next(w for w in reply.workunits if w.name == "seq_s1")
    assert ("seq_s0_0_0", "prev_state") in {(r.file_name, r.open_name) for r in wu1.file_refs}


def test_sequence_results_are_invisible_to_the_general_source(project, cpu_app, computer, now):
    seq = _sequence(project, cpu_app, now)
    assert set(
        Result.objects.filter(workunit__sequence_id=seq.id).values_list("server_state", flat=True)
    ) == {ServerState.INACTIVE}


def make_request_for(host, now):
    from tests.sequences.conftest import make_request

    base = make_request(host.authenticator)
    return replace(
        base,
        hostid=host.hostid,
        rpc_seqno=host.seqno,
        host_info=replace(base.host_info, host_cpid=host.name, domain_name=host.name),
        other_results=tuple(OtherResult(name=t) for t in host.tasks),
    )
