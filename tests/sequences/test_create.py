"""Creating sequences: the service, create_work --sequence, the admin form and the operators' API."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import SequenceState, ServerState
from apps.work.domain.transitions import TRANSITION_FLAG_NO_NEW_RESULTS
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import InputSpec, WorkError
from tests.sequences.conftest import DAY, step_job

pytestmark = pytest.mark.django_db

RESULT_TEMPLATE = """<output_template>
  <file_info><name><OUTFILE_0/></name><generated_locally/><upload_when_present/>
    <max_nbytes>50000000</max_nbytes><url><UPLOAD_URL/></url></file_info>
  <file_info><name><OUTFILE_1/></name><generated_locally/><upload_when_present/>
    <max_nbytes>5000</max_nbytes><url><UPLOAD_URL/></url></file_info>
  <result>
    <file_ref><file_name><OUTFILE_0/></file_name><open_name>state</open_name></file_ref>
    <file_ref><file_name><OUTFILE_1/></file_name><open_name>report</open_name></file_ref>
  </result>
</output_template>"""


def test_fixed_length_sequence_has_every_step_with_one_inactive_result(project, cpu_app, now, tmp_path):
    initial = tmp_path / "init.dat"
    initial.write_bytes(b"initial conditions")
    seq = sequence_create(
        project=project,
        app=cpu_app,
        spec=SequenceSpec(
            name="clim",
            job=step_job(),
            first_inputs=(InputSpec(path=initial, open_name="prev_state"),),
            max_result_time=4 * DAY,
            length=60,
            restartable_every=7,
        ),
        now=now,
    )
    wus = list(Workunit.objects.filter(sequence_id=seq.id).order_by("sequence_index"))
    assert [w.sequence_index for w in wus] == list(range(60))
    assert {(w.transitioner_flags, w.min_quorum, w.target_nresults) for w in wus} == {
        (TRANSITION_FLAG_NO_NEW_RESULTS, 1, 1)
    }
    assert {w.delay_bound for w in wus} == {12 * DAY}
    assert Result.objects.filter(workunit__sequence_id=seq.id).count() == 60
    assert set(
        Result.objects.filter(workunit__sequence_id=seq.id).values_list("server_state", flat=True)
    ) == {ServerState.INACTIVE}
    assert (seq.state, seq.expected_length, seq.assigned_host) == (SequenceState.UNASSIGNED, 60, None)
    assert seq.head_workunit == seq.first_unvalidated == seq.first_undispatched == wus[0]
    assert wus[0].file_refs.get().open_name == "prev_state"
    assert wus[1].file_refs.get().file.name == "clim_s0_0_0"


def test_outputs_are_classified_per_step(project, cpu_app, now):
    seq = sequence_create(
        project=project,
        app=cpu_app,
        spec=SequenceSpec(name="c", job=step_job(), max_result_time=DAY, length=8, restartable_every=3),
        now=now,
    )

    def plan(index):
        return list(
            OutputFile.objects.filter(
                result__workunit__sequence_id=seq.id, result__workunit__sequence_index=index
            )
            .order_by("ordinal")
            .values_list("upload", "sticky")
        )

    assert plan(0) == [(False, True), (True, False)]  # state kept on the host, report uploaded
    assert plan(2) == [(True, True), (True, False)]  # restartable: state uploaded and kept
    assert plan(7) == [(True, False), (True, False)]  # final: state uploaded, leaves the host


def test_duplicate_sequence_name_is_refused(project, cpu_app, now):
    spec = SequenceSpec(name="dup", job=step_job(), max_result_time=DAY, length=2)
    sequence_create(project=project, app=cpu_app, spec=spec, now=now)
    with pytest.raises(WorkError) as caught:
        sequence_create(project=project, app=cpu_app, spec=spec, now=now)
    assert str(caught.value) == "a sequence named 'dup' already exists in this project"
    assert WorkSequence.objects.count() == 1


def test_a_step_delay_bound_shorter_than_the_max_result_time_is_refused(project, cpu_app, now):
    spec = SequenceSpec(name="s", job=step_job(delay_bound=DAY / 2), max_result_time=DAY, length=2)
    with pytest.raises(WorkError, match="delay_bound must be at least"):
        sequence_create(project=project, app=cpu_app, spec=spec, now=now)
    assert not WorkSequence.objects.exists()


def test_sequence_name_with_double_underscore_is_refused(project, cpu_app, now):
    with pytest.raises(WorkError, match="invalid sequence name"):
        sequence_create(
            project=project,
            app=cpu_app,
            spec=SequenceSpec(name="a__b", job=step_job(), max_result_time=DAY, length=2),
            now=now,
        )


def test_redundant_app_gets_replica_chains(project, cpu_app, now):
    cpu_app.sequence_redundancy = True
    cpu_app.save(update_fields=["sequence_redundancy"])
    seq = sequence_create(
        project=project,
        app=cpu_app,
        spec=SequenceSpec(name="r", job=step_job(), max_result_time=DAY, length=3),
        now=now,
    )
    assert list(WorkSequence.objects.filter(replica_of=seq).values_list("name", flat=True)) == ["r_r1"]
    assert Workunit.objects.filter(sequence_id=WorkSequence.objects.get(name="r_r1").id).count() == 3


def _create_work(project, *args: str) -> str:
    out = StringIO()
    call_command("create_work", "--project", project.slug, "--appname", "cpuapp", *args, stdout=out)
    return out.getvalue()


def test_create_work_makes_a_fixed_length_sequence(project, cpu_app, tmp_path: Path):
    (tmp_path / "res.xml").write_text(RESULT_TEMPLATE)
    (tmp_path / "init.dat").write_text("t=0\n")
    out = _create_work(
        project,
        "--sequence", "climate",
        "--sequence_length", "60",
        "--max_result_time", "345600",
        "--restartable_every", "7",
        "--result_template", str(tmp_path / "res.xml"),
        "--rsc_fpops_est", "2.6e14",
        "--rsc_fpops_bound", "2.6e15",
        str(tmp_path / "init.dat"),
    )  # fmt: skip
    assert "Created sequence climate (60 steps" in out
    seq = WorkSequence.objects.get(name="climate")
    assert (seq.max_result_time, seq.restartable_every, seq.expected_length) == (345600, 7, 60)
    first = seq.workunits.get(sequence_index=0)
    assert first.file_refs.get().file.name == "init.dat"
    assert [s["sequence_state"] for s in first.output_files] == [True, False]
    assert sorted(seq.workunits.filter(restartable=True).values_list("sequence_index", flat=True))[:2] == [
        6,
        13,
    ]


def test_create_work_makes_an_open_ended_sequence(project, cpu_app, tmp_path: Path):
    (tmp_path / "res.xml").write_text(RESULT_TEMPLATE)
    out = _create_work(
        project,
        "--sequence", "traj",
        "--max_result_time", "86400",
        "--initial_steps", "2",
        "--state_output", "report",
        "--result_template", str(tmp_path / "res.xml"),
    )  # fmt: skip
    assert "open-ended; 2 step(s)" in out
    seq = WorkSequence.objects.get(name="traj")
    assert seq.expected_length is None
    assert [s["sequence_state"] for s in seq.workunits.first().output_files] == [False, True]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sequence", "s"), "--max_result_time"),
        (("--sequence", "s", "--max_result_time", "10", "--stdin"), "--stdin"),
        (("--sequence", "s", "--max_result_time", "10", "--state_output", "nope"), "--state_output"),
    ],
)
def test_create_work_sequence_errors_are_clear(project, cpu_app, args, message):
    with pytest.raises(CommandError, match=message):
        _create_work(project, *args)
    assert not WorkSequence.objects.exists()


def test_admin_add_form_creates_a_sequence(admin_client, project, cpu_app):
    response = admin_client.get("/admin/sequences/worksequence/add/")
    assert response.status_code == 200
    response = admin_client.post(
        "/admin/sequences/worksequence/add/",
        {
            "app": cpu_app.id,
            "name": "fromadmin",
            "length": "",
            "initial_steps": 3,
            "max_result_time": 86400,
            "restartable_every": 2,
            "initial_state_open_name": "prev_state",
            "state_open_name": "state",
            "state_max_nbytes": 1000,
            "report_open_name": "report",
            "report_max_nbytes": 1000,
            "rsc_fpops_est": 1e12,
            "rsc_fpops_bound": 1e13,
        },
    )
    seq = WorkSequence.objects.get(name="fromadmin")
    assert response.status_code == 302
    assert seq.workunits.count() == 3
    assert seq.expected_length is None


def test_api_creates_lists_and_ends_a_sequence(admin_client, project, cpu_app):
    url = f"/api/v1/projects/{project.slug}/sequences/"
    body = {
        "name": "apiseq",
        "appname": "cpuapp",
        "max_result_time": 86400,
        "length": 5,
        "restartable_every": 2,
        "step": {"rsc_fpops_est": 1e12, "inputs": [{"name": "init.dat", "content_base64": "aGVsbG8="}]},
        "outputs": [
            {"open_name": "state", "max_nbytes": 1000, "state": True},
            {"open_name": "report", "max_nbytes": 100},
        ],
    }
    response = admin_client.post(url, body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert (response.json()["steps"], response.json()["validated"], response.json()["state"]) == (
        5,
        0,
        "Unassigned",
    )
    listed = admin_client.get(url).json()["results"]
    assert [s["name"] for s in listed] == ["apiseq"]
    assert (
        admin_client.post(f"{url}apiseq/extend/", {"steps": 2}, content_type="application/json").status_code
        == 409
    )
    ended = admin_client.post(f"{url}apiseq/end/")
    assert ended.status_code == 200
    assert ended.json()["state"] == "Ended"


def test_api_extends_an_open_ended_sequence(admin_client, project, cpu_app):
    url = f"/api/v1/projects/{project.slug}/sequences/"
    body = {
        "name": "open",
        "appname": "cpuapp",
        "max_result_time": 86400,
        "step": {},
        "outputs": [{"open_name": "state", "max_nbytes": 1000, "state": True}],
    }
    assert admin_client.post(url, body, content_type="application/json").status_code == 201
    response = admin_client.post(
        f"{url}open/extend/", {"steps": 2, "final": True}, content_type="application/json"
    )
    assert (response.json()["steps"], response.json()["expected_length"]) == (5, 5)


def test_api_filters_sequences_by_app_name(admin_client, project, cpu_app):
    from apps.applications.services import app_create

    app_create(project=project, name="otherapp")
    url = f"/api/v1/projects/{project.slug}/sequences/"
    for name, appname in (("mine", "cpuapp"), ("theirs", "otherapp")):
        body = {
            "name": name,
            "appname": appname,
            "max_result_time": 86400,
            "step": {},
            "outputs": [{"open_name": "state", "max_nbytes": 1000, "state": True}],
        }
        assert admin_client.post(url, body, content_type="application/json").status_code == 201
    listed = admin_client.get(url, {"app": "otherapp"}).json()["results"]
    assert [s["name"] for s in listed] == ["theirs"]


def test_api_is_for_admins_only(client, project):
    assert client.get(f"/api/v1/projects/{project.slug}/sequences/").status_code in (401, 403)


def test_api_sequences_of_an_unknown_project_are_a_404(admin_client, project):
    response = admin_client.get("/api/v1/projects/nosuch/sequences/")
    assert response.status_code == 404
    assert response.json() == {"detail": "no such project"}


def test_api_refuses_a_max_result_time_past_the_cap_naming_the_field(admin_client, project, cpu_app):
    body = {
        "name": "forever",
        "appname": "cpuapp",
        "max_result_time": 1e300,
        "step": {},
        "outputs": [{"open_name": "state", "max_nbytes": 1000, "state": True}],
    }
    response = admin_client.post(
        f"/api/v1/projects/{project.slug}/sequences/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert list(response.json()) == ["max_result_time"]
    assert not WorkSequence.objects.exists()
