"""The changelists of the large tables never count every row: an unfiltered list of a big
PostgreSQL table reads the planner's estimate, any other list counts up to a cap; change
pages offer no drop-down of every account."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.core import admin_paging
from apps.hosts.models import Host
from tests.factories import AccountFactory, HostFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


def hosts(n: int, **fields) -> None:
    account = AccountFactory(project=ProjectFactory())
    for _ in range(n):
        HostFactory(account=account, **fields)


def test_filtered_list_counts_up_to_the_cap(admin_client, monkeypatch):
    monkeypatch.setattr(admin_paging, "COUNT_CAP", 2)
    hosts(5, os_name="Linux")
    response = admin_client.get("/admin/hosts/host/?os_name=Linux")
    assert response.context["cl"].result_count == 3


def test_short_list_is_counted_exactly(admin_client):
    hosts(4)
    response = admin_client.get("/admin/hosts/host/")
    assert response.context["cl"].result_count == 4


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the estimate is PostgreSQL's")
def test_unfiltered_large_list_takes_the_planner_estimate(admin_client, monkeypatch):
    monkeypatch.setattr(admin_paging, "ESTIMATE_FROM", 1)
    hosts(3)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Host._meta.db_table}")
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get("/admin/hosts/host/")
    assert response.context["cl"].result_count == 3
    assert not [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"].upper()]


def test_team_page_offers_no_list_of_every_account(admin_client):
    team = TeamFactory()
    AccountFactory(project=team.project, name="unrelated-volunteer")
    response = admin_client.get(f"/admin/volunteers/team/{team.pk}/change/")
    assert b"unrelated-volunteer" not in response.content


def test_host_list_filters_by_operating_system_without_reading_every_host(admin_client):
    hosts(2, os_name="Linux Ubuntu")
    hosts(1, os_name="Microsoft Windows 11")
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get("/admin/hosts/host/?os_name=Linux")
    assert sorted(h.os_name for h in response.context["cl"].result_list) == ["Linux Ubuntu", "Linux Ubuntu"]
    assert not [q["sql"] for q in captured.captured_queries if "DISTINCT" in q["sql"].upper()]
