"""Targeted and broadcast jobs from create_work, the work API and the admin's Create work page."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.work.domain.assignments import TargetType
from apps.work.domain.transitions import TRANSITION_FLAG_NO_NEW_RESULTS, TRANSITION_FLAG_NONE
from apps.work.models import Assignment, Result, Workunit
from tests.factories import HostFactory, TeamFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    project = project_create(slug="aim", name="Aim").project
    app_create(project=project, name="sim")
    return project


def create(*args: str) -> None:
    call_command(
        "create_work", "--project", "aim", "--appname", "sim", "--wu_name", "j", *args, stdout=StringIO()
    )


def assignment() -> tuple[int, int, bool]:
    a = Assignment.objects.get()
    return a.target_type, a.target_id, a.multi


def test_create_work_target_host_makes_an_assignment_and_no_result(project):
    host = HostFactory(project=project, account__project=project)
    create("--target_host", str(host.id))
    assert assignment() == (TargetType.HOST, host.id, False)
    assert Workunit.objects.get().transitioner_flags == TRANSITION_FLAG_NO_NEW_RESULTS
    assert Result.objects.count() == 0


def test_create_work_broadcast_makes_a_broadcast_to_all_hosts(project):
    create("--broadcast")
    assert assignment() == (TargetType.NONE, 0, True)
    assert Workunit.objects.get().transitioner_flags == TRANSITION_FLAG_NONE


def test_create_work_broadcast_team_names_the_team(project):
    team = TeamFactory(project=project)
    create("--broadcast_team", str(team.id))
    assert assignment() == (TargetType.TEAM, team.id, True)


def test_create_work_refuses_two_targets(project):
    with pytest.raises(CommandError, match="at most one of --target_user and --broadcast"):
        create("--target_user", "1", "--broadcast")
    assert Workunit.objects.count() == 0


def test_create_work_refuses_a_target_of_another_project(project):
    stranger = HostFactory()
    with pytest.raises(CommandError, match=f"no host with id {stranger.id} in project aim"):
        create("--target_host", str(stranger.id))
    assert Workunit.objects.count() == 0


def post(client, job):
    return client.post(
        "/api/v1/projects/aim/workunits/",
        data={"appname": "sim", "jobs": [{"name": "j", **job}]},
        content_type="application/json",
    )


def test_api_creates_a_job_targeted_at_a_user(admin_client, project):
    host = HostFactory(project=project, account__project=project)
    response = post(admin_client, {"target_user": host.account_id})
    assert response.status_code == 201
    assert assignment() == (TargetType.USER, host.account_id, False)
    assert Result.objects.count() == 0


def test_api_refuses_two_targets_with_a_clear_error(admin_client, project):
    response = post(admin_client, {"target_host": 1, "broadcast": True})
    assert response.status_code == 400
    assert "at most one of --target_host and --broadcast" in response.content.decode()
    assert Workunit.objects.count() == 0


def test_api_refuses_an_unknown_target(admin_client, project):
    response = post(admin_client, {"target_team": 424242})
    assert response.status_code == 400
    assert response.json() == {"error": "no team with id 424242 in project aim"}


def _form(project, **extra):
    return {
        "app": project.apps.get().pk,
        "name_prefix": "form",
        "count": 2,
        "output_open_name": "out.txt",
        "output_max_nbytes": 1000,
        "rsc_fpops_est": 1e12,
        "rsc_fpops_bound": 1e13,
        "priority": 0,
        "batch": 0,
        **extra,
    }


def test_admin_create_work_page_creates_host_targeted_jobs(admin_client, project):
    host = HostFactory(project=project, account__project=project)
    response = admin_client.post(
        "/admin/work/workunit/create-work/", _form(project, target="target_host", target_id=host.id)
    )
    assert response.status_code == 302
    assert sorted(Assignment.objects.values_list("workunit__name", "target_type", "target_id")) == [
        ("form_0", TargetType.HOST, host.id),
        ("form_1", TargetType.HOST, host.id),
    ]


def test_admin_create_work_page_needs_the_targets_id(admin_client, project):
    response = admin_client.post("/admin/work/workunit/create-work/", _form(project, target="target_team"))
    assert response.status_code == 200
    assert "This target needs the id of its host, user or team." in response.content.decode()
    assert Workunit.objects.count() == 0


def test_assignments_are_listed_read_only_in_the_admin(admin_client, project):
    host = HostFactory(project=project, account__project=project)
    create("--target_host", str(host.id))
    response = admin_client.get("/admin/work/assignment/")
    assert response.status_code == 200
    assert str(host.id) in response.content.decode()
    assert admin_client.get("/admin/work/assignment/add/").status_code == 403
