"""The admin's own pages and actions ask for the model permissions the operators' API asks
for: reading needs view_*, creating add_*, acting on records change_*. A staff login with no
permissions gets 403 and writes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from apps.credit.models import PlanClassScale
from apps.emulator.domain import bundled_scenarios
from apps.emulator.models import EmulationRun, Scenario
from apps.locality.models import LocalityFile
from apps.projects.models import Project
from apps.sequences.models import WorkSequence
from apps.work.domain.states import ErrorMask, SequenceState
from apps.work.models import Workunit
from tests.factories import (
    AppFactory,
    AppVersionFactory,
    ProjectFactory,
    WorkSequenceFactory,
    WorkunitFactory,
)

pytestmark = pytest.mark.django_db

CREATE_WORK = "/admin/work/workunit/create-work/"
ADD_SEQUENCE = "/admin/sequences/worksequence/add/"
JOB_FORM = {
    "name_prefix": "form",
    "count": 1,
    "input_open_name": "in.txt",
    "output_open_name": "out.txt",
    "output_max_nbytes": 1000,
    "rsc_fpops_est": 1e12,
    "rsc_fpops_bound": 1e13,
    "priority": 0,
    "batch": 0,
}
SEQUENCE_FORM = {
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
}
RUN_FORM = {"policy": "all", "days": "1", "use_project": "on"}


@pytest.fixture
def project() -> Project:
    project = ProjectFactory(slug="alpha", name="Alpha", locality_scheduling=True)
    app = AppFactory(project=project, name="sim")
    AppVersionFactory(app=app, plan_class="")
    return project


@pytest.fixture
def scenario(project: Project) -> Scenario:
    text = bundled_scenarios()["example1_gpu_sharing"].read_text()
    return Scenario.objects.create(name="Example 1", project=project, text=text)


def staff(client: Client, *codenames: str) -> Client:
    """The client logged in as a staff user holding only these permissions."""
    user = get_user_model().objects.create_user("staff1", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def run_url(scenario: Scenario) -> str:
    return f"/admin/emulator/scenario/{scenario.pk}/run/"


def action(client: Client, changelist: str, name: str, pk: int) -> None:
    # "post": the confirmation of actions that ask first (ending sequences); others ignore it.
    client.post(changelist, {"action": name, "_selected_action": [pk], "post": "yes"})


def offered_actions(client: Client, changelist: str) -> set[str]:
    """The actions the changelist's drop-down offers."""
    form = client.get(changelist).context["action_form"]
    return set() if form is None else {value for value, _ in form.fields["action"].choices if value}


# --- every page refuses a staff login without permissions ------------------------------------


@pytest.mark.parametrize(
    "page",
    [
        lambda p, s: CREATE_WORK,
        lambda p, s: ADD_SEQUENCE,
        lambda p, s: run_url(s),
        lambda p, s: "/admin/locality/localityfile/projects/",
        lambda p, s: f"/admin/locality/localityfile/projects/{p.pk}/",
        lambda p, s: f"/admin/projects/project/{p.pk}/dashboard/",
        lambda p, s: f"/admin/credit/planclassscale/app/{p.apps.get().pk}/",
    ],
    ids=[
        "create-work",
        "add-sequence",
        "scenario-run",
        "locality-index",
        "locality-project",
        "dashboard",
        "credit",
    ],
)
def test_staff_without_permissions_gets_403(client, project, scenario, page):
    assert staff(client).get(page(project, scenario)).status_code == 403


# --- Create work -----------------------------------------------------------------------------


def test_create_work_without_permissions_is_403_and_creates_nothing(client, project):
    response = staff(client).post(CREATE_WORK, {**JOB_FORM, "app": project.apps.get().pk})
    assert response.status_code == 403
    assert Workunit.objects.count() == 0


def test_create_work_with_view_permission_only_is_403_and_creates_nothing(client, project):
    response = staff(client, "view_workunit").post(CREATE_WORK, {**JOB_FORM, "app": project.apps.get().pk})
    assert response.status_code == 403
    assert Workunit.objects.count() == 0


def test_create_work_form_shows_with_add_permission(client, project):
    assert staff(client, "add_workunit").get(CREATE_WORK).status_code == 200


