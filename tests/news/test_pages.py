"""The news on the project's pages and in the admin."""

from datetime import timedelta

import pytest
from django.utils import timezone
from lxml import html

from apps.news.models import NewsItem
from tests.factories import AccountFactory, NewsItemFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory(slug="newsy", name="Newsy")


def _page(client, url: str):
    response = client.get(url)
    assert response.status_code == 200
    return html.fromstring(response.content)


def test_the_home_page_shows_the_latest_public_news(client, project):
    NewsItemFactory(project=project, title="Launch", body="We are [b]live[/b].")
    NewsItemFactory(project=project, title="Private", account=AccountFactory(project=project))
    NewsItemFactory(project=project, title="Team only", team=TeamFactory(project=project))
    page = _page(client, "/newsy/")
    assert [h.text_content() for h in page.xpath("//article[@class='news']/h3")] == ["Launch"]
    assert page.xpath("//article[@class='news']//strong")[0].text_content() == "live"


def test_the_home_page_says_when_there_is_no_news(client, project):
    assert _page(client, "/newsy/").get_element_by_id("no-news").text_content() == "No news yet."


def test_html_in_an_item_is_shown_as_text(client, project):
    NewsItemFactory(project=project, title="<b>T</b>", body="<script>alert(1)</script>")
    page = _page(client, "/newsy/")
    article = page.xpath("//article[@class='news']")[0]
    assert not article.xpath(".//script|.//b")
    assert "<script>alert(1)</script>" in article.text_content()
    assert article.xpath("h3")[0].text_content() == "<b>T</b>"


def test_the_home_page_links_all_news_when_there_is_more(client, project):
    for n in range(6):
        NewsItemFactory(project=project, title=f"Item {n}", published=timezone.now() - timedelta(hours=n))
    page = _page(client, "/newsy/")
    assert len(page.xpath("//article[@class='news']")) == 5
    assert page.xpath("//a[text()='All news']/@href") == ["/newsy/news.php"]


def test_the_news_page_lists_every_public_item(client, project):
    for n in range(6):
        NewsItemFactory(project=project, title=f"Item {n}", published=timezone.now() - timedelta(hours=n))
    page = _page(client, "/newsy/news.php")
    assert [h.text_content() for h in page.xpath("//article[@class='news']/h3")] == [
        f"Item {n}" for n in range(6)
    ]
    assert page.xpath("//link[@type='application/rss+xml']/@href") == ["/newsy/rss_main.php"]


def test_an_admin_writes_a_news_item(admin_client, project):
    response = admin_client.post(
        "/admin/news/newsitem/add/",
        {
            "project": project.pk,
            "title": "Written here",
            "body": "Hello",
            "published_0": timezone.now().strftime("%Y-%m-%d"),
            "published_1": timezone.now().strftime("%H:%M:%S"),
            "send_as_notice": "on",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    assert NewsItem.objects.get().title == "Written here"


def test_an_item_for_both_a_user_and_a_team_is_refused(admin_client, project):
    response = admin_client.post(
        "/admin/news/newsitem/add/",
        {
            "project": project.pk,
            "title": "Both",
            "published_0": timezone.now().strftime("%Y-%m-%d"),
            "published_1": timezone.now().strftime("%H:%M:%S"),
            "account": AccountFactory(project=project).pk,
            "team": TeamFactory(project=project).pk,
        },
    )
    assert response.status_code == 200
    assert "not both" in response.content.decode()
    assert not NewsItem.objects.exists()


def test_the_admin_previews_an_item_escaped(admin_client, project):
    item = NewsItemFactory(project=project, body="<i>x</i> [i]y[/i]")
    text = admin_client.get(f"/admin/news/newsitem/{item.pk}/change/").content.decode()
    assert "&lt;i&gt;x&lt;/i&gt; <em>y</em>" in text
