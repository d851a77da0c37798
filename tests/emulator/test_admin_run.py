"""The admin page that runs a stored scenario against its project's current apps."""

from __future__ import annotations

import pytest

from apps.applications.models import App
from apps.core.domain.resources import ProcType
from apps.emulator.domain import PolicyName, ScenarioError, bundled_scenarios
from apps.emulator.models import EmulationRun, Scenario
from apps.emulator.services import project_app_shapes, scenario_run
from tests.factories import AppFactory, AppVersionFactory, ProjectFactory, WorkunitFactory

pytestmark = pytest.mark.django_db

EXAMPLE1 = bundled_scenarios()["example1_gpu_sharing"].read_text()


@pytest.fixture
def project():
    """Project "B" of Example 1, with a CPU-only app whose jobs are 1e12 FLOPs."""
    project = ProjectFactory(slug="B")
    app = AppFactory(project=project, name="real_app", delay_bound=3 * 86400)
    AppVersionFactory(app=app, plan_class="")
    WorkunitFactory(app=app, rsc_fpops_est=1e12)
    WorkunitFactory(app=app, rsc_fpops_est=3e12)
    return project


@pytest.fixture
def scenario(project) -> Scenario:
    return Scenario.objects.create(name="Example 1", project=project, text=EXAMPLE1)


def test_app_shape_has_the_mean_job_size_and_delay_bound(project) -> None:
    (shape,) = project_app_shapes(project=project)
    assert (shape.name, shape.fpops_est, shape.latency_bound) == ("real_app", 2e12, 3 * 86400)


def test_cuda_version_shapes_a_gpu_version(project) -> None:
    AppVersionFactory(app=App.objects.get(name="real_app"), plan_class="cuda", version_num=101)
    (shape,) = project_app_shapes(project=project)
    assert sorted(v.proc_type.value for v in shape.versions) == [ProcType.CPU.value, ProcType.NVIDIA.value]


def test_deprecated_app_is_left_out(project) -> None:
    App.objects.filter(name="real_app").update(deprecated=True)
    assert project_app_shapes(project=project) == []


def test_run_stores_one_run_per_policy(scenario) -> None:
    runs = scenario_run(scenario=scenario, policies=list(PolicyName), days=2)
    assert [r.policy for r in runs] == ["v4", "v6-gpu", "rec"]
    assert EmulationRun.objects.filter(scenario=scenario).count() == 3


def test_run_uses_the_project_apps(scenario) -> None:
    (run,) = scenario_run(scenario=scenario, policies=[PolicyName.V6_GPU], days=2)
    # The project's app has no GPU version, so B (the stand-in) never uses the GPU.
    assert run.figures["shares"]["B"]["NVIDIA"] == 0.0


def test_run_as_written_keeps_the_scenario_apps(scenario) -> None:
    (run,) = scenario_run(scenario=scenario, policies=[PolicyName.V6_GPU], days=2, use_project=False)
    assert run.figures["shares"]["B"]["NVIDIA"] > 0.0


def test_run_stores_chart_table_and_the_five_figures(scenario) -> None:
    (run,) = scenario_run(scenario=scenario, policies=[PolicyName.REC], days=1)
    assert run.chart_svg.startswith("<svg")
    assert "figure of merit" in run.table
    assert set(run.figures["figures"]) == {
        "idle_fraction",
        "wasted_fraction",
        "share_violation",
        "monotony",
        "rpcs_per_job",
    }


def test_project_without_runnable_apps_is_refused(scenario) -> None:
    App.objects.update(deprecated=True)
    with pytest.raises(ScenarioError):
        scenario_run(scenario=scenario, policies=[PolicyName.REC], days=1)


def test_admin_page_runs_and_shows_chart_and_table(admin_client, scenario) -> None:
    url = f"/admin/emulator/scenario/{scenario.pk}/run/"
    response = admin_client.post(url, {"policy": "all", "days": "2", "use_project": "on"}, follow=True)
    content = response.content.decode()
    assert response.status_code == 200
    assert content.count('<div class="emulation-chart"') == 3
    assert 'id="emulation-comparison"' in content


def test_admin_form_refuses_an_invalid_scenario(admin_client, project) -> None:
    response = admin_client.post(
        "/admin/emulator/scenario/add/", {"name": "bad", "project": project.pk, "text": "host: 3\n"}
    )
    assert "Not a valid scenario" in response.content.decode()


def test_admin_action_runs_all_three_policies(admin_client, scenario) -> None:
    Scenario.objects.filter(pk=scenario.pk).update(
        text=EXAMPLE1.replace("duration_days: 30", "duration_days: 1")
    )
    admin_client.post(
        "/admin/emulator/scenario/", {"action": "run_all_policies", "_selected_action": [scenario.pk]}
    )
    assert EmulationRun.objects.filter(scenario=scenario).count() == 3


def test_run_page_of_a_stored_run_shows_its_chart(admin_client, scenario) -> None:
    (run,) = scenario_run(scenario=scenario, policies=[PolicyName.REC], days=1)
    response = admin_client.get(f"/admin/emulator/emulationrun/{run.pk}/change/")
    assert "<svg" in response.content.decode()


def test_run_page_says_which_client_each_policy_models(admin_client, scenario) -> None:
    content = admin_client.get(f"/admin/emulator/scenario/{scenario.pk}/run/").content.decode()
    assert "v4: the 4.x client" in content
    assert "v6-gpu: the GPU work-fetch design" in content
    assert (
        "rec: today&#x27;s client (recent estimated credit), checked against BOINC&#x27;s own client emulator"
        in content
    )