def test_create_work_with_add_permission_creates_the_workunit(client, project):
    response = staff(client, "add_workunit").post(CREATE_WORK, {**JOB_FORM, "app": project.apps.get().pk})
    assert response.status_code == 302
    assert list(Workunit.objects.values_list("name", flat=True)) == ["form_0"]


def test_create_work_without_view_permission_returns_to_the_admin_index(client, project):
    # The workunit list would answer 403 to a login that may add but not see workunits.
    response = staff(client, "add_workunit").post(CREATE_WORK, {**JOB_FORM, "app": project.apps.get().pk})
    assert response["Location"] == "/admin/"


def test_create_work_with_view_permission_returns_to_the_workunit_list(client, project):
    client = staff(client, "add_workunit", "view_workunit")
    response = client.post(CREATE_WORK, {**JOB_FORM, "app": project.apps.get().pk})
    assert response["Location"] == "/admin/work/workunit/"


def test_create_work_app_choices_name_their_project(admin_client, project):
    AppFactory(project=ProjectFactory(slug="beta", name="Beta"), name="sim")
    choices = [label for _, label in admin_client.get(CREATE_WORK).context["form"].fields["app"].choices]
    assert choices[1:] == ["alpha / sim", "beta / sim"]


# --- Add work sequence -----------------------------------------------------------------------


def test_add_sequence_with_view_permission_only_is_403_and_creates_nothing(client, project):
    client = staff(client, "view_worksequence")
    response = client.post(ADD_SEQUENCE, {**SEQUENCE_FORM, "app": project.apps.get().pk})
    assert response.status_code == 403
    assert WorkSequence.objects.count() == 0


def test_add_sequence_with_add_permission_creates_the_sequence(client, project):
    client = staff(client, "add_worksequence")
    response = client.post(ADD_SEQUENCE, {**SEQUENCE_FORM, "app": project.apps.get().pk})
    assert response.status_code == 302
    assert list(WorkSequence.objects.values_list("name", flat=True)) == ["fromadmin"]


def test_add_sequence_without_view_permission_returns_to_the_admin_index(client, project):
    client = staff(client, "add_worksequence")
    response = client.post(ADD_SEQUENCE, {**SEQUENCE_FORM, "app": project.apps.get().pk})
    assert response["Location"] == "/admin/"


def test_add_sequence_app_choices_name_their_project(admin_client, project):
    AppFactory(project=ProjectFactory(slug="beta", name="Beta"), name="sim")
    choices = [label for _, label in admin_client.get(ADD_SEQUENCE).context["form"].fields["app"].choices]
    assert choices[1:] == ["alpha / sim", "beta / sim"]


# --- Run scenario ----------------------------------------------------------------------------


def test_scenario_run_without_permissions_is_403_and_runs_nothing(client, scenario):
    assert staff(client).post(run_url(scenario), RUN_FORM).status_code == 403
    assert EmulationRun.objects.count() == 0


def test_scenario_run_page_shows_with_view_permission(client, scenario):
    assert staff(client, "view_scenario").get(run_url(scenario)).status_code == 200


def test_scenario_run_with_view_permission_only_is_403_and_runs_nothing(client, scenario):
    assert staff(client, "view_scenario").post(run_url(scenario), RUN_FORM).status_code == 403
    assert EmulationRun.objects.count() == 0


def test_scenario_run_with_change_permission_runs(client, scenario):
    client = staff(client, "view_scenario", "change_scenario")
    response = client.post(run_url(scenario), {**RUN_FORM, "policy": "v4"})
    assert response.status_code == 302
    assert EmulationRun.objects.count() == 1


def test_run_all_policies_action_needs_change_permission(client, scenario):
    action(staff(client, "view_scenario"), "/admin/emulator/scenario/", "run_all_policies", scenario.pk)
    assert EmulationRun.objects.count() == 0


# --- locality pages and actions --------------------------------------------------------------


def test_locality_index_shows_with_view_permission(client, project):
    assert staff(client, "view_localityfile").get("/admin/locality/localityfile/projects/").status_code == 200


def test_locality_project_page_shows_with_view_permission(client, project):
    url = f"/admin/locality/localityfile/projects/{project.pk}/"
    assert staff(client, "view_localityfile").get(url).status_code == 200


