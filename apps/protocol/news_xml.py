"""Project links and news for BOINC clients.

* ``<gui_urls>`` and ``<rss_feeds>``: the contents of the scheduler reply's two blocks. The
  client keeps ``gui_urls`` in its account file (the Manager's project links) and polls each
  ``<rss_feed>`` URL every ``poll_interval`` seconds for notices.
* RSS 2.0 (``rss_main.php``, ``notices.php``): of each ``<item>`` the client reads ``title``,
  ``link``, ``guid``, ``description`` (HTML, shown in the Notices tab) and ``pubDate``
  (RFC 822, in English whatever the server's locale).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from apps.protocol import numbers as num
from apps.protocol.errors import ProtocolError
from apps.protocol.xmlsafe import child_elements, leaf_text, parse_document, parse_fragment
from apps.protocol.xmlwrite import Block, new_document, serialize

MAX_RSS_BYTES = 4 * 1024 * 1024
# How often the client asks for the personal feed: daily, as BOINC's projects advertise it.
FEED_POLL_INTERVAL = 86400
_IN = "    "
_XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'


@dataclass(frozen=True, slots=True)
class GuiUrl:
    """One link of the Manager's project menu."""

    name: str
    description: str
    url: str


@dataclass(frozen=True, slots=True)
class RssFeed:
    url: str
    poll_interval: int = FEED_POLL_INTERVAL


@dataclass(frozen=True, slots=True)
class RssItem:
    title: str
    link: str
    guid: str
    description: str  # HTML, carried as escaped text
    published: datetime


@dataclass(frozen=True, slots=True)
class RssChannel:
    title: str
    link: str
    description: str
    built: datetime
    items: tuple[RssItem, ...] = ()


def _content(doc: Block) -> str:
    """The root's content only: the reply embeds it inside its own element of that name."""
    text = serialize(doc).decode("utf-8")
    return text[len(f"<{doc.tag}>") : -len(f"</{doc.tag}>\n")]


def render_gui_urls(links: Iterable[GuiUrl]) -> str:
    """The content of the reply's ``<gui_urls>``."""
    doc = new_document("gui_urls")
    for link in links:
        with doc.block("gui_url", _IN) as item:
            item.leaf("name", link.name, _IN * 2)
            item.leaf("description", link.description, _IN * 2)
            item.leaf("url", link.url, _IN * 2)
    return _content(doc)


def render_rss_feeds(feeds: Iterable[RssFeed]) -> str:
    """The content of the reply's ``<rss_feeds>``."""
    doc = new_document("rss_feeds")
    for feed in feeds:
        with doc.block("rss_feed", _IN) as item:
            item.leaf("url", feed.url, _IN * 2)
            item.leaf("poll_interval", num.format_int(feed.poll_interval), _IN * 2)
    return _content(doc)


def parse_gui_urls(content: str) -> tuple[GuiUrl, ...]:
    """The links of a ``<gui_urls>`` content (client side, for tests and the emulator)."""
    links = []
    for element in child_elements(parse_fragment(content)):
        if element.tag == "gui_url":
            found = {child.tag: leaf_text(child).strip() for child in child_elements(element)}
            links.append(GuiUrl(found.get("name", ""), found.get("description", ""), found.get("url", "")))
    return tuple(links)


def parse_rss_feeds(content: str) -> tuple[RssFeed, ...]:
    feeds = []
    for element in child_elements(parse_fragment(content)):
        if element.tag == "rss_feed":
            found = {child.tag: leaf_text(child).strip() for child in child_elements(element)}
            interval = num.parse_int(found.get("poll_interval", "0"), "poll_interval")
            feeds.append(RssFeed(found.get("url", ""), interval))
    return tuple(feeds)


def rss_date(when: datetime) -> str:
    return format_datetime(when.astimezone(UTC), usegmt=True)


def render_rss(channel: RssChannel) -> bytes:
    """An RSS 2.0 document, newest item first as given."""
    doc = new_document("rss", {"version": "2.0"})
    with doc.block("channel", _IN) as head:
        head.leaf("title", channel.title, _IN * 2)
        head.leaf("link", channel.link, _IN * 2)
        head.leaf("description", channel.description, _IN * 2)
        head.leaf("lastBuildDate", rss_date(channel.built), _IN * 2)
        for entry in channel.items:
            with head.block("item", _IN * 2) as item:
                item.leaf("title", entry.title, _IN * 3)
                item.leaf("link", entry.link, _IN * 3)
                item.leaf("guid", entry.guid, _IN * 3, {"isPermaLink": "false"})
                item.leaf("description", entry.description, _IN * 3)
                item.leaf("pubDate", rss_date(entry.published), _IN * 3)
    return _XML_DECLARATION + serialize(doc)


def parse_rss(body: bytes, *, max_bytes: int = MAX_RSS_BYTES) -> RssChannel:
    """Read an RSS 2.0 document as the client does (for tests and the emulator)."""
    root = parse_document(body, root="rss", max_bytes=max_bytes)
    channel = next((c for c in child_elements(root) if c.tag == "channel"), None)
    if channel is None:
        raise ProtocolError("rss: no <channel>")
    head: dict[str, str] = {}
    items = []
    for element in child_elements(channel):
        if element.tag == "item":
            found = {child.tag: leaf_text(child).strip() for child in child_elements(element)}
            items.append(
                RssItem(
                    title=found.get("title", ""),
                    link=found.get("link", ""),
                    guid=found.get("guid", ""),
                    description=found.get("description", ""),
                    published=_parse_date(found.get("pubDate", "")),
                )
            )
        else:
            head[element.tag] = leaf_text(element).strip()
    return RssChannel(
        title=head.get("title", ""),
        link=head.get("link", ""),
        description=head.get("description", ""),
        built=_parse_date(head.get("lastBuildDate", "")),
        items=tuple(items),
    )


def _parse_date(text: str) -> datetime:
    try:
        return parsedate_to_datetime(text)
    except (TypeError, ValueError):
        raise ProtocolError(f"rss: not an RFC 822 date: {text!r}") from None
