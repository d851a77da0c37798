"""Work creation refuses delay bounds no deadline can follow, names the app when its defaults are
at fault, names a duplicate workunit, and the API answers 404 for a project that does not exist."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.applications.models import App
from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.models import Workunit
from apps.work.services import JobSpec, OutputSpec, WorkError, workunits_create
from apps.work.services.create import MAX_DELAY_BOUND

pytestmark = pytest.mark.django_db

API = "/api/v1/projects/bounds/workunits/"
STEP_OUTPUTS = (OutputSpec(open_name="state", sequence_state=True),)


@pytest.fixture
def project():
    project = project_create(slug="bounds", name="Bounds").project
    app_create(project=project, name="quick")
    return project


@pytest.fixture
def app(project):
    return project.apps.get()


def post(client, jobs):
    return client.post(API, data={"appname": "quick", "jobs": jobs}, content_type="application/json")


def create_work(*args: str) -> None:
    call_command("create_work", "--project", "bounds", "--appname", "quick", *args, stdout=StringIO())


def admin_create_work(client, app, **fields):
    data = {
        "app": app.pk,
        "name_prefix": "form",
        "count": 1,
        "output_open_name": "out.txt",
        "output_max_nbytes": 1000,
        "rsc_fpops_est": 1e12,
        "rsc_fpops_bound": 1e13,
        "priority": 0,
        "batch": 0,
        **fields,
    }
    return client.post("/admin/work/workunit/create-work/", data)


# --- delay_bound and max_result_time --------------------------------------------------------


def test_api_refuses_a_huge_delay_bound_with_a_json_400_naming_the_field(admin_client, project):
    response = post(admin_client, [{"name": "hugedb", "delay_bound": 1e300}])
    assert response.status_code == 400
    assert response.json() == {
        "jobs": {"0": {"delay_bound": ["Ensure this value is less than or equal to 100000000."]}}
    }
    assert not Workunit.objects.exists()


def test_create_work_command_refuses_a_delay_bound_past_the_cap(project):
    with pytest.raises(CommandError, match="delay_bound must be at most 100000000 seconds"):
        create_work("--wu_name", "hugedb", "--delay_bound", "3e11")
    assert not Workunit.objects.exists()


def test_admin_create_work_form_shows_the_delay_bound_cap(admin_client, app):
    response = admin_create_work(admin_client, app, delay_bound=1e300)
    assert response.status_code == 200
    assert "delay_bound must be at most 100000000 seconds" in response.content.decode()
    assert not Workunit.objects.exists()


def test_a_delay_bound_at_the_cap_is_accepted(project, app):
    (wu,) = workunits_create(
        project=project, app=app, jobs=[JobSpec(name="long", delay_bound=MAX_DELAY_BOUND)]
    )
    assert wu.delay_bound == MAX_DELAY_BOUND


def test_sequence_with_a_huge_max_result_time_is_refused(project, app):
    spec = SequenceSpec(name="seq", job=JobSpec(outputs=STEP_OUTPUTS), max_result_time=1e300, length=3)
    with pytest.raises(WorkError, match="max_result_time must be at most 100000000 seconds"):
        sequence_create(project=project, app=app, spec=spec)
    assert not WorkSequence.objects.exists()


def test_sequence_whose_default_step_delay_bound_passes_the_cap_says_so(project, app):
    spec = SequenceSpec(name="seq", job=JobSpec(outputs=STEP_OUTPUTS), max_result_time=5e7, length=3)
    with pytest.raises(WorkError, match="gives each step a default delay_bound of 150000000 s"):
        sequence_create(project=project, app=app, spec=spec)


def test_admin_sequence_form_shows_the_max_result_time_cap(admin_client, app):
    response = admin_client.post(
        "/admin/sequences/worksequence/add/",
        {
            "app": app.id,
            "name": "fromadmin",
            "length": 3,
            "initial_steps": 3,
            "max_result_time": 1e300,
            "restartable_every": 0,
            "state_open_name": "state",
            "state_max_nbytes": 1000,
            "report_open_name": "report",
            "report_max_nbytes": 1000,
            "rsc_fpops_est": 1e12,
            "rsc_fpops_bound": 1e13,
        },
    )
    assert response.status_code == 200
    assert "max_result_time must be at most 100000000 seconds" in response.content.decode()
    assert not WorkSequence.objects.exists()


# --- the app's job defaults -----------------------------------------------------------------


def test_a_quorum_error_from_the_apps_defaults_names_the_app(project, app):
    App.objects.filter(id=app.id).update(min_quorum=3, target_nresults=1)  # saved before App.clean
    app.refresh_from_db()
    with pytest.raises(WorkError) as caught:
        workunits_create(project=project, app=app, jobs=[JobSpec(name="a")])
    assert str(caught.value) == (
        "target_nresults must be at least min_quorum (target_nresults=1 and min_quorum=3 come from "
        "app 'quick''s job defaults: correct the app, or give them for the job)"
    )


def test_a_huge_default_delay_bound_is_named_as_the_apps(project, app):
    App.objects.filter(id=app.id).update(delay_bound=1e300)
    app.refresh_from_db()
    with pytest.raises(WorkError, match=r"delay_bound=1e\+300 comes from app 'quick''s job defaults"):
        workunits_create(project=project, app=app, jobs=[JobSpec(name="a")])


def test_an_error_in_the_jobs_own_values_does_not_blame_the_app(project, app):
    with pytest.raises(WorkError) as caught:
        workunits_create(project=project, app=app, jobs=[JobSpec(name="a", min_quorum=3, target_nresults=1)])
    assert str(caught.value) == "target_nresults must be at least min_quorum"


# --- duplicate names ------------------------------------------------------------------------


def test_an_existing_workunit_name_is_named_in_the_error(project, app):
    workunits_create(project=project, app=app, jobs=[JobSpec(name="a")])
    with pytest.raises(WorkError) as caught:
        workunits_create(project=project, app=app, jobs=[JobSpec(name="b"), JobSpec(name="a")])
    assert str(caught.value) == "a workunit named 'a' already exists in this project"
    assert list(Workunit.objects.values_list("name", flat=True)) == ["a"]


def test_a_name_twice_in_one_batch_is_named_in_the_error(project, app):
    with pytest.raises(WorkError) as caught:
        workunits_create(project=project, app=app, jobs=[JobSpec(name="a"), JobSpec(name="a")])
    assert str(caught.value) == "workunit name 'a' appears twice in this batch"
    assert not Workunit.objects.exists()


def test_api_names_a_duplicate_in_one_batch(admin_client, project):
    response = post(admin_client, [{"name": "twin"}, {"name": "twin"}])
    assert response.status_code == 400
    assert response.json() == {"error": "workunit name 'twin' appears twice in this batch"}


def test_api_names_an_existing_workunit(admin_client, project):
    assert post(admin_client, [{"name": "once"}]).status_code == 201
    response = post(admin_client, [{"name": "once"}])
    assert response.json() == {"error": "a workunit named 'once' already exists in this project"}


def test_create_work_command_names_an_existing_workunit(project):
    create_work("--wu_name", "job1")
    with pytest.raises(CommandError) as caught:
        create_work("--wu_name", "job1")
    assert str(caught.value) == "a workunit named 'job1' already exists in this project"


def test_admin_create_work_form_names_an_existing_workunit(admin_client, app):
    admin_create_work(admin_client, app)
    response = admin_create_work(admin_client, app)
    assert "a workunit named &#x27;form_0&#x27; already exists in this project" in response.content.decode()


# --- lists of a project that does not exist -------------------------------------------------


@pytest.mark.parametrize("kind", ["workunits", "results"])
def test_list_of_an_unknown_project_is_a_json_404(admin_client, project, kind):
    response = admin_client.get(f"/api/v1/projects/nosuch/{kind}/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("kind", ["workunits", "results"])
def test_empty_list_of_a_known_project_is_200(admin_client, project, kind):
    response = admin_client.get(f"/api/v1/projects/bounds/{kind}/")
    assert response.status_code == 200
    assert response.json()["count"] == 0


def test_a_list_with_rows_does_not_look_the_project_up(admin_client, project, app):
    workunits_create(project=project, app=app, jobs=[JobSpec(name="a")])
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(API)
    assert response.json()["count"] == 1
    assert not [q["sql"] for q in queries if 'FROM "projects_project"' in q["sql"]]
