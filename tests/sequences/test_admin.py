"""The work-sequence admin: progress on the changelist, and the actions calling the services."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import SequenceState
from tests.scheduler.conftest import rpc
from tests.sequences.conftest import DAY, make_request, step_job

pytestmark = pytest.mark.django_db

URL = "/admin/sequences/worksequence/"


@pytest.fixture
def held(project, cpu_app, computer, now):
    seq = sequence_create(
        project=project,
        app=cpu_app,
        spec=SequenceSpec(
            name="held", job=step_job(), max_result_time=4 * DAY, length=10, restartable_every=2
        ),
        now=now,
    )
    host = computer("a")
    host.rpc(now)
    return seq, host


def test_changelist_shows_progress_host_and_the_starvation_note(
    admin_client, held, django_assert_max_num_queries
):
    with django_assert_max_num_queries(12):
        response = admin_client.get(URL)
    text = response.content.decode()
    assert "0 / 2 / 10" in text  # validated / dispatched / steps
    assert f"host {held[1].hostid} (a)" in text
    assert "starves the non-sequence work" in text


def test_change_page_lists_the_steps(admin_client, held):
    seq, _ = held
    response = admin_client.get(f"{URL}{seq.id}/change/")
    assert response.status_code == 200
    assert "held_s9" in response.content.decode()


def _act(admin_client, action, seq, **extra):
    return admin_client.post(URL, {"action": action, "_selected_action": [seq.id], **extra}, follow=True)


def test_the_starvation_note_is_a_help_text_under_the_title_not_the_title(admin_client, held):
    text = admin_client.get(URL).content.decode()
    title = text[text.index("<title>") : text.index("</title>")]
    assert "starves" not in title
    assert '<p class="help">A host that holds a sequence gets its next steps' in text


def test_a_failed_sequence_shows_no_host_but_its_reason(admin_client, held, settings):
    seq, host = held
    settings.COBBLESTONE_SEQUENCE_MAX_RELOCATIONS = 0
    _act(admin_client, "deassign", seq)
    seq.refresh_from_db()
    assert (seq.state, seq.assigned_host_id) == (SequenceState.ERROR, host.hostid)  # told next RPC
    text = admin_client.get(URL).content.decode()
    assert f"host {host.hostid} (a)" not in text
    assert "relocated 1 time; the limit is 0" in text
    page = admin_client.get(f"{URL}{seq.id}/change/").content.decode()
    assert f"host {host.hostid} (a)" not in page
    assert "relocated 1 time; the limit is 0" in page


def test_no_field_of_a_sequence_can_be_edited_by_hand(admin_client, held):
    seq, _ = held
    page = admin_client.get(f"{URL}{seq.id}/change/").content.decode()
    for field in ("state", "max_result_time", "restartable_every", "assigned_host", "n_relocations"):
        assert f'name="{field}"' not in page
    admin_client.post(
        f"{URL}{seq.id}/change/",
        {"state": SequenceState.ENDED, "max_result_time": 1, "restartable_every": 1, **_no_steps()},
    )
    seq.refresh_from_db()
    assert (seq.state, seq.max_result_time, seq.restartable_every) == (SequenceState.ASSIGNED, 4 * DAY, 2)


def _no_steps():
    prefix = "workunits"
    return {f"{prefix}-TOTAL_FORMS": 0, f"{prefix}-INITIAL_FORMS": 0}


def test_end_action_asks_first_and_says_running_steps_are_aborted(admin_client, held):
    seq, _ = held
    response = _act(admin_client, "end", seq)
    text = response.content.decode()
    assert "<strong>2 steps running on hosts are aborted</strong>" in text
    seq.refresh_from_db()
    assert seq.state == SequenceState.ASSIGNED
    response = _act(admin_client, "end", seq, post="yes")
    assert (
        "1 sequence(s) ended; 2 running step(s) will be aborted by their hosts" in response.content.decode()
    )


def test_deassign_action_relocates(admin_client, held):
    seq, _ = held
    _act(admin_client, "deassign", seq)
    seq.refresh_from_db()
    assert (seq.state, seq.assigned_host, seq.n_relocations) == (SequenceState.UNASSIGNED, None, 1)
    assert seq.first_undispatched.sequence_index == 0


def test_end_action_ends_and_the_host_is_told(admin_client, held, now):
    seq, host = held
    _act(admin_client, "end", seq, post="yes")
    seq.refresh_from_db()
    assert seq.state == SequenceState.ENDED
    reply = host.rpc(now + timedelta(hours=1))
    assert reply.work_sequences_ended == ("held",)


def test_extend_action_only_touches_open_ended_sequences(admin_client, held, project, cpu_app, now):
    seq, _ = held
    open_ended = sequence_create(
        project=project,
        app=cpu_app,
        spec=SequenceSpec(name="open", job=step_job(), max_result_time=DAY, initial_steps=2),
        now=now,
    )
    admin_client.post(URL, {"action": "extend", "_selected_action": [seq.id, open_ended.id]})
    assert seq.workunits.count() == 10
    assert open_ended.workunits.count() == 5


def test_demo_has_real_sequences_in_several_states(db):
    call_command("seed_demo", stdout=StringIO())
    seqs = {s.name: s for s in WorkSequence.objects.filter(project__slug="demo")}
    assert {s.state for s in seqs.values()} == {
        SequenceState.ASSIGNED,
        SequenceState.UNASSIGNED,
        SequenceState.ENDED,
    }
    a = seqs["climate_run_a"]
    assert (a.workunits.count(), a.first_unvalidated.sequence_index, a.first_undispatched.sequence_index) == (
        60,
        10,
        12,
    )
    assert a.checkpoint_result.workunit.sequence_index == 6
    assert seqs["climate_run_b"].workunits.count() == 60
    assert seqs["folding_traj_2"].expected_length == seqs["folding_traj_2"].workunits.count()


def test_reply_xml_carries_the_sequence_elements(client, project, cpu_app, account, now):
    sequence_create(
        project=project,
        app=cpu_app,
        spec=SequenceSpec(name="wire", job=step_job(), max_result_time=4 * DAY, length=3),
        now=now,
    )
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.work_sequences_assigned == ("wire",)
    assert [r.name for r in reply.results] == ["wire_s0_0", "wire_s1_0"]


def test_the_api_shows_no_host_for_a_failed_sequence_but_its_reason(admin_client, held, project, settings):
    seq, host = held
    url = f"/api/v1/projects/{project.slug}/sequences/{seq.name}/"
    assert admin_client.get(url).json()["assigned_host"] == host.hostid
    settings.COBBLESTONE_SEQUENCE_MAX_RELOCATIONS = 0
    _act(admin_client, "deassign", seq)
    data = admin_client.get(url).json()
    assert (data["state"], data["assigned_host"], data["error_reason"]) == (
        "Error",
        None,
        "relocated 1 time; the limit is 0",
    )


def test_the_admin_address_under_the_work_app_leads_to_the_sequence(admin_client, held):
    seq, _ = held
    response = admin_client.get(f"/admin/work/worksequence/{seq.pk}/change/?_changelist_filters=state%3D1")
    assert response.status_code == 301
    assert response["Location"] == f"{URL}{seq.pk}/change/?_changelist_filters=state%3D1"
    assert admin_client.get(response["Location"]).status_code == 200
