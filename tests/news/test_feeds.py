"""rss_main.php and notices.php: BOINC's RSS feeds of a project's news."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.news.services import feed_url
from apps.protocol.news_xml import parse_rss
from apps.protocol.web_rpc import parse_account_reply
from tests.factories import AccountFactory, NewsItemFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory(slug="newsy", name="Newsy")


def _titles(response) -> list[str]:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/rss+xml")
    return [item.title for item in parse_rss(response.content).items]


def _notices(client, project, account, **query):
    url = feed_url(project=project, account=account).split("?", 1)[0]
    return client.get(url, query)


def test_rss_main_lists_public_news_newest_first(client, project):
    NewsItemFactory(project=project, title="Older", published=timezone.now() - timedelta(days=2))
    NewsItemFactory(project=project, title="Newer")
    assert _titles(client.get("/newsy/rss_main.php")) == ["Newer", "Older"]


def test_rss_main_leaves_out_personal_team_and_future_items(client, project):
    account = AccountFactory(project=project)
    NewsItemFactory(project=project, title="For one", account=account)
    NewsItemFactory(project=project, title="For a team", team=TeamFactory(project=project))
    NewsItemFactory(project=project, title="Later", published=timezone.now() + timedelta(hours=1))
    NewsItemFactory(project=ProjectFactory(slug="other"), title="Elsewhere")
    assert _titles(client.get("/newsy/rss_main.php")) == []


def test_an_item_s_html_reaches_the_feed_escaped(client, project):
    NewsItemFactory(project=project, body='<img src=x onerror="alert(1)"> [b]ok[/b]')
    description = parse_rss(client.get("/newsy/rss_main.php").content).items[0].description
    assert description == "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt; <strong>ok</strong></p>"


def test_notices_gives_an_account_its_own_and_its_team_s_items(client, project):
    team = TeamFactory(project=project)
    account = AccountFactory(project=project, team=team)
    NewsItemFactory(project=project, title="Public")
    NewsItemFactory(project=project, title="Mine", account=account)
    NewsItemFactory(project=project, title="Our team", team=team)
    NewsItemFactory(project=project, title="Someone else's", account=AccountFactory(project=project))
    NewsItemFactory(project=project, title="Old", published=timezone.now() - timedelta(days=31))
    response = client.get(feed_url(project=project, account=account))
    assert sorted(_titles(response)) == ["Mine", "Our team", "Public"]


def test_notices_is_never_cached(client, project):
    account = AccountFactory(project=project)
    response = client.get(feed_url(project=project, account=account))
    assert "no-store" in response["Cache-Control"]


def test_notices_with_a_wrong_key_answers_boinc_s_error(client, project):
    account = AccountFactory(project=project)
    NewsItemFactory(project=project, title="Mine", account=account)
    reply = parse_account_reply(
        _notices(client, project, account, userid=account.pk, auth=f"{account.pk}_0").content
    )
    assert (reply.error_num, reply.error_msg) == (-155, "Invalid authenticator")


def test_notices_does_not_take_the_account_key_itself(client, project):
    account = AccountFactory(project=project)
    response = _notices(client, project, account, userid=account.pk, auth=account.authenticator)
    assert parse_account_reply(response.content).error_num == -155


def test_notices_without_a_userid_answers_boinc_s_error(client, project):
    account = AccountFactory(project=project)
    response = _notices(client, project, account, userid="x", auth="1_2")
    assert parse_account_reply(response.content).error_num == -1


def test_a_new_password_changes_the_feed_address(project):
    account = AccountFactory(project=project)
    before = feed_url(project=project, account=account)
    account.set_password("another secret")
    assert feed_url(project=project, account=account) != before


def test_an_unknown_project_s_feed_is_a_404_error_document(client):
    response = client.get("/nosuch/rss_main.php")
    assert response.status_code == 404
    assert parse_account_reply(response.content).error_num == -136
