"""The news markup: what a reader sees of what an administrator typed (no database)."""

from apps.news.domain.markup import (
    MAX_NOTICE_ESCAPED,
    _client_escaped_len,
    markup_html,
    markup_plain,
    notice_text,
)


def test_a_blank_line_starts_a_paragraph_and_a_line_break_is_kept():
    assert markup_html("One\ntwo\n\nThree") == "<p>One<br>\ntwo</p>\n<p>Three</p>"


def test_html_is_shown_as_typed():
    html = markup_html('<script>alert(1)</script> <a href="x" onclick="y">z</a> & more')
    assert "<script>" not in html
    assert "<a " not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&amp; more" in html


def test_bold_italic_and_links_become_html():
    html = markup_html("[b]New[/b] [i]app[/i]: [url=https://example.org/a?b=1&c=2]read[/url]")
    assert html == (
        "<p><strong>New</strong> <em>app</em>: "
        '<a href="https://example.org/a?b=1&amp;c=2" rel="nofollow">read</a></p>'
    )


def test_a_bare_link_shows_its_address():
    assert markup_html("[url]https://example.org/[/url]") == (
        '<p><a href="https://example.org/" rel="nofollow">https://example.org/</a></p>'
    )


def test_a_link_that_is_not_http_stays_text():
    html = markup_html("[url=javascript:alert(1)]x[/url] [url]data:text/html,x[/url]")
    assert "<a" not in html
    assert "[url=javascript:alert(1)]x[/url]" in html


def test_a_quote_cannot_leave_the_link_address():
    html = markup_html('[url=https://example.org/"onmouseover=alert(1)]x[/url]')
    assert "<a" not in html


def test_tags_left_open_are_closed_at_the_end_of_their_paragraph():
    assert markup_html("[b]bold\n\nplain") == "<p><strong>bold</strong></p>\n<p>plain</p>"


def test_a_stray_closing_tag_is_shown_as_typed():
    assert markup_html("a[/b] [x]") == "<p>a[/b] [x]</p>"


def test_plain_text_is_one_line_with_link_addresses():
    text = "[b]New[/b] version.\n\nSee [url=https://example.org/]the notes[/url]."
    assert markup_plain(text) == "New version. See the notes (https://example.org/)."


def test_a_notice_has_title_text_and_link():
    assert notice_text("Hello", "World [i]now[/i]", "https://p.example/news.php#news-1") == (
        "Hello: World now https://p.example/news.php#news-1"
    )


def test_a_long_notice_is_shortened_to_what_the_client_keeps_whole():
    text = notice_text("Title", "é & < " * 500, "https://p.example/n")
    assert _client_escaped_len(text) <= MAX_NOTICE_ESCAPED
    assert text.endswith("... https://p.example/n")
