"""The climate example of docs/sequences.md end to end: 60 steps of 3 days, a full state every 7th, one host
that vanishes, a slow host that is refused, and a fast host that finishes from the checkpoint."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import Outcome, SequenceState, ServerState, ValidateState
from apps.work.models import InputFile, OutputFile, Result, Workunit
from tests.sequences.conftest import DAY, daemons, step_job

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

STEP = timedelta(days=3)


@pytest.fixture
def climate(project, cpu_app, now):
    project.purge_min_age_days = 365  # keep the finished rows to look at
    project.save(update_fields=["purge_min_age_days"])
    spec = SequenceSpec(
        name="climate",
        job=step_job(),
        max_result_time=4 * DAY,
        length=60,
        restartable_every=7,
    )
    return sequence_create(project=project, app=cpu_app, spec=spec, now=now)


def _step_of(name: str) -> int:
    return int(name.split("_s")[-1].split("_")[0])


def _run(host, seq, now, project, *, until: int) -> object:
    """``host`` computes its steps in order until step ``until`` is reported; daemons after each RPC."""
    while True:
        task = host.next_task(seq)
        assert task is not None, "the host ran out of steps"
        now += STEP
        host.rpc(now, finish=(task,))
        daemons(now, project.slug)
        if _step_of(task) >= until:
            return now


def test_climate_sequence_survives_a_vanished_host(project, climate, computer, now):
    seq = climate
    assert Workunit.objects.filter(sequence_id=seq.id).count() == 60
    assert sorted(
        Workunit.objects.filter(sequence_id=seq.id, restartable=True).values_list("sequence_index", flat=True)
    ) == [6, 13, 20, 27, 34, 41, 48, 55, 59]
    a, slow, c = computer("host-a"), computer("host-slow", p_fpops=5e8), computer("host-c")

    reply = a.rpc(now)
    assert reply.work_sequences_assigned == ("climate",)
    assert [r.name for r in reply.results] == ["climate_s0_0", "climate_s1_0"]  # two ahead

    now = _run(a, seq, now, project, until=15)
    seq.refresh_from_db()
    assert seq.state == SequenceState.ASSIGNED
    assert seq.first_unvalidated.sequence_index == 16
    assert seq.checkpoint_result.name == "climate_s13_0"
    assert sorted(_step_of(t) for t in a.tasks) == [16, 17]

    # Host A stops responding; another host asking meanwhile gets nothing of the assigned sequence.
    assert slow.rpc(now + timedelta(days=1)).results == ()

    late = now + timedelta(days=13)
    daemons(late, project.slug)
    seq.refresh_from_db()
    assert seq.state == SequenceState.UNASSIGNED
    assert seq.assigned_host is None
    assert seq.first_undispatched.sequence_index == 14  # after checkpoint 13
    assert seq.n_relocations == 1

    reply = slow.rpc(late)  # 520000 s per step > max_result_time of 4 days
    assert reply.results == ()
    assert reply.work_sequences_assigned == ()
    assert any("not fast enough" in m.text for m in reply.messages), reply.messages
    reply = c.rpc(late)
    assert reply.work_sequences_assigned == ("climate",)
    assert [r.name for r in reply.results] == ["climate_s14_1", "climate_s15_1"]
    # Step 14 reads the checkpoint's uploaded state, staged for download; step 15 reads what C makes.
    infos = {f.name: f for f in reply.file_infos}
    checkpoint_state = infos["climate_s13_0_0"]
    assert checkpoint_state.download_urls
    assert checkpoint_state.md5_cksum
    assert InputFile.objects.get(name="climate_s13_0_0").no_delete is True
    assert (project.download_dir / "climate_s13_0_0").is_file()
    own_state = infos["climate_s14_1_0"]
    assert own_state.download_urls == ()
    assert own_state.generated_locally
    assert own_state.sticky

    # Host A comes back with a late result: acknowledged, ignored, the rest aborted, told it moved.
    reply = a.rpc(late + timedelta(hours=1), finish=("climate_s16_0",))
    assert reply.result_acks == ("climate_s16_0",)
    assert reply.work_sequences_unassigned == ("climate",)
    assert "climate_s17_0" in reply.result_aborts
    assert Result.objects.get(name="climate_s16_0").outcome == Outcome.NO_REPLY

    now = _run(c, seq, late, project, until=59)
    daemons(now, project.slug)
    seq.refresh_from_db()
    assert seq.state == SequenceState.ENDED
    reply = c.rpc(now + timedelta(hours=1))
    assert reply.work_sequences_ended == ("climate",)
    seq.refresh_from_db()
    assert seq.assigned_host is None

    # Every step validated exactly once; only steps 14-17 were computed twice.
    wus = Workunit.objects.filter(sequence_id=seq.id)
    assert all(wu.canonical_result_id for wu in wus)
    valid = Result.objects.filter(workunit__sequence_id=seq.id, validate_state=ValidateState.VALID)
    assert valid.values("workunit").distinct().count() == 60
    redone = sorted(
        {
            _step_of(n)
            for n in Result.objects.filter(workunit__sequence_id=seq.id, name__endswith="_1").values_list(
                "name", flat=True
            )
        }
    )
    assert redone == [14, 15, 16, 17]
    assert not Result.objects.filter(
        workunit__sequence_id=seq.id, server_state__in=[ServerState.INACTIVE, ServerState.UNSENT]
    ).exists()
    # The state is uploaded only at checkpoints and at the end; reports always.
    uploaded_states = OutputFile.objects.filter(result__workunit__sequence_id=seq.id, ordinal=0, upload=True)
    assert sorted({o.result.workunit.sequence_index for o in uploaded_states}) == [
        6,
        13,
        20,
        27,
        34,
        41,
        48,
        55,
        59,
    ]
    assert not OutputFile.objects.filter(
        result__workunit__sequence_id=seq.id, ordinal=1, upload=False
    ).exists()
