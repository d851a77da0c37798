"""Cross-project normalization: the exports, the aggregation across local projects and an
external source on a loopback HTTP server, and its effect on GPU-only apps."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from apps.applications.models import App, AppVersion
from apps.credit.cross_project_services import ScaleFetchError, cross_project_normalize, fetch_export
from apps.credit.models import PlanClassScale, ScaleSource
from apps.credit.tasks import cross_project_task
from apps.projects.models import DaemonRun
from apps.protocol.scales_xml import (
    AppVersionScale,
    ScalesExport,
    parse_scales_xml,
    render_scales_xml,
    scales_to_json,
)

pytestmark = pytest.mark.django_db

# Another portal's project: CPU version and a cuda version three times less efficient.
EXTERNAL = ScalesExport(
    project="http://other.example.org/astro/",
    update_time=1_700_000_000,
    rows=(
        AppVersionScale("", "y", "x86_64-pc-linux-gnu", "", 100, 500.0, 1.0, False),
        AppVersionScale("", "y", "x86_64-pc-linux-gnu", "cuda", 100, 1000.0, 0.3, True),
    ),
)


def test_json_export_lists_each_version_with_its_scale(client, mixed_app):
    body = client.get("/api/v1/projects/mixed/app_version_scales/").json()
    assert body["project"] == mixed_app.project.master_url
    rows = {r["plan_class"]: r for r in body["app_versions"]}
    assert rows["cuda"] == {
        "project": mixed_app.project.master_url,
        "app_name": "sim",
        "platform": "x86_64-pc-linux-gnu",
        "plan_class": "cuda",
        "version_num": 100,
        "recent_avg_credit": 3000.0,
        "scale_factor": 0.1,
        "is_gpu": True,
    }
    assert rows[""]["is_gpu"] is False


def test_xml_export_parses_back(client, mixed_app):
    response = client.get("/mixed/app_version_scales.xml")
    assert response["Content-Type"].startswith("text/xml")
    export = parse_scales_xml(response.content)
    assert sorted((r.plan_class, r.scale_factor) for r in export.rows) == [("", 1.0), ("cuda", 0.1)]


def test_exports_leave_out_deprecated_versions_and_need_no_login(client, mixed_app):
    AppVersion.objects.filter(app=mixed_app, plan_class="cuda").update(deprecated=True)
    body = client.get("/api/v1/projects/mixed/app_version_scales/").json()
    assert [r["plan_class"] for r in body["app_versions"]] == [""]
    assert client.get("/api/v1/projects/nope/app_version_scales/").status_code == 404


def test_local_projects_alone_give_the_mixed_apps_factor(mixed_app, gpu_only_app, now):
    outcome = cross_project_normalize(now=now)
    cuda = PlanClassScale.objects.get(plan_class="cuda")
    assert cuda.scale == pytest.approx(0.1)
    assert (cuda.weight, cuda.n_versions) == (3000.0, 1)
    assert outcome.sources_ok == 0


def test_gpu_only_app_takes_the_credit_weighted_factor_of_local_and_external_projects(
    mixed_app, gpu_only_app, export_server, now
):
    export_server.pages["/astro/scales.xml"] = (200, render_scales_xml(EXTERNAL))
    source = ScaleSource.objects.create(url=export_server.url("/astro/scales.xml"))

    outcome = cross_project_normalize(now=now)

    expected = (3000.0 * 0.1 + 1000.0 * 0.3) / 4000.0
    cuda = PlanClassScale.objects.get(plan_class="cuda")
    assert cuda.scale == pytest.approx(expected)
    assert (cuda.weight, cuda.n_versions, cuda.computed_time) == (4000.0, 2, now)
    version = AppVersion.objects.get(app=gpu_only_app)
    assert version.pfc_scale == pytest.approx(expected)
    # The design: X is S(V) * pfc_avg over the anchored versions; it becomes min_avg_pfc.
    assert App.objects.get(pk=gpu_only_app.pk).min_avg_pfc == pytest.approx(expected * 2.0)
    source.refresh_from_db()
    assert (source.last_fetch, source.last_error) == (now, "")
    assert (outcome.sources_ok, outcome.sources_failed, outcome.rows) == (1, 0, 5)


def test_json_source_counts_like_xml(mixed_app, gpu_only_app, export_server, now):
    export_server.pages["/astro.json"] = (200, json.dumps(scales_to_json(EXTERNAL)).encode())
    ScaleSource.objects.create(url=export_server.url("/astro.json"))
    cross_project_normalize(now=now)
    assert PlanClassScale.objects.get(plan_class="cuda").n_versions == 2


def test_mixed_apps_versions_are_not_touched(mixed_app, gpu_only_app, now):
    cross_project_normalize(now=now)
    assert sorted(AppVersion.objects.filter(app=mixed_app).values_list("pfc_scale", flat=True)) == [0.1, 1.0]


def test_failing_source_is_recorded_and_keeps_the_last_factors(mixed_app, export_server, now):
    PlanClassScale.objects.create(plan_class="opencl_ati_101", scale=0.2, computed_time=now)
    export_server.pages["/broken"] = (500, b"oops")
    bad = ScaleSource.objects.create(url=export_server.url("/broken"))
    export_server.pages["/garbage"] = (200, b"<html><body>moved</body></html>")
    garbage = ScaleSource.objects.create(url=export_server.url("/garbage"))

    outcome = cross_project_normalize(now=now)

    bad.refresh_from_db()
    garbage.refresh_from_db()
    assert "500" in bad.last_error
    assert "expected <app_version_scales>" in garbage.last_error
    assert bad.last_fetch == now
    assert outcome.sources_failed == 2
    assert PlanClassScale.objects.filter(plan_class="opencl_ati_101").exists()


def test_without_failures_plan_classes_without_data_are_dropped(mixed_app, now):
    PlanClassScale.objects.create(plan_class="opencl_ati_101", scale=0.2, computed_time=now)
    cross_project_normalize(now=now)
    # The CPU versions' plan class ("") gets its factor too; only GPU-only apps read them.
    assert list(PlanClassScale.objects.values_list("plan_class", flat=True)) == ["", "cuda"]


def test_disabled_sources_and_local_only_runs_fetch_nothing(mixed_app, now):
    def no_network(url: str) -> bytes:
        raise AssertionError(url)

    ScaleSource.objects.create(url="http://127.0.0.1:9/never", enabled=False)
    cross_project_normalize(now=now, fetch=no_network)
    ScaleSource.objects.create(url="http://127.0.0.1:9/local-only")
    cross_project_normalize(now=now, fetch=no_network, external=False)
    assert not ScaleSource.objects.exclude(last_fetch=None).exists()


def test_a_source_exporting_a_local_project_is_counted_once(client, mixed_app, export_server, now):
    export_server.pages["/mixed.xml"] = (200, client.get("/mixed/app_version_scales.xml").content)
    ScaleSource.objects.create(url=export_server.url("/mixed.xml"))
    cross_project_normalize(now=now)
    assert PlanClassScale.objects.get(plan_class="cuda").n_versions == 1


def test_fetch_refuses_other_schemes_and_oversized_bodies(export_server):
    with pytest.raises(ScaleFetchError, match="http"):
        fetch_export("file:///etc/passwd")
    export_server.pages["/big"] = (200, b"x" * 100)
    with pytest.raises(ScaleFetchError, match="larger"):
        fetch_export(export_server.url("/big"), max_bytes=10)


def test_paused_projects_gpu_only_apps_are_left_alone(gpu_only_app, mixed_app, now):
    gpu_only_app.project.paused_daemons = ["cross_project"]
    gpu_only_app.project.save()
    cross_project_normalize(now=now)
    assert AppVersion.objects.get(app=gpu_only_app).pfc_scale == 0


def test_command_prints_the_factors_and_records_a_run(mixed_app, gpu_only_app, capsys):
    call_command("cross_project_normalize", "--local-only")
    out = capsys.readouterr().out
    assert "cuda: scale 0.1" in out
    assert f"GPU-only app {gpu_only_app.pk}: 2 rows changed" in out
    assert DaemonRun.objects.get(daemon="cross_project", project=None).errors == 0


def test_task_records_a_daemon_run(mixed_app, gpu_only_app):
    # Two plan-class factors ("" and cuda) and two rows of the GPU-only app.
    assert cross_project_task() == {"items": 4, "errors": 0}
    run = DaemonRun.objects.get(daemon="cross_project")
    assert "2 plan classes" in run.message
