"""BOINC's global (computing) preferences as the web edits them: the body of
``<global_preferences>`` with its venues (html/inc/prefs.inc, lib/prefs.cpp).

The body holds ``<mod_time>``, the primary preferences, and optionally one
``<venue name="home|school|work">`` block each, with a complete set of its own. The client
uses the venue its host is in (the scheduler reply's ``<host_venue>``), else the primary
set, and adopts the whole body when its ``mod_time`` is newer than its copy's.

``parse_global_prefs`` reads what a client sent or an older page stored as BOINC's PHP
does: known tags are read, anything else is ignored, and a value that is no number leaves
the default. ``render_global_prefs`` writes the body in prefs.inc's order, booleans as
0/1, so a client (and BOINC's own pages) reads it back to the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from apps.protocol.errors import ProtocolError
from apps.protocol.numbers import format_float, parse_bool, parse_float
from apps.protocol.xmlsafe import child_elements, leaf_text, parse_fragment
from apps.protocol.xmlwrite import new_document, serialize

VENUES = ("home", "school", "work")
_ROOT = "global_preferences"


@dataclass(frozen=True, slots=True)
class ComputingPrefs:
    """One set of computing preferences, with BOINC's web defaults (prefs.inc).

    Numbers are in the client's units (percentages, minutes, seconds, days, GB, bytes per
    second, MB); 0 means "no limit" for the optional ones, and equal start and end hours
    mean "any time". The ``niu_`` values of 0 mean "as when in use" to the client.
    """

    # When the computer is in use.
    idle_time_to_run: float = 3.0
    run_if_user_active: bool = True
    run_gpu_if_user_active: bool = False
    max_ncpus_pct: float = 100.0
    cpu_usage_limit: float = 100.0
    suspend_cpu_usage: float = 25.0
    ram_max_used_busy_pct: float = 50.0
    # When it is not in use.
    niu_max_ncpus_pct: float = 0.0
    niu_cpu_usage_limit: float = 0.0
    niu_suspend_cpu_usage: float = 0.0
    ram_max_used_idle_pct: float = 90.0
    suspend_if_no_recent_input: float = 0.0
    # General.
    run_on_batteries: bool = False
    cpu_scheduling_period_minutes: float = 60.0
    disk_interval: float = 60.0
    leave_apps_in_memory: bool = False
    work_buf_min_days: float = 0.1
    work_buf_additional_days: float = 0.5
    start_hour: float = 0.0
    end_hour: float = 0.0
    # Disk and memory.
    disk_max_used_gb: float = 0.0
    disk_min_free_gb: float = 1.0
    disk_max_used_pct: float = 90.0
    vm_max_used_pct: float = 75.0
    # Network.
    max_bytes_sec_down: float = 0.0
    max_bytes_sec_up: float = 0.0
    daily_xfer_limit_mb: float = 0.0
    daily_xfer_period_days: float = 0.0
    net_start_hour: float = 0.0
    net_end_hour: float = 0.0
    dont_verify_images: bool = False
    confirm_before_connecting: bool = False
    hangup_if_dialed: bool = False


# The tags in the order prefs.inc writes them (the dataclass order).
PREF_TAGS: tuple[str, ...] = tuple(f.name for f in fields(ComputingPrefs))
_BOOL_TAGS = frozenset(f.name for f in fields(ComputingPrefs) if f.type in ("bool", bool))


@dataclass(frozen=True, slots=True)
class GlobalPrefsDoc:
    """The whole body: when it was set, the primary preferences and the venues' own."""

    mod_time: float = 0.0
    primary: ComputingPrefs = field(default_factory=ComputingPrefs)
    venues: tuple[tuple[str, ComputingPrefs], ...] = ()

    def venue(self, name: str) -> ComputingPrefs | None:
        return dict(self.venues).get(name)

    def with_venue(self, name: str, prefs: ComputingPrefs | None) -> GlobalPrefsDoc:
        """The document with venue ``name`` set to ``prefs`` (None removes it), venues kept
        in BOINC's order."""
        return replace(self, venues=venues_with(self.venues, name, prefs))

    def for_venue(self, name: str) -> ComputingPrefs:
        """What a host in venue ``name`` runs by, as the client picks it."""
        return self.venue(name) or self.primary


def venues_with(venues: tuple[tuple[str, Any], ...], name: str, prefs: Any) -> tuple[tuple[str, Any], ...]:
    """``venues`` with venue ``name`` set to ``prefs`` (None removes it), in BOINC's order."""
    if name not in VENUES:
        raise ProtocolError(f"unknown venue {name[:20]!r}: use one of {', '.join(VENUES)}")
    current = dict(venues)
    if prefs is None:
        current.pop(name, None)
    else:
        current[name] = prefs
    return tuple((v, current[v]) for v in VENUES if v in current)


def _read_set(element: Any, where: str) -> ComputingPrefs:
    values: dict[str, Any] = {}
    for child in child_elements(element):
        tag = child.tag
        if tag not in PREF_TAGS:
            continue
        try:
            if tag in _BOOL_TAGS:
                values[tag] = parse_bool(leaf_text(child), f"{where}/{tag}")
            else:
                values[tag] = parse_float(leaf_text(child), f"{where}/{tag}")
        except ProtocolError:
            continue  # as BOINC's parse_double: a value that is no number leaves the default
    return ComputingPrefs(**values)


def parse_global_prefs(body: str) -> GlobalPrefsDoc:
    """The body of ``<global_preferences>`` (a stored account's, or a client's) read into
    its sets. Raises ProtocolError only if the body is not XML."""
    fragment = parse_fragment(body)
    root = fragment
    # A whole document pasted with its root element is read the same.
    children = list(child_elements(fragment))
    if len(children) == 1 and children[0].tag == _ROOT:
        root = children[0]
    mod_time = 0.0
    venues: dict[str, ComputingPrefs] = {}
    for child in child_elements(root):
        if child.tag == "mod_time":
            try:
                mod_time = max(parse_float(leaf_text(child), "global_preferences/mod_time"), 0.0)
            except ProtocolError:
                mod_time = 0.0
        elif child.tag == "venue":
            # prefs.inc takes a venue without a name as "home".
            name = (child.get("name") or "home").strip()
            if name in VENUES:
                venues[name] = _read_set(child, f"global_preferences/venue[{name}]")
    return GlobalPrefsDoc(
        mod_time=mod_time,
        primary=_read_set(root, "global_preferences"),
        venues=tuple((v, venues[v]) for v in VENUES if v in venues),
    )


def _value_text(value: bool | float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return format_float(value, client=False)


def render_global_prefs(doc: GlobalPrefsDoc) -> str:
    """The body of ``<global_preferences>`` (what an account stores and the scheduler
    reply carries): ``mod_time`` as whole seconds, then each set in prefs.inc's order."""
    document = new_document(_ROOT)
    document.leaf("mod_time", str(int(doc.mod_time)))
    for tag in PREF_TAGS:
        document.leaf(tag, _value_text(getattr(doc.primary, tag)))
    for name, prefs in doc.venues:
        with document.block("venue", attrib={"name": name}) as venue:
            for tag in PREF_TAGS:
                venue.leaf(tag, _value_text(getattr(prefs, tag)), "    ")
    text = serialize(document).decode("utf-8")
    head, tail = f"<{_ROOT}>", f"</{_ROOT}>\n"
    return text[len(head) : -len(tail)]
