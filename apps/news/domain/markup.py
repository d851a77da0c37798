"""The news markup: plain text with a few BBCode tags, as BOINC's forums and news use.

* a blank line starts a new paragraph, a single line break is kept;
* ``[b]bold[/b]`` and ``[i]italic[/i]``;
* ``[url=https://example.org/]text[/url]`` and ``[url]https://example.org/[/url]``
  (http and https only);
* anything else, HTML included, is shown as typed.

Every character of the text is escaped: no HTML written by an administrator reaches a page,
the RSS feeds or the client's Notices tab as markup.
"""

from __future__ import annotations

import re
from html import escape

_TOKEN = re.compile(
    r"\[url\](?P<bare>[^\[\]\s]*)\[/url\]|\[(?P<close>/)?(?P<tag>b|i|url)(?:=(?P<arg>[^\]\s]*))?\]",
    re.IGNORECASE,
)
_SAFE_URL = re.compile(r"https?://[^\s<>\"'\[\]\\]+", re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_HTML_TAGS = {"b": "strong", "i": "em"}


def safe_url(url: str) -> bool:
    return _SAFE_URL.fullmatch(url) is not None


def _paragraphs(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()] if text else []


def _link(url: str) -> str:
    return f'<a href="{escape(url)}" rel="nofollow">'


def _escaped(text: str) -> str:
    return escape(text).replace("\n", "<br>\n")


def _paragraph_html(paragraph: str) -> str:
    out: list[str] = []
    open_tags: list[str] = []
    position = 0
    for match in _TOKEN.finditer(paragraph):
        out.append(_escaped(paragraph[position : match.start()]))
        position = match.end()
        bare, tag, arg = match.group("bare"), (match.group("tag") or "").lower(), match.group("arg")
        if bare is not None and safe_url(bare) and "url" not in open_tags:
            out.append(f"{_link(bare)}{escape(bare)}</a>")
        elif bare is None and match.group("close") and open_tags and open_tags[-1] == tag:
            open_tags.pop()
            out.append("</a>" if tag == "url" else f"</{_HTML_TAGS[tag]}>")
        elif bare is None and not match.group("close") and tag == "url" and arg and safe_url(arg):
            if "url" in open_tags:
                out.append(_escaped(match.group(0)))  # no link inside a link
                continue
            open_tags.append("url")
            out.append(_link(arg))
        elif bare is None and not match.group("close") and tag in _HTML_TAGS and arg is None:
            open_tags.append(tag)
            out.append(f"<{_HTML_TAGS[tag]}>")
        else:
            out.append(_escaped(match.group(0)))
    out.append(_escaped(paragraph[position:]))
    for tag in reversed(open_tags):
        out.append("</a>" if tag == "url" else f"</{_HTML_TAGS[tag]}>")
    return "".join(out)


def markup_html(text: str) -> str:
    """The markup as HTML paragraphs, every character of the text escaped."""
    return "\n".join(f"<p>{_paragraph_html(p)}</p>" for p in _paragraphs(text))


def markup_plain(text: str) -> str:
    """The markup as one line of plain text; a link's address follows its text."""
    parts: list[str] = []
    for paragraph in _paragraphs(text):
        out: list[str] = []
        links: list[str] = []
        position = 0
        for match in _TOKEN.finditer(paragraph):
            out.append(paragraph[position : match.start()])
            position = match.end()
            bare, tag, arg = match.group("bare"), (match.group("tag") or "").lower(), match.group("arg")
            if bare is not None:
                out.append(bare)
            elif tag == "url" and not match.group("close") and arg and safe_url(arg):
                links.append(arg)
                out.append("")
            elif tag == "url" and match.group("close") and links:
                out.append(f" ({links.pop()})")
            elif tag in _HTML_TAGS and (arg is None):
                continue
            else:
                out.append(match.group(0))
        out.append(paragraph[position:])
        parts.append(" ".join("".join(out).split()))
    return " ".join(parts)


# What the client makes of a scheduler notice: it copies at most 1023 bytes and escapes them
# into a buffer of 1024 (each byte above 127 as "&#NNN;"), so a longer text is cut short.
MAX_NOTICE_ESCAPED = 1000


def _client_escaped_len(text: str) -> int:
    size = 0
    for byte in text.encode("utf-8"):
        if byte == ord("<"):
            size += 4
        elif byte == ord("&"):
            size += 5
        elif byte > 127:
            size += len(f"&#{byte};")
        else:
            size += 1
    return size


def notice_text(title: str, body: str, link: str) -> str:
    """A news item as one scheduler-reply notice: its title, its text and where to read it
    all, the text shortened so that the client keeps the whole notice."""
    tail = f" {link}"
    head = " ".join(title.split())
    plain = markup_plain(body)
    text = f"{head}: {plain}" if plain else head
    if _client_escaped_len(text + tail) <= MAX_NOTICE_ESCAPED:
        return text + tail
    words = text.split(" ")
    while words and _client_escaped_len(" ".join(words) + " ..." + tail) > MAX_NOTICE_ESCAPED:
        words.pop()
    return " ".join(words) + " ..." + tail
