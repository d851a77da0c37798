"""The XML readers apps.protocol.schema writes out per class (with ``exec``) read exactly what
a plain loop over the same declarations reads: the same message or the same error."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from apps.protocol import ProtocolError, ReportedResult, SchedulerRequest
from apps.protocol.schema import (
    _ABSENT,
    _LIST,
    _NODE,
    _SCALAR,
    _XML_HOOKS,
    Kind,
    _scalar_from_text,
    _strings_from_xml,
    _xml_plan,
    from_xml,
)
from apps.protocol.xmlsafe import leaf_text


def plain_from_xml(cls: Any, element: etree._Element, where: str) -> Any:
    """``from_xml`` as a loop over the declarations, every scalar through the slow path."""
    children = list(element.iterchildren(etree.Element))
    last = {c.tag: c for c in children}
    kw: dict[str, Any] = {}
    for name, spec, tag, shape, _reader in _xml_plan(cls):
        path = f"{where}/{tag}"
        if shape == _SCALAR:
            e = last.get(tag)
            if e is not None:
                text = (e.text or "") if not len(e) else leaf_text(e)
                value = _scalar_from_text(spec, text, path)
                if value is not _ABSENT:
                    kw[name] = value
        elif shape == _NODE:
            e = last.get(tag)
            if e is not None:
                kw[name] = plain_from_xml(spec.node, e, path)
        else:
            assert shape == _LIST
            if spec.wrapper:
                wrapper = last.get(spec.wrapper)
                if wrapper is None:
                    if spec.required:
                        raise ProtocolError(f"{path}: required")
                    items = None
                else:
                    items = list(wrapper.iterchildren(tag))
            else:
                items = [c for c in children if c.tag == tag]
            if items is not None:
                if spec.kind is Kind.STRS:
                    kw[name] = _strings_from_xml(spec, items)
                else:
                    kw[name] = tuple(plain_from_xml(spec.node, c, path) for c in items)
        if spec.required and not kw.get(name):
            raise ProtocolError(f"{path}: required")
    hook = _XML_HOOKS.get(cls)
    if hook is not None:
        kw.update(hook(element, where))
    return cls(**kw)


TEXTS = st.sampled_from(
    ["", " ", "0", " 12 ", "-3", "1e400", "nan", "0.5", "2147483648", "abc", "true", "0x1", "1.5e3", "é"]
)


@st.composite
def element_for(draw: st.DrawFn, cls: Any, tag: str, depth: int = 0) -> etree._Element:
    """An element of ``cls``'s tags (some repeated, some missing, one unknown), filled with
    texts that read, clamp or fail."""
    root = etree.Element(tag)
    plan = _xml_plan(cls)
    for _name, spec, child_tag, shape, _reader in draw(st.lists(st.sampled_from(plan), max_size=12)):
        if shape == _SCALAR:
            etree.SubElement(root, child_tag).text = draw(TEXTS)
        elif depth < 2 and spec.node is not None:
            parent = etree.SubElement(root, spec.wrapper) if shape == _LIST and spec.wrapper else root
            parent.append(draw(element_for(spec.node, child_tag, depth + 1)))
        elif shape == _LIST:
            parent = etree.SubElement(root, spec.wrapper) if spec.wrapper else root
            etree.SubElement(parent, child_tag).text = draw(TEXTS)
    if draw(st.booleans()):
        etree.SubElement(root, "not_a_field").text = "x"
    return root


def _outcome(read: Any, cls: Any, element: etree._Element) -> Any:
    try:
        return ("message", read(cls, element, "req"))
    except ProtocolError as exc:
        return ("error", str(exc))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_reader_equals_the_plain_loop_for_reported_results(data: st.DataObject) -> None:
    element = data.draw(element_for(ReportedResult, "result"))
    assert _outcome(from_xml, ReportedResult, element) == _outcome(plain_from_xml, ReportedResult, element)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_reader_equals_the_plain_loop_for_requests(data: st.DataObject) -> None:
    element = data.draw(element_for(SchedulerRequest, "scheduler_request"))
    assert _outcome(from_xml, SchedulerRequest, element) == _outcome(
        plain_from_xml, SchedulerRequest, element
    )
