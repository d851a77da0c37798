"""Shared helpers for the protocol tests."""

from __future__ import annotations

import pathlib

from lxml import etree

DATA = pathlib.Path(__file__).parent / "data"
REQUEST_FILES = sorted(p.name for p in DATA.glob("request_*.xml"))
MAX = 1 << 20


def load(name: str) -> bytes:
    return (DATA / name).read_bytes()


def c14n(body: bytes, *, ignore_blank: bool = False) -> bytes:
    """Canonical XML; with ignore_blank, whitespace-only text between elements is dropped."""
    parser = etree.XMLParser(remove_blank_text=ignore_blank, resolve_entities=False, no_network=True)
    return etree.tostring(etree.fromstring(body, parser), method="c14n")
