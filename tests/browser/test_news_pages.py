"""The news, as an administrator writes it and a volunteer reads it, at 1366 and 390 px."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from tests.browser.conftest import admin_login
from tests.factories import NewsItemFactory, ProjectFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_URL = "https://example.org/" + "a-very-long-path-segment/" * 8


def test_an_administrator_writes_news_and_a_volunteer_reads_it(live_server, page, look_phone_last):
    look = look_phone_last
    project = ProjectFactory(slug="herald", name="Herald")
    get_user_model().objects.create_superuser("boss", "boss@example.com", "s3cret-pass")
    admin_login(page, live_server.url, "boss", "s3cret-pass")
    page.goto(f"{live_server.url}/admin/news/newsitem/add/")
    look(page, "admin-add")
    page.select_option("#id_project", str(project.pk))
    page.fill("#id_title", "Version 2 is out")
    page.fill(
        "#id_body",
        f"[b]Faster[/b] tasks.\n\n<script>document.title='owned'</script> Notes: [url={LONG_URL}]here[/url]",
    )
    page.click("input[name=_save]")
    page.wait_for_url("**/admin/news/newsitem/")
    look(page, "admin-list")
    assert page.locator("#result_list").inner_text().count("Version 2 is out") == 1

    page.goto(f"{live_server.url}/herald/")
    look(page, "home")
    article = page.locator("article.news")
    assert article.locator("h3").inner_text() == "Version 2 is out"
    assert article.locator("strong").inner_text() == "Faster"
    assert "<script>document.title='owned'</script>" in article.inner_text()
    assert page.title() == "Herald"
    assert article.locator("a").get_attribute("href") == LONG_URL


def test_the_news_page_on_a_phone(live_server, page, look_desktop_last):
    look = look_desktop_last
    project = ProjectFactory(slug="archive", name="Archive")
    for n in range(25):
        NewsItemFactory(
            project=project,
            title=f"Item {n}",
            body=f"Text of item {n}.\n\nSee [url]{LONG_URL}[/url]",
            published=timezone.now() - timedelta(days=n),
        )
    page.goto(f"{live_server.url}/archive/")
    look(page, "home-with-more")
    page.click("text=All news")
    page.wait_for_url("**/archive/news.php")
    look(page, "news-page")
    assert page.locator("article.news").count() == 20
    page.click("text=next →")
    page.wait_for_url("**/archive/news.php?page=2")
    look(page, "news-page-2")
    assert page.locator("article.news h3").all_inner_texts() == [f"Item {n}" for n in range(20, 25)]
