"""What news each reader gets: the pages and feeds, and the scheduler reply's share.

A news item is public unless it names one user or one team; a future ``published`` time
holds it back everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.db.models import Q, QuerySet
from django.urls import reverse

from apps.news.domain.feed_keys import feed_key, feed_key_matches
from apps.news.domain.markup import markup_html, notice_text
from apps.news.models import NewsItem
from apps.projects.models import Project
from apps.protocol import MessagePriority, ReplyMessage, xml_safe_text
from apps.protocol.news_xml import (
    GuiUrl,
    RssChannel,
    RssFeed,
    RssItem,
    render_gui_urls,
    render_rss,
    render_rss_feeds,
)
from apps.volunteers.models import Account

# The client forgets notices older than 30 days; BOINC's notices.php sends no older ones.
NOTICE_DAYS = 30
# At most this many news notices in one scheduler reply, newest first.
MAX_REPLY_NOTICES = 3
RSS_ITEMS = 20


def _public(project: Project, now: datetime) -> QuerySet[NewsItem]:
    return NewsItem.objects.filter(project=project, published__lte=now, account=None, team=None)


def public_news(*, project: Project, now: datetime) -> QuerySet[NewsItem]:
    """The project's public news, newest first (pages and rss_main.php)."""
    return _public(project, now)


def account_news(*, account: Account, now: datetime, since: datetime) -> QuerySet[NewsItem]:
    """What ``account`` is shown: public news and the items for it or its team, newest first."""
    mine = Q(account=None, team=None) | Q(account=account)
    if account.team_id is not None:
        mine |= Q(team_id=account.team_id)
    return NewsItem.objects.filter(
        mine, project_id=account.project_id, published__lte=now, published__gt=since
    )


def _absolute(project: Project, path: str, query: dict[str, str | int] | None = None) -> str:
    return f"{project.public_base}{path}" + (f"?{urlencode(query)}" if query else "")


def item_url(item: NewsItem, project: Project) -> str:
    """Where an item is read: the news page for a public one, the project's home otherwise."""
    if item.is_public:
        return _absolute(project, reverse("news:page", kwargs={"slug": project.slug})) + f"#news-{item.pk}"
    return project.master_url


def feed_url(*, project: Project, account: Account) -> str:
    """The address of the account's personal feed, as the scheduler advertises it."""
    key = feed_key(userid=account.pk, authenticator=account.authenticator, passwd_hash=account.passwd_hash)
    path = reverse("news:notices", kwargs={"slug": project.slug})
    return _absolute(project, path, {"userid": account.pk, "auth": key})


def feed_account(*, project: Project, userid: int, key: str) -> Account | None:
    """The account whose feed key ``key`` is, or None."""
    account = Account.objects.filter(project=project, pk=userid).first()
    if account is None or not feed_key_matches(
        key, userid=account.pk, authenticator=account.authenticator, passwd_hash=account.passwd_hash
    ):
        return None
    return account


def rss_document(*, project: Project, items: list[NewsItem], now: datetime, title: str) -> bytes:
    channel = RssChannel(
        title=xml_safe_text(title),
        link=project.master_url,
        description=xml_safe_text(f"News of {project.name}"),
        built=now,
        items=tuple(
            RssItem(
                title=xml_safe_text(item.title),
                link=item_url(item, project),
                guid=f"{project.master_url}news/{item.pk}",
                description=xml_safe_text(markup_html(item.body)),
                published=item.published,
            )
            for item in items
        ),
    )
    return render_rss(channel)


def main_feed(*, project: Project, now: datetime) -> bytes:
    """rss_main.php: the public news."""
    items = list(public_news(project=project, now=now)[:RSS_ITEMS])
    return rss_document(project=project, items=items, now=now, title=f"{project.name} news")


def personal_feed(*, account: Account, now: datetime) -> bytes:
    """notices.php: the last 30 days of the news ``account`` is shown, its own items included."""
    project = account.project
    since = now - timedelta(days=NOTICE_DAYS)
    items = list(account_news(account=account, now=now, since=since)[:RSS_ITEMS])
    return rss_document(project=project, items=items, now=now, title=f"{project.name} notices")


@dataclass(frozen=True, slots=True)
class ReplyNews:
    """The scheduler reply's share: news notices, the Manager's links and the feed to poll."""

    notices: tuple[ReplyMessage, ...]
    gui_urls: str
    rss_feeds: str


def gui_links(*, project: Project, account: Account, forum_url: str) -> list[GuiUrl]:
    """The BOINC Manager's links: BOINC's page names under the master URL (the Manager and
    volunteers' habits know them; the pages answer to them, see the volunteer URLs), and the
    project's forum (its ProjectLinks) when it has one."""
    base, name = project.master_url, xml_safe_text(project.name)
    links = []
    if forum_url:
        links.append(GuiUrl("Message boards", f"Talk with other users of {name}", forum_url))
    links += [
        GuiUrl("Your account", "Your account and credit", f"{base}account/"),
        GuiUrl("Your preferences", "Your computing preferences", f"{base}prefs.php"),
        GuiUrl("Your tasks", "Your computers' recent tasks", f"{base}results.php?userid={account.pk}"),
    ]
    if account.team_id is not None:
        team_url = f"{base}team_display.php?teamid={account.team_id}"
        links.append(GuiUrl("Your team", "Your team's members and credit", team_url))
    links.append(GuiUrl("News", f"News of {name}", f"{base}news.php"))
    return links


def reply_news(
    *, project: Project, account: Account, now: datetime, has_notices: bool, forum_url: str
) -> ReplyNews:
    """The news share of a scheduler reply to ``account``'s computer. The scheduler passes
    what it caches per project: whether any item is sent as a notice (without one, news
    costs the RPC no query) and the forum's address."""
    notices: tuple[ReplyMessage, ...] = ()
    if has_notices:
        since = now - timedelta(days=NOTICE_DAYS)
        items = account_news(account=account, now=now, since=since).filter(send_as_notice=True)
        notices = tuple(
            ReplyMessage(
                xml_safe_text(notice_text(item.title, item.body, item_url(item, project))),
                MessagePriority.NOTICE,
            )
            for item in items[:MAX_REPLY_NOTICES]
        )
    return ReplyNews(
        notices=notices,
        gui_urls=render_gui_urls(gui_links(project=project, account=account, forum_url=forum_url)),
        rss_feeds=render_rss_feeds([RssFeed(feed_url(project=project, account=account))]),
    )
