"""Hypothesis strategies that build messages in their JSON form from the field declarations."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from hypothesis import strategies as st

from apps.core.domain.resources import ProcType
from apps.protocol import (
    Coproc,
    CoprocUsage,
    FileInfoDesc,
    FileRef,
    GlobalPrefs,
    ReportedResult,
    SchedulerReply,
    SchedulerRequest,
    TrickleDown,
    TrickleUp,
)
from apps.protocol.schema import Kind, spec_of

XML_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff")
GPU_TYPES = [p for p in ProcType if p is not ProcType.CPU]
RAW_BLOCKS = [
    "",
    "<max_ncpus_pct>50</max_ncpus_pct>",
    '\n   <work_buf_min_days>0.5</work_buf_min_days>\n   <venue name="home"><x/></venue>\n',
    "<disk_max_used_gb>12.5</disk_max_used_gb><mod_time>1700000000</mod_time>text &amp; more",
]
TRICKLE_BODIES = [
    "",
    "<variety>progress</variety>",
    "<variety>cp</variety>\n<cpu>12.5</cpu>",
    "plain &lt;text&gt;",
]


def text(max_size: int = 16, *, min_size: int = 0) -> st.SearchStrategy[str]:
    return (
        st.text(XML_CHARS, min_size=min_size, max_size=max_size)
        .map(str.strip)
        .filter(lambda s: len(s) >= min_size)
    )


def safe_name() -> st.SearchStrategy[str]:
    return st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,20}", fullmatch=True).filter(lambda s: ".." not in s)


def multiline_text() -> st.SearchStrategy[str]:
    chars = st.one_of(XML_CHARS, st.sampled_from("\n\t<>&]"))
    return st.text(chars, max_size=40).map(lambda s: s.strip("\n"))


def fixed(lo: float, hi: float, fmt: str) -> st.SearchStrategy[float]:
    """Floats that survive printf with ``fmt`` (6 decimals unless fmt says otherwise)."""
    places = int(fmt[1]) if fmt else 6
    scale = 10**places
    hi = min(hi, 1e15)
    if hi > 1e9 or places == 0:
        return st.integers(math.ceil(lo), math.floor(hi)).map(float)
    return st.integers(math.ceil(lo * scale), math.floor(hi * scale)).map(lambda n: n / scale)


def server_float(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(max(lo, -1e300), min(hi, 1e300), allow_nan=False, allow_infinity=False)


def _scalar(spec: Any, client: bool) -> st.SearchStrategy[Any]:
    if spec.kind is Kind.STR:
        return text(min_size=1 if spec.required else 0)
    if spec.kind is Kind.BOOL:
        return st.booleans()
    if spec.kind is Kind.INT:
        return st.integers(int(max(spec.lo, -(2**40))), int(min(spec.hi, 2**40)))
    return fixed(spec.lo, spec.hi, spec.fmt) if client else server_float(spec.lo, spec.hi)


def message_dict(cls: Any, *, client: bool, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON-form message of ``cls``: every declared field, with sane random values."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields(cls):
        spec = spec_of(f)
        override = OVERRIDES.get((cls, f.name))
        if override is not None:
            value = override()
        elif spec is None or spec.kind is Kind.CUSTOM:
            continue
        elif spec.kind is Kind.NODE:
            value = message_dict(spec.node, client=client, depth=depth + 1)
        elif spec.kind is Kind.NODES:
            value = st.lists(
                message_dict(spec.node, client=client, depth=depth + 1), max_size=2 if depth else 3
            )
        elif spec.kind is Kind.STRS:
            value = st.lists(text(min_size=1), max_size=3)
        else:
            value = _scalar(spec, client)
        if f.default is None:
            value = st.one_of(st.none(), value)
        parts[f.name] = value
    return st.fixed_dictionaries(parts)


def _pairs(tags: list[str]) -> st.SearchStrategy[list[list[str]]]:
    return st.lists(st.tuples(st.sampled_from(tags), text()).map(list), max_size=3)


def _coproc_properties() -> st.SearchStrategy[list[list[str]]]:
    # The renderer writes have_* first, as the client does.
    return st.tuples(
        _pairs(["have_cuda", "have_opencl"]), _pairs(["cudaVersion", "drvVersion", "major"])
    ).map(lambda t: t[0] + t[1])


OVERRIDES: dict[tuple[type, str], Any] = {
    (SchedulerRequest, "working_global_prefs"): lambda: st.builds(
        lambda r: {"raw": r}, st.sampled_from(RAW_BLOCKS)
    ),
    (SchedulerRequest, "global_prefs"): lambda: st.builds(lambda r: {"raw": r}, st.sampled_from(RAW_BLOCKS)),
    (SchedulerRequest, "coprocs"): lambda: st.lists(message_dict(Coproc, client=True, depth=1), max_size=2),
    (Coproc, "type"): lambda: st.sampled_from([p.value for p in GPU_TYPES]),
    (Coproc, "properties"): _coproc_properties,
    (Coproc, "opencl"): lambda: _pairs(["name", "vendor", "opencl_device_version"]),
    (CoprocUsage, "type"): lambda: st.sampled_from([p.value for p in GPU_TYPES]),
    (ReportedResult, "core_client_version"): lambda: text(),
    (ReportedResult, "stderr_out"): multiline_text,
    (TrickleUp, "body"): lambda: st.sampled_from(TRICKLE_BODIES),
    (GlobalPrefs, "raw"): lambda: st.sampled_from(RAW_BLOCKS),
    (SchedulerReply, "messages"): lambda: st.lists(
        st.fixed_dictionaries({"text": text(), "priority": st.sampled_from(["low", "notice"])}), max_size=2
    ),
    (SchedulerReply, "project_preferences"): lambda: st.sampled_from(RAW_BLOCKS),
    (SchedulerReply, "global_preferences"): lambda: st.sampled_from(RAW_BLOCKS),
    (SchedulerReply, "gui_urls"): lambda: st.sampled_from(RAW_BLOCKS),
    (SchedulerReply, "rss_feeds"): lambda: st.sampled_from(RAW_BLOCKS),
    (SchedulerReply, "no_rsc_apps"): lambda: st.lists(
        st.sampled_from([p.value for p in ProcType]), max_size=2
    ),
    (FileInfoDesc, "name"): safe_name,
    (FileInfoDesc, "download_urls"): lambda: st.lists(text(min_size=1), max_size=2),
    (FileInfoDesc, "upload_urls"): lambda: st.lists(text(min_size=1), max_size=2),
    (FileInfoDesc, "max_nbytes"): lambda: server_float(1.0, 1e15),
    (FileRef, "file_name"): safe_name,
    (TrickleDown, "body"): lambda: st.sampled_from(TRICKLE_BODIES),
}
