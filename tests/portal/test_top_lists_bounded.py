"""The top lists at a large project's size: only their first rows are paged, and a team's
member count is the team's own."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.portal import volunteer_views
from tests.factories import AccountFactory, HostFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


def test_top_users_pages_only_the_first_rows(client, monkeypatch):
    monkeypatch.setattr(volunteer_views, "TOP_ROWS", 2)
    project = ProjectFactory(slug="tl")
    for name, credit in (("First", 30.0), ("Second", 20.0), ("Third", 10.0)):
        AccountFactory(project=project, name=name, expavg_credit=credit)
    body = client.get("/tl/top_users.php?page=9").content.decode()
    assert "Second" in body
    assert "Third" not in body


def test_top_teams_count_each_teams_members(client):
    project = ProjectFactory(slug="tt")
    big = TeamFactory(project=project, name="Big", expavg_credit=2)
    TeamFactory(project=project, name="Empty", expavg_credit=1)
    for _ in range(3):
        AccountFactory(project=project, team=big)
    teams = client.get("/api/v1/projects/tt/teams/").json()
    rows = teams["results"] if isinstance(teams, dict) else teams
    assert [(t["name"], t["nusers"]) for t in rows] == [("Big", 3), ("Empty", 0)]


def test_a_deep_page_of_top_hosts_lists_its_own_hosts_in_rank_order(client, monkeypatch):
    monkeypatch.setattr(volunteer_views, "PAGE_SIZE", 2)
    project = ProjectFactory(slug="th")
    for rank, credit in enumerate((50.0, 40.0, 30.0, 30.0, 10.0), start=1):
        HostFactory(project=project, p_model=f"rank{rank}", expavg_credit=credit)
    body = client.get("/th/top_hosts.php?page=2").content.decode()
    assert [name for name in ("rank1", "rank2", "rank3", "rank4", "rank5") if name in body] == [
        "rank3",
        "rank4",
    ]
    assert body.index("rank3") < body.index("rank4")  # equal credit: the older host first


def test_a_deep_page_joins_only_its_own_rows(client, monkeypatch):
    monkeypatch.setattr(volunteer_views, "PAGE_SIZE", 1)
    project = ProjectFactory(slug="td")
    for credit in range(6):
        HostFactory(project=project, expavg_credit=float(credit))
    client.get("/td/top_hosts.php?page=1")
    with CaptureQueriesContext(connection) as first:
        client.get("/td/top_hosts.php?page=1")
    with CaptureQueriesContext(connection) as deep:
        client.get("/td/top_hosts.php?page=5")
    joined = [q["sql"] for q in deep.captured_queries if '"volunteers_account"' in q["sql"]]
    assert len(deep) == len(first)
    assert joined
    assert not any("OFFSET" in sql for sql in joined)
