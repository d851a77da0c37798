"""The string writer produces exactly what lxml's Element/SubElement serialization does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from apps.protocol import ProtocolError
from apps.protocol.xmlsafe import parse_fragment
from apps.protocol.xmlwrite import new_document, serialize


class LxmlBlock:
    """The reference: the same operations on an lxml tree, whitespace set as text/tail."""

    def __init__(self, el, close_indent=""):
        self.el, self.close_indent, self.last = el, close_indent, None

    def _attach(self, child, indent):
        if self.last is None:
            self.el.text = "\n" + indent
        else:
            self.last.tail = "\n" + indent
        self.last = child
        return child

    def leaf(self, tag, text, indent="", attrib=None):
        child = etree.SubElement(self.el, tag, attrib or {})
        child.text = text
        self._attach(child, indent)

    def flag(self, tag, indent=""):
        self._attach(etree.SubElement(self.el, tag), indent)

    def block(self, tag, indent=""):
        return LxmlBlock(self._attach(etree.SubElement(self.el, tag), indent), indent)

    def raw(self, tag, content, indent=""):
        fragment = parse_fragment(content)
        child = self._attach(etree.SubElement(self.el, tag), indent)
        child.text = fragment.text if fragment.text is not None or len(fragment) else ""
        for node in list(fragment):
            child.append(node)

    def inline(self, content, before="\n"):
        fragment = parse_fragment(content)
        self.text_after_last(before + (fragment.text or ""))
        for node in list(fragment):
            self.el.append(node)
            self.last = node

    def text_after_last(self, text):
        if self.last is None:
            self.el.text = (self.el.text or "") + text
        else:
            self.last.tail = (self.last.tail or "") + text

    def close(self):
        if self.last is None:
            if self.el.text is None:
                self.el.text = "\n" + self.close_indent
        elif self.last.tail is None:
            self.last.tail = "\n" + self.close_indent


# Characters XML can carry, weighted towards the ones that need escaping.
xml_text = st.text(
    alphabet=st.one_of(
        st.sampled_from("&<>\"'\r\n\t ]]>é€😀"),
        st.characters(
            blacklist_categories=("Cs",), blacklist_characters="\x00\ufffe\uffff", max_codepoint=0x1FFFF
        ),
    ).filter(lambda c: c >= " " or c in "\t\n\r"),
    max_size=12,
)
tags = st.sampled_from(["a", "name", "file_info", "x_y", "b2"])
indents = st.sampled_from(["", "  ", "    ", "\t"])
fragments = st.sampled_from(
    ["", "x", "<a>1</a>", "t<a>1</a>tail", "<a/><b>2</b>", "<a>&amp;</a>&lt;", ' <p q="1">z</p> ']
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("leaf"), tags, xml_text, indents, st.booleans(), xml_text),
        st.tuples(st.just("flag"), tags, indents),
        st.tuples(st.just("raw"), tags, fragments, indents),
        st.tuples(st.just("inline"), fragments),
        st.tuples(st.just("text"), xml_text),
        st.tuples(st.just("open"), tags, indents),
        st.tuples(st.just("close")),
    ),
    max_size=25,
)


def run(operations, new, ours):
    stack = [new]
    for op, *args in operations:
        top = stack[-1]
        if op == "leaf":
            tag, text, indent, with_attr, attr = args
            top.leaf(tag, text, indent, {"priority": attr} if with_attr else None)
        elif op == "flag":
            top.flag(*args)
        elif op == "raw":
            top.raw(*args)
        elif op == "inline":
            top.inline(*args)
        elif op == "text":
            top.text_after_last(*args)
        elif op == "open":
            stack.append(top.block(*args))
        elif len(stack) > 1:
            stack.pop().close()
    while len(stack) > 1:
        stack.pop().close()
    if ours:
        return serialize(new)
    new.close()
    new.el.tail = "\n"
    return etree.tostring(new.el, encoding="utf-8")


@settings(max_examples=400, deadline=None)
@given(operations)
def test_documents_are_byte_identical_to_lxml(ops):
    assert run(ops, new_document("root"), ours=True) == run(ops, LxmlBlock(etree.Element("root")), ours=False)


@pytest.mark.parametrize("bad", ["\x00", "a\x01b", "\x1f", "\ufffe", "\uffff", "\ud800"])
def test_text_xml_cannot_carry_is_refused(bad):
    doc = new_document("root")
    with pytest.raises(ProtocolError, match="cannot be written as XML"):
        doc.leaf("name", bad)


def test_a_bad_tag_name_is_refused():
    with pytest.raises(ProtocolError):
        new_document("root").leaf("1bad tag", "x")


def test_an_attribute_value_is_escaped_as_lxml_does():
    doc = new_document("root")
    doc.leaf("message", "a&b", "", {"priority": 'lo"w\n<'})
    assert serialize(doc) == b'<root>\n<message priority="lo&quot;w&#10;&lt;">a&amp;b</message>\n</root>\n'
