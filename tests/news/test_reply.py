"""The scheduler reply's news: notices, the BOINC Manager's project links and the feed to poll."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.news.models import ProjectLinks
from apps.projects.services import project_create
from apps.protocol import MessagePriority
from apps.protocol.news_xml import parse_gui_urls, parse_rss, parse_rss_feeds
from tests.factories import AccountFactory, NewsItemFactory, TeamFactory
from tests.scheduler.conftest import make_request, rpc

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return project_create(slug="sched", name="Scheduler Test").project


@pytest.fixture
def account(project):
    return AccountFactory(project=project)


def feeds_of(reply):
    return parse_rss_feeds(reply.rss_feeds or "")


def _notices(reply) -> list[str]:
    return [m.text for m in reply.messages if m.priority == MessagePriority.NOTICE]


def test_a_news_item_is_sent_as_a_notice_with_its_link(client, project, account):
    item = NewsItemFactory(project=project, title="New app", body="[b]Try[/b] it.")
    reply = rpc(client, project, make_request(account.authenticator))
    assert f"New app: Try it. {project.master_url}news.php#news-{item.pk}" in _notices(reply)


def test_only_recent_items_marked_for_notices_are_sent(client, project, account):
    NewsItemFactory(project=project, title="Quiet", send_as_notice=False)
    NewsItemFactory(project=project, title="Stale", published=timezone.now() - timedelta(days=31))
    NewsItemFactory(project=project, title="Soon", published=timezone.now() + timedelta(hours=1))
    reply = rpc(client, project, make_request(account.authenticator))
    assert not [text for text in _notices(reply) if text.startswith(("Quiet", "Stale", "Soon"))]


def test_a_personal_item_reaches_only_its_user(client, project, account):
    NewsItemFactory(project=project, title="For you", account=account)
    other = AccountFactory(project=project)
    mine = rpc(client, project, make_request(account.authenticator))
    theirs = rpc(client, project, make_request(other.authenticator))
    assert any(text.startswith("For you: ") for text in _notices(mine))
    assert not any(text.startswith("For you: ") for text in _notices(theirs))


def test_the_reply_carries_the_manager_s_links(client, project, account):
    links = parse_gui_urls(rpc(client, project, make_request(account.authenticator)).gui_urls or "")
    base = project.master_url
    assert [(link.name, link.url) for link in links] == [
        ("Your account", f"{base}account/"),
        ("Your preferences", f"{base}prefs.php"),
        ("Your tasks", f"{base}results.php?userid={account.pk}"),
        ("News", f"{base}news.php"),
    ]


def test_a_team_member_and_a_project_with_a_forum_get_those_links_too(client, project, account):
    account.team = TeamFactory(project=project)
    account.save()
    ProjectLinks.objects.create(project=project, forum_url="https://forum.example.org/")
    links = parse_gui_urls(rpc(client, project, make_request(account.authenticator)).gui_urls or "")
    urls = {link.name: link.url for link in links}
    assert urls["Message boards"] == "https://forum.example.org/"
    assert urls["Your team"] == f"{project.master_url}team_display.php?teamid={account.team_id}"


def test_the_advertised_feed_gives_the_account_s_notices(client, project, account):
    NewsItemFactory(project=project, title="Mine", account=account)
    feeds = parse_rss_feeds(rpc(client, project, make_request(account.authenticator)).rss_feeds or "")
    assert [feed.poll_interval for feed in feeds] == [86400]
    response = client.get(feeds[0].url.removeprefix(project.public_base))
    assert [item.title for item in parse_rss(response.content).items] == ["Mine"]


def test_every_link_leads_to_a_page(client, project, account):
    account.team = TeamFactory(project=project)
    account.save()
    links = parse_gui_urls(rpc(client, project, make_request(account.authenticator)).gui_urls or "")
    for link in links:
        status = client.get(link.url.removeprefix(project.public_base)).status_code
        assert status in (200, 302, 403), link  # a page, perhaps asking to log in first


def test_a_control_character_in_an_item_does_not_break_the_reply_or_the_feed(client, project, account):
    NewsItemFactory(project=project, title="Bell\x07", body="Form\x0cfeed \x01")
    reply = rpc(client, project, make_request(account.authenticator))
    assert any(text.startswith("Bell?: ") for text in _notices(reply))
    response = client.get(feeds_of(reply)[0].url.removeprefix(project.public_base))
    assert [item.title for item in parse_rss(response.content).items] == ["Bell?"]


def test_an_rpc_of_a_project_without_notices_reads_no_news_table(client, project, account):
    NewsItemFactory(project=project, title="Quiet", send_as_notice=False)
    rpc(client, project, make_request(account.authenticator))  # the catalog is read once
    with CaptureQueriesContext(connection) as queries:
        rpc(client, project, make_request(account.authenticator))
    assert not [q["sql"] for q in queries if "news_" in q["sql"]]


def test_an_item_written_after_an_rpc_is_sent_with_the_next_one(client, project, account):
    rpc(client, project, make_request(account.authenticator))
    NewsItemFactory(project=project, title="Fresh")
    reply = rpc(client, project, make_request(account.authenticator))
    assert any(text.startswith("Fresh: ") for text in _notices(reply))


def test_a_forum_set_after_an_rpc_is_linked_in_the_next_one(client, project, account):
    rpc(client, project, make_request(account.authenticator))
    ProjectLinks.objects.create(project=project, forum_url="https://forum.example.org/")
    links = parse_gui_urls(rpc(client, project, make_request(account.authenticator)).gui_urls or "")
    assert "https://forum.example.org/" in [link.url for link in links]