def test_locality_mark_action_needs_change_permission(client, project):
    file = LocalityFile.objects.create(project=project, name="big")
    action(
        staff(client, "view_localityfile"), "/admin/locality/localityfile/", "mark_no_work_available", file.pk
    )
    file.refresh_from_db()
    assert file.no_work_available is False


def test_locality_mark_action_with_change_permission_marks(client, project):
    file = LocalityFile.objects.create(project=project, name="big")
    client = staff(client, "view_localityfile", "change_localityfile")
    action(client, "/admin/locality/localityfile/", "mark_no_work_available", file.pk)
    file.refresh_from_db()
    assert file.no_work_available is True


# --- project dashboard -----------------------------------------------------------------------


def test_dashboard_shows_with_view_permission(client, project):
    url = f"/admin/projects/project/{project.pk}/dashboard/"
    assert staff(client, "view_project").get(url).status_code == 200


# --- credit view (already checked; kept here so every custom page is listed) ----------------


def test_credit_recompute_without_permissions_is_403_and_writes_nothing(client, project):
    url = f"/admin/credit/planclassscale/app/{project.apps.get().pk}/"
    assert staff(client).post(url).status_code == 403
    assert PlanClassScale.objects.count() == 0


# --- workunit and sequence actions -----------------------------------------------------------


def test_cancel_action_needs_change_permission(client, project):
    wu = WorkunitFactory(app=project.apps.get())
    action(staff(client, "view_workunit"), "/admin/work/workunit/", "cancel", wu.pk)
    wu.refresh_from_db()
    assert wu.error_mask == 0


def test_cancel_action_with_change_permission_cancels(client, project):
    wu = WorkunitFactory(app=project.apps.get())
    action(staff(client, "view_workunit", "change_workunit"), "/admin/work/workunit/", "cancel", wu.pk)
    wu.refresh_from_db()
    assert wu.error_mask == ErrorMask.CANCELLED


ACTIONS = [
    ("work", "workunit", {"cancel"}),
    ("sequences", "worksequence", {"deassign", "end", "extend", "refresh"}),
    (
        "locality",
        "localityfile",
        {"mark_no_work_available", "clear_no_work_available", "refresh_working_set"},
    ),
    ("emulator", "scenario", {"run_all_policies"}),
    ("projects", "project", {"pause_daemons", "resume_daemons"}),
    ("applications", "appversion", {"deprecate"}),
    ("hosts", "hostappversion", {"reset_probation"}),
]


@pytest.mark.parametrize(("app_label", "model", "actions"), ACTIONS)
def test_view_permission_is_offered_no_actions(client, project, app_label, model, actions):
    assert offered_actions(staff(client, f"view_{model}"), f"/admin/{app_label}/{model}/") == set()


@pytest.mark.parametrize(("app_label", "model", "actions"), ACTIONS)
def test_change_permission_is_offered_the_actions(client, project, app_label, model, actions):
    client = staff(client, f"view_{model}", f"change_{model}")
    assert offered_actions(client, f"/admin/{app_label}/{model}/") == actions


def test_end_sequence_action_with_change_permission_ends(client, project):
    seq = WorkSequenceFactory(app=project.apps.get(), name="s1", state=SequenceState.UNASSIGNED)
    action(
        staff(client, "view_worksequence", "change_worksequence"),
        "/admin/sequences/worksequence/",
        "end",
        seq.pk,
    )
    seq.refresh_from_db()
    assert seq.state == SequenceState.ENDED


def test_a_view_only_login_sees_no_create_work_link(client, project):
    page = staff(client, "view_workunit").get("/admin/work/workunit/")
    assert page.status_code == 200
    assert CREATE_WORK not in page.content.decode()


def test_an_adding_login_sees_the_create_work_link(client, project):
    page = staff(client, "view_workunit", "add_workunit").get("/admin/work/workunit/")
    assert CREATE_WORK in page.content.decode()


def test_a_view_only_login_sees_no_run_form(client, scenario):
    page = staff(client, "view_scenario").get(f"/admin/emulator/scenario/{scenario.pk}/run/")
    assert page.status_code == 200
    assert "emulation-run-form" not in page.content.decode()
    assert "needs the permission to change scenarios" in page.content.decode()
