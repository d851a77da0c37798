"""The stock client shows the project's news among its notices (boinccmd --get_notices).

Both of the client's paths are covered: the scheduler reply's ``<message priority="notice">``
(shown at once after the RPC), and the personal RSS feed the reply's ``<rss_feeds>``
advertises (a feed new to the client is fetched right after the RPC, then daily).
"""

from __future__ import annotations

import pytest

from apps.news.models import NewsItem
from tests.e2e.conftest import make_e2e_project, url_dir_name, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_client_shows_the_news_as_notices_and_keeps_the_project_links(boinc_client, base_url):
    e2e = make_e2e_project(slug="noticed")
    NewsItem.objects.create(project=e2e.project, title="Scheduler news", body="Sent with [b]the reply[/b].")
    NewsItem.objects.create(
        project=e2e.project,
        title="Feed news",
        body="Only in the feed, for you.",
        account=e2e.account,
        send_as_notice=False,
    )
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator, info_fetch=True)

    def notices() -> str:
        return client.cmd("--get_notices").stdout

    wait_until(
        lambda: "Scheduler news: Sent with the reply." in notices(),
        timeout=60,
        what="the notice",
        client=client,
    )
    wait_until(
        lambda: "Only in the feed, for you." in notices(), timeout=60, what="the feed's item", client=client
    )
    account_file = client.read(f"account_{url_dir_name(e2e.master_url)}.xml")
    assert f"{e2e.master_url}results.php?userid={e2e.account.pk}" in account_file
    assert "<name>Your preferences</name>" in account_file
