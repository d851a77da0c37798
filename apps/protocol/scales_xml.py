"""The per-app-version scale export of cross-project normalization, XML and JSON.

CreditNew's design has each project export, for each app version, the app name, platform name,
recent average granted credit, plan class and scale factor (docs/credit.md). Each row also
says whether the version uses a GPU and which project it belongs to, so a collector can
keep only apps that have both CPU and GPU versions. BOINC never defined a format, so the
layout follows BOINC's other exports (server_status.php?xml=1)::

    <app_version_scales>
        <project>http://host/slug/</project>
        <update_time>1700000000</update_time>
        <app_version>
            <project>http://host/slug/</project>
            <app_name>sim</app_name>
            <platform>x86_64-pc-linux-gnu</platform>
            <plan_class>cuda</plan_class>
            <version_num>712</version_num>
            <recent_avg_credit>1234.5</recent_avg_credit>
            <scale_factor>0.12</scale_factor>
            <is_gpu>1</is_gpu>
        </app_version>
    </app_version_scales>

The JSON face has the same names (``app_versions`` holds the rows). Both readers accept
what the writers write, ignore unknown names (another implementation may export more) and
refuse bad numbers with ``ProtocolError``. A row without its own project takes the
document's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from apps.protocol import numbers as num
from apps.protocol.errors import ProtocolError
from apps.protocol.xmlsafe import child_elements, leaf_text, parse_document
from apps.protocol.xmlwrite import new_document, serialize

ROOT = "app_version_scales"
ROW = "app_version"
MAX_EXPORT_BYTES = 8 * 1024 * 1024
MAX_TEXT = 256
# Sane bounds: credit per day of a whole project, and a PFC scale (GPU apps are ~0.01-1).
MAX_RECENT_CREDIT = 1e13
MAX_SCALE = 1e6
_IN = "    "


@dataclass(frozen=True, slots=True)
class AppVersionScale:
    """One exported app version; ``scale_factor`` 0 means the project has not normalized it."""

    project: str
    app_name: str
    platform: str
    plan_class: str
    version_num: int
    recent_avg_credit: float
    scale_factor: float
    is_gpu: bool


@dataclass(frozen=True, slots=True)
class ScalesExport:
    """A whole export: the exporting project (its master URL), when, and its rows."""

    project: str
    update_time: int
    rows: tuple[AppVersionScale, ...]


def _number(value: float) -> str:
    # repr is the shortest text that reads back to the same float.
    return repr(float(value))


def render_scales_xml(export: ScalesExport) -> bytes:
    doc = new_document(ROOT)
    doc.leaf("project", export.project, _IN)
    doc.leaf("update_time", str(export.update_time), _IN)
    for row in export.rows:
        with doc.block(ROW, _IN) as item:
            ind = _IN * 2
            item.leaf("project", row.project, ind)
            item.leaf("app_name", row.app_name, ind)
            item.leaf("platform", row.platform, ind)
            item.leaf("plan_class", row.plan_class, ind)
            item.leaf("version_num", str(row.version_num), ind)
            item.leaf("recent_avg_credit", _number(row.recent_avg_credit), ind)
            item.leaf("scale_factor", _number(row.scale_factor), ind)
            item.leaf("is_gpu", "1" if row.is_gpu else "0", ind)
    return serialize(doc)


def scales_to_json(export: ScalesExport) -> dict[str, object]:
    return {
        "project": export.project,
        "update_time": export.update_time,
        "app_versions": [
            {
                "project": r.project,
                "app_name": r.app_name,
                "platform": r.platform,
                "plan_class": r.plan_class,
                "version_num": r.version_num,
                "recent_avg_credit": r.recent_avg_credit,
                "scale_factor": r.scale_factor,
                "is_gpu": r.is_gpu,
            }
            for r in export.rows
        ],
    }


# --- reading ---------------------------------------------------------------------------------


def _text(value: str, where: str) -> str:
    value = value.strip()
    if len(value) > MAX_TEXT:
        raise ProtocolError(f"{where}: longer than {MAX_TEXT} characters")
    return value


def _row(fields: Mapping[str, str], default_project: str, where: str) -> AppVersionScale:
    """A row from its fields as text (both faces end up here, so both check the same)."""
    if not fields.get("app_name", "").strip():
        raise ProtocolError(f"{where}: no app_name")
    credit = num.parse_float(fields.get("recent_avg_credit", "0"), f"{where} recent_avg_credit")
    scale = num.parse_float(fields.get("scale_factor", "0"), f"{where} scale_factor")
    return AppVersionScale(
        project=_text(fields.get("project", ""), f"{where} project") or default_project,
        app_name=_text(fields["app_name"], f"{where} app_name"),
        platform=_text(fields.get("platform", ""), f"{where} platform"),
        plan_class=_text(fields.get("plan_class", ""), f"{where} plan_class"),
        version_num=num.check_int(
            num.parse_int(fields.get("version_num", "0"), f"{where} version_num"),
            f"{where} version_num",
            0,
            num.INT32_MAX,
        ),
        recent_avg_credit=num.check_float(credit, f"{where} recent_avg_credit", 0, MAX_RECENT_CREDIT),
        scale_factor=num.check_float(scale, f"{where} scale_factor", 0, MAX_SCALE),
        is_gpu=num.parse_bool(fields.get("is_gpu", "0"), f"{where} is_gpu"),
    )


def parse_scales_xml(body: bytes, *, max_bytes: int = MAX_EXPORT_BYTES) -> ScalesExport:
    root = parse_document(body, root=ROOT, max_bytes=max_bytes)
    project, update_time = "", 0
    raw_rows: list[dict[str, str]] = []
    for child in child_elements(root):
        if child.tag == "project":
            project = _text(leaf_text(child), "project")
        elif child.tag == "update_time":
            update_time = num.parse_int(leaf_text(child), "update_time")
        elif child.tag == ROW:
            raw_rows.append({str(leaf.tag): leaf_text(leaf) for leaf in child_elements(child)})
    rows = tuple(_row(r, project, f"{ROW}[{i}]") for i, r in enumerate(raw_rows))
    return ScalesExport(project=project, update_time=update_time, rows=rows)


def _json_text(value: object, where: str) -> str:
    """JSON scalars as the text the XML face would carry (the shared checks read text)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | str):
        return str(value)
    if value is None:
        return ""
    raise ProtocolError(f"{where}: expected a string, number or boolean")


