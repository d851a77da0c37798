"""The top lists at a large project's size: only their first rows are paged, and a team's
member count is the team's own."""

from __future__ import annotations

import pytest

from apps.portal import volunteer_views
from tests.factories import AccountFactory, ProjectFactory, TeamFactory

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
