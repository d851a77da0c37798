"""The badge pass: given, taken back, kept; shown on the pages; in the stats export."""

from __future__ import annotations

import gzip
from datetime import timedelta

import pytest
from lxml import etree

from apps.account_deletion.services import account_delete
from apps.portal.stats_export import stats_dir, stats_export_write
from apps.projects.models import DaemonRun
from apps.volunteers.models import Account, BadgeAward
from apps.volunteers.services.badges import badges_assign
from apps.volunteers.tasks import badges_task
from tests.factories import AccountFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(db):
    return ProjectFactory(slug="bd")


@pytest.fixture
def crowd(project):
    """Twenty users with recent averages 10..200: the top one is in the top 1%, the next four
    in the top 25%; the top one has 20,000 credits."""
    return [
        AccountFactory(
            project=project, name=f"u{i}", total_credit=20_000.0 if i == 20 else 100.0, expavg_credit=10.0 * i
        )
        for i in range(1, 21)
    ]


def titles(owner) -> list[str]:
    return sorted(BadgeAward.objects.filter(**owner).values_list("badge__title", flat=True))


def test_users_get_their_highest_percentile_and_credit_badges(crowd, now):
    badges_assign(project=crowd[0].project, now=now)
    assert titles({"account": crowd[19]}) == ["10,000 credits", "Top 1% in average credit"]
    assert titles({"account": crowd[18]}) == ["Top 25% in average credit"]
    assert titles({"account": crowd[0]}) == []


def test_a_badge_no_longer_earned_is_taken_back(crowd, now):
    project = crowd[0].project
    badges_assign(project=project, now=now)
    Account.objects.filter(pk=crowd[18].pk).update(expavg_credit=5.0)
    done = badges_assign(project=project, now=now + timedelta(days=1))
    assert titles({"account": crowd[18]}) == []
    assert done.taken == 1


def test_a_badge_kept_keeps_its_first_time_and_is_confirmed(crowd, now):
    project = crowd[0].project
    badges_assign(project=project, now=now)
    later = now + timedelta(days=1)
    badges_assign(project=project, now=later)
    award = BadgeAward.objects.filter(account=crowd[19]).first()
    assert (award.create_time, award.reassign_time) == (now, later)


def test_teams_get_badges_among_teams(project, now):
    big = TeamFactory(project=project, total_credit=2e6, expavg_credit=500.0)
    TeamFactory(project=project, total_credit=10.0, expavg_credit=5.0)
    badges_assign(project=project, now=now)
    assert titles({"team": big}) == ["1,000,000 credits", "Top 1% in average credit"]


def test_deleted_accounts_hold_no_badges(crowd, now):
    badges_assign(project=crowd[0].project, now=now)
    account_delete(account_id=crowd[19].pk, now=now)
    badges_assign(project=crowd[0].project, now=now)
    assert titles({"account": crowd[19]}) == []


def test_the_user_and_team_pages_show_the_badges(client, crowd, now):
    team = TeamFactory(project=crowd[0].project, total_credit=2e6, expavg_credit=500.0)
    badges_assign(project=crowd[0].project, now=now)
    user_page = client.get(f"/bd/show_user.php?userid={crowd[19].pk}").content.decode()
    team_page = client.get(f"/bd/team_display.php?teamid={team.pk}").content.decode()
    assert '<li class="badge">Top 1% in average credit</li>' in user_page
    assert '<li class="badge">1,000,000 credits</li>' in team_page


def read_gz(project, name):
    with gzip.open(stats_dir(project) / name) as f:
        return etree.fromstring(f.read())


def test_the_export_lists_the_badges_and_who_holds_them(crowd, now):
    project = crowd[0].project
    badges_assign(project=project, now=now)
    stats_export_write(project=project, now=now)
    tables = etree.parse(str(stats_dir(project) / "tables.xml")).getroot()
    names = {b.findtext("id"): b.findtext("title") for b in tables.find("badges")}
    held = read_gz(project, "badge_user.gz")
    assert held.tag == "badge_users"
    mine = [names[b.findtext("badge_id")] for b in held if b.findtext("user_id") == str(crowd[19].pk)]
    assert sorted(mine) == ["10,000 credits", "Top 1% in average credit"]


def test_the_export_leaves_out_badges_of_users_without_consent(crowd, now):
    project = crowd[0].project
    Account.objects.filter(pk=crowd[19].pk).update(stats_export_consent=False)
    badges_assign(project=project, now=now)
    stats_export_write(project=project, now=now)
    assert str(crowd[19].pk) not in [b.findtext("user_id") for b in read_gz(project, "badge_user.gz")]


def test_the_task_records_its_pass(crowd):
    badges_task()
    assert DaemonRun.objects.filter(project=crowd[0].project, daemon="badges").exists()
