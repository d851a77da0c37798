"""Admin pages at a real project's size: queries that do not grow with the rows shown,
inlines that do not list thousands of rows."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.emulator.models import EmulationRun, Scenario
from apps.locality.models import LocalityFile, NeedWork
from apps.work.models import Workunit
from tests.factories import (
    AppFactory,
    AppVersionFactory,
    HostAppVersionFactory,
    HostFactory,
    PlatformFactory,
    ProjectFactory,
    WorkSequenceFactory,
)

pytestmark = pytest.mark.django_db


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def same_queries_for(client, url: str, add_rows: Callable[[int], None]) -> tuple[int, int]:
    """Queries of ``url`` with 3 rows, then with 30 (after a first load that fills the
    per-process caches, such as content types)."""
    add_rows(3)
    queries(client, url)
    few = queries(client, url)
    add_rows(27)
    return few, queries(client, url)


def test_need_work_list_takes_the_same_queries_for_3_or_30_signals(admin_client):
    project = ProjectFactory()
    account = HostFactory(project=project).account

    def add(n: int) -> None:
        for _ in range(n):
            file = LocalityFile.objects.create(project=project, name=f"f{LocalityFile.objects.count()}")
            NeedWork.objects.create(
                file=file, requested_time=timezone.now(), requested_by_host=HostFactory(account=account)
            )

    few, many = same_queries_for(admin_client, "/admin/locality/needwork/", add)
    assert many == few


def test_scenario_page_takes_the_same_queries_for_3_or_30_runs(admin_client):
    scenario = Scenario.objects.create(name="s", text="{}")

    def add(n: int) -> None:
        for _ in range(n):
            EmulationRun.objects.create(scenario=scenario, policy="v4", chart_svg="<svg/>")

    few, many = same_queries_for(admin_client, f"/admin/emulator/scenario/{scenario.pk}/change/", add)
    assert many == few


def test_app_page_takes_the_same_queries_for_3_or_30_versions(admin_client):
    app = AppFactory()

    def add(n: int) -> None:
        for _ in range(n):
            AppVersionFactory(app=app, platform=PlatformFactory(name=f"platform{app.versions.count()}"))

    few, many = same_queries_for(admin_client, f"/admin/applications/app/{app.pk}/change/", add)
    assert many == few


def test_host_page_takes_the_same_queries_for_3_or_30_app_versions(admin_client):
    host = HostFactory()

    def add(n: int) -> None:
        for _ in range(n):
            HostAppVersionFactory(
                host=host,
                app_version__app__project=host.project,
                app_version__platform=PlatformFactory(name=f"p{host.app_versions.count()}"),
            )

    few, many = same_queries_for(admin_client, f"/admin/hosts/host/{host.pk}/change/", add)
    assert many == few


@pytest.fixture
def long_sequence():
    sequence = WorkSequenceFactory()
    Workunit.objects.bulk_create(
        Workunit(
            project=sequence.project,
            app=sequence.app,
            name=f"{sequence.name}_s{i}",
            sequence_id=sequence.id,
            sequence_index=i,
        )
        for i in range(80)
    )
    return sequence


def step_names(admin_client, sequence) -> set[str]:
    body = admin_client.get(f"/admin/sequences/worksequence/{sequence.pk}/change/").content.decode()
    return {f"s{i}" for i in range(80) if f"{sequence.name}_s{i}<" in body}


def test_sequence_page_shows_50_steps_from_just_before_the_first_unvalidated(admin_client, long_sequence):
    long_sequence.first_unvalidated = long_sequence.workunits.get(sequence_index=20)
    long_sequence.save()
    assert step_names(admin_client, long_sequence) == {f"s{i}" for i in range(15, 65)}


def test_sequence_page_of_a_validated_sequence_shows_its_last_50_steps(admin_client, long_sequence):
    assert step_names(admin_client, long_sequence) == {f"s{i}" for i in range(30, 80)}


def test_sequence_page_links_to_every_step_in_the_workunit_list(admin_client, long_sequence):
    body = admin_client.get(f"/admin/sequences/worksequence/{long_sequence.pk}/change/").content.decode()
    link = f"/admin/work/workunit/?sequence_id={long_sequence.pk}"
    assert link in body
    listing = admin_client.get(link)
    assert listing.status_code == 200
    assert "80 workunits" in listing.content.decode()


def test_sequence_page_still_saves_with_only_some_steps_shown(admin_client, long_sequence):
    url = f"/admin/sequences/worksequence/{long_sequence.pk}/change/"
    form = admin_client.get(url).context["adminform"].form
    data = {**{k: v for k, v in form.initial.items() if v is not None}, "_save": "Save"}
    response = admin_client.post(url, data)
    assert response.status_code == 302


def test_scenario_page_lists_runs_by_name(admin_client):
    scenario = Scenario.objects.create(name="busy week", text="{}")
    EmulationRun.objects.create(scenario=scenario, policy="rec")
    body = admin_client.get(f"/admin/emulator/scenario/{scenario.pk}/change/").content.decode()
    assert "busy week / rec" in body


def test_need_work_list_shows_the_requesting_host(admin_client):
    host = HostFactory(domain_name="cruncher")
    file = LocalityFile.objects.create(project=host.project, name="big.dat")
    NeedWork.objects.create(
        file=file, requested_time=timezone.now() - timedelta(minutes=1), requested_by_host=host
    )
    assert "cruncher" in admin_client.get("/admin/locality/needwork/").content.decode()
