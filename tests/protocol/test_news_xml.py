"""gui_urls, rss_feeds and RSS 2.0 as the BOINC client reads them."""

from datetime import UTC, datetime

import pytest

from apps.protocol import ProtocolError, SchedulerReply, parse_reply, render_reply
from apps.protocol.news_xml import (
    GuiUrl,
    RssChannel,
    RssFeed,
    RssItem,
    parse_gui_urls,
    parse_rss,
    parse_rss_feeds,
    render_gui_urls,
    render_rss,
    render_rss_feeds,
)

WHEN = datetime(2026, 11, 29, 1, 2, 3, tzinfo=UTC)


def test_gui_urls_and_rss_feeds_are_sibling_blocks_of_the_reply():
    links = (GuiUrl("Your tasks", "Recent tasks & more", "https://p.example/results.php?userid=1&x=2"),)
    feeds = (RssFeed("https://p.example/notices.php?userid=1&auth=1_ab"),)
    body = render_reply(SchedulerReply(gui_urls=render_gui_urls(links), rss_feeds=render_rss_feeds(feeds)))
    assert b"</gui_urls>\n<rss_feeds>" in body.replace(b"    ", b"")
    assert b"notices.php?userid=1&amp;auth=1_ab" in body
    reply = parse_reply(body)
    assert parse_gui_urls(reply.gui_urls or "") == links
    assert parse_rss_feeds(reply.rss_feeds or "") == ((RssFeed(feeds[0].url, 86400)),)


def test_an_rss_item_keeps_what_the_client_reads():
    item = RssItem("A & B", "https://p.example/news.php#news-1", "g1", "<p>x &amp; <b>y</b></p>", WHEN)
    body = render_rss(RssChannel("P news", "https://p.example/", "News", WHEN, (item,)))
    assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0">')
    assert b"<pubDate>Sun, 29 Nov 2026 01:02:03 GMT</pubDate>" in body
    assert b"&lt;p&gt;x &amp;amp; &lt;b&gt;y&lt;/b&gt;&lt;/p&gt;" in body
    assert parse_rss(body).items == (item,)


def test_an_rss_document_without_a_channel_is_refused():
    with pytest.raises(ProtocolError, match="channel"):
        parse_rss(b'<rss version="2.0"></rss>')
