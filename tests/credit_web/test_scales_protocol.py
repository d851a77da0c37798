"""The app-version scale export's two faces (pure: no database)."""

from __future__ import annotations

import json

import pytest

from apps.protocol.errors import ProtocolError
from apps.protocol.scales_xml import (
    AppVersionScale,
    ScalesExport,
    parse_scales,
    parse_scales_json,
    parse_scales_xml,
    render_scales_xml,
    scales_to_json,
)

EXPORT = ScalesExport(
    project="http://example.org/p/",
    update_time=1_700_000_000,
    rows=(
        AppVersionScale("http://example.org/p/", "sim", "x86_64-pc-linux-gnu", "", 100, 1000.5, 1.0, False),
        AppVersionScale("http://example.org/p/", "sim & co", "windows_x86_64", "cuda", 712, 3e3, 0.1, True),
    ),
)


def test_xml_round_trips():
    assert parse_scales_xml(render_scales_xml(EXPORT)) == EXPORT


def test_json_round_trips():
    assert parse_scales_json(json.dumps(scales_to_json(EXPORT)).encode()) == EXPORT


def test_xml_layout_names_every_field():
    text = render_scales_xml(EXPORT).decode()
    assert text.startswith("<app_version_scales>\n    <project>http://example.org/p/</project>")
    for tag in ("app_name", "platform", "plan_class", "recent_avg_credit", "scale_factor", "is_gpu"):
        assert f"<{tag}>" in text
    assert "<app_name>sim &amp; co</app_name>" in text


def test_parse_scales_tells_the_faces_apart():
    assert parse_scales(b"  " + render_scales_xml(EXPORT)) == EXPORT
    assert parse_scales(json.dumps(scales_to_json(EXPORT)).encode()) == EXPORT
    with pytest.raises(ProtocolError):
        parse_scales(b"app,platform\n")


def test_rows_without_project_take_the_documents_and_unknown_tags_are_ignored():
    body = (
        b"<app_version_scales><project>http://x/</project><extra>1</extra>"
        b"<app_version><app_name>a</app_name><scale_factor>0.5</scale_factor>"
        b"<recent_avg_credit>10</recent_avg_credit><is_gpu/><flops>1e9</flops></app_version>"
        b"</app_version_scales>"
    )
    (row,) = parse_scales_xml(body).rows
    assert (row.project, row.app_name, row.scale_factor, row.is_gpu) == ("http://x/", "a", 0.5, True)


@pytest.mark.parametrize(
    "row",
    [
        {"app_name": "a", "scale_factor": "nan"},
        {"app_name": "a", "scale_factor": -1},
        {"app_name": "a", "recent_avg_credit": 1e20},
        {"app_name": "a", "is_gpu": "maybe"},
        {"app_name": "a", "version_num": [1]},
        {"scale_factor": 1},
    ],
)
def test_bad_rows_are_refused(row):
    with pytest.raises(ProtocolError):
        parse_scales_json(json.dumps({"project": "p", "app_versions": [row]}).encode())


def test_doctype_is_refused():
    with pytest.raises(ProtocolError, match="DOCTYPE"):
        parse_scales_xml(b'<!DOCTYPE x [<!ENTITY e "x">]><app_version_scales/>')


def test_oversized_export_is_refused():
    with pytest.raises(ProtocolError, match="limit"):
        parse_scales(b"{" + b" " * 100 + b"}", max_bytes=50)