def parse_scales_json(body: bytes, *, max_bytes: int = MAX_EXPORT_BYTES) -> ScalesExport:
    if len(body) > max_bytes:
        raise ProtocolError(f"body of {len(body)} bytes is over the {max_bytes}-byte limit")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("expected a JSON object")
    project = _text(_json_text(data.get("project", ""), "project"), "project")
    update_time = num.parse_int(_json_text(data.get("update_time", 0), "update_time"), "update_time")
    items = data.get("app_versions", [])
    if not isinstance(items, list):
        raise ProtocolError("app_versions: expected a list")
    rows = []
    for i, item in enumerate(items):
        where = f"app_versions[{i}]"
        if not isinstance(item, dict):
            raise ProtocolError(f"{where}: expected an object")
        fields = {str(k): _json_text(v, f"{where} {k}") for k, v in item.items()}
        rows.append(_row(fields, project, where))
    return ScalesExport(project=project, update_time=update_time, rows=tuple(rows))


def parse_scales(body: bytes, *, max_bytes: int = MAX_EXPORT_BYTES) -> ScalesExport:
    """Either face, told apart by the first character: ``<`` for XML, ``{`` for JSON."""
    head = body.lstrip()[:1]
    if head == b"<":
        return parse_scales_xml(body, max_bytes=max_bytes)
    if head == b"{":
        return parse_scales_json(body, max_bytes=max_bytes)
    raise ProtocolError("neither an XML nor a JSON scale export")
