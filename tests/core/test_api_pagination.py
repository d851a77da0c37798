"""The API's lists are not counted row by row: ``count`` is estimated or capped, and the pages
themselves still reach every row."""

from __future__ import annotations

import pytest
from django.db import connection

from apps.core import admin_paging
from apps.core.api.pagination import EstimatedCountPagination
from apps.volunteers.models import Account
from tests.factories import AccountFactory, ProjectFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/projects/pg/users/"


@pytest.fixture
def accounts():
    project = ProjectFactory(slug="pg")
    return [AccountFactory(project=project, name=f"user{i}", expavg_credit=10.0 - i) for i in range(5)]


def names(body: dict) -> list[str]:
    return [row["name"] for row in body["results"]]


def test_list_beyond_the_count_cap_shows_every_row_and_the_capped_count(client, accounts, monkeypatch):
    monkeypatch.setattr(admin_paging, "COUNT_CAP", 2)
    body = client.get(URL).json()
    assert body["count"] == 3
    assert names(body) == [f"user{i}" for i in range(5)]


def test_pages_past_the_capped_count_are_reached_by_next(client, accounts, monkeypatch):
    monkeypatch.setattr(admin_paging, "COUNT_CAP", 2)
    monkeypatch.setattr(EstimatedCountPagination, "page_size", 2)
    seen, url = [], URL
    while url:
        body = client.get(url).json()
        seen += names(body)
        url = body["next"]
    assert seen == [f"user{i}" for i in range(5)]


def test_page_past_the_last_row_is_a_404(client, accounts, monkeypatch):
    monkeypatch.setattr(EstimatedCountPagination, "page_size", 2)
    assert client.get(URL + "?page=4").status_code == 404


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the estimate is PostgreSQL's")
def test_count_of_a_big_table_is_the_planner_estimate(accounts, monkeypatch):
    monkeypatch.setattr(admin_paging, "ESTIMATE_FROM", 1)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Account._meta.db_table}")
    paginator = EstimatedCountPagination.django_paginator_class(Account.objects.order_by("id"), 2)
    assert paginator.count == 5
    assert [a.name for a in paginator.page(3)] == ["user4"]
