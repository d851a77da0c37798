"""BOINC's project preferences as the web edits them: the body of ``<project_preferences>``
with its venues (html/inc/prefs_project.inc).

One set holds the resource share, the processor types not to use (``no_cpu``, ``no_cuda``,
``no_ati``, ``no_intel_gpu``, ``no_apple_gpu``), ``allow_beta_work`` and a
``<project_specific>`` block: the applications chosen (``<apps_selected><app_id>N</app_id>
…</apps_selected>``), ``allow_non_preferred_apps`` and the settings the project's apps
declare. The body holds the primary set and optionally one ``<venue name="home|school|work">``
block each with a complete set of its own. The client takes ``resource_share`` (and the
``no_`` flags) from the set of its host's venue, else from the primary set; the scheduler
reads the same set for the processor types and the app selection.

``parse_project_prefs`` reads what BOINC's pages or an older page stored: known tags are
read, anything else is ignored, and a number that is no number leaves the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from apps.core.domain.resources import ProcType
from apps.protocol.errors import ProtocolError
from apps.protocol.global_prefs import VENUES, venues_with
from apps.protocol.numbers import format_float, parse_bool, parse_float
from apps.protocol.xmlsafe import child_elements, leaf_text, parse_fragment
from apps.protocol.xmlwrite import Block, new_document, serialize

_ROOT = "project_preferences"
# BOINC's web form accepts 0 to 9999999 and starts at 100 (prefs_project.inc).
RESOURCE_SHARE_DEFAULT = 100.0
RESOURCE_SHARE_MAX = 9_999_999.0
# The no_<type> flag of each GPU type, in BOINC's order.
GPU_PREF_TAGS: dict[ProcType, str] = {
    ProcType.NVIDIA: "no_cuda",
    ProcType.ATI: "no_ati",
    ProcType.INTEL_GPU: "no_intel_gpu",
    ProcType.APPLE_GPU: "no_apple_gpu",
}
# Tags inside <project_specific> that are not an app's declared setting.
RESERVED_SPECIFIC_TAGS = frozenset({"apps_selected", "app_id", "allow_non_preferred_apps"})


@dataclass(frozen=True, slots=True)
class ProjectPrefs:
    """One set of project preferences, with BOINC's defaults."""

    resource_share: float = RESOURCE_SHARE_DEFAULT
    no_cpu: bool = False
    no_cuda: bool = False
    no_ati: bool = False
    no_intel_gpu: bool = False
    no_apple_gpu: bool = False
    allow_beta_work: bool = False
    # Empty: every app (no selection made).
    apps_selected: tuple[int, ...] = ()
    allow_non_preferred_apps: bool = False
    # The apps' declared settings as (name, value), in the order they were written.
    specific: tuple[tuple[str, str], ...] = ()

    def refuses(self, proc_type: ProcType) -> bool:
        """Whether this set says not to use ``proc_type``."""
        if proc_type is ProcType.CPU:
            return self.no_cpu
        return bool(getattr(self, GPU_PREF_TAGS[proc_type]))

    @property
    def no_gpus(self) -> bool:
        """Every GPU type refused."""
        return all(getattr(self, tag) for tag in GPU_PREF_TAGS.values())


@dataclass(frozen=True, slots=True)
class ProjectPrefsDoc:
    """The whole body: the primary set and the venues' own."""

    primary: ProjectPrefs = field(default_factory=ProjectPrefs)
    venues: tuple[tuple[str, ProjectPrefs], ...] = ()

    def venue(self, name: str) -> ProjectPrefs | None:
        return dict(self.venues).get(name)

    def with_venue(self, name: str, prefs: ProjectPrefs | None) -> ProjectPrefsDoc:
        """The document with venue ``name`` set to ``prefs`` (None removes it)."""
        return replace(self, venues=venues_with(self.venues, name, prefs))

    def for_venue(self, name: str) -> ProjectPrefs:
        """The set a host in venue ``name`` runs by (the client's and the scheduler's rule)."""
        return (self.venue(name) if name else None) or self.primary


def _number(element: Any, where: str) -> float | None:
    try:
        return parse_float(leaf_text(element), where)
    except ProtocolError:
        return None


def _flag(element: Any, where: str) -> bool:
    try:
        return parse_bool(leaf_text(element), where)
    except ProtocolError:
        return False


def _read_specific(element: Any, values: dict[str, Any]) -> None:
    selected: list[int] = list(values.get("apps_selected", ()))
    specific: list[tuple[str, str]] = []
    for child in child_elements(element):
        tag = child.tag
        if tag == "apps_selected":
            for app in child_elements(child):
                number = _number(app, "apps_selected/app_id") if app.tag == "app_id" else None
                if number is not None and number.is_integer() and number > 0:
                    selected.append(int(number))
        elif tag == "allow_non_preferred_apps":
            values["allow_non_preferred_apps"] = _flag(child, tag)
        elif isinstance(tag, str) and tag not in RESERVED_SPECIFIC_TAGS and not len(child):
            specific.append((tag, leaf_text(child).strip()))
    values["apps_selected"] = tuple(dict.fromkeys(selected))
    values["specific"] = tuple(specific)


def _read_set(element: Any, where: str) -> ProjectPrefs:
    values: dict[str, Any] = {}
    for child in child_elements(element):
        tag = child.tag
        if tag == "resource_share":
            share = _number(child, f"{where}/resource_share")
            if share is not None and 0 <= share <= RESOURCE_SHARE_MAX:
                values["resource_share"] = share
        elif tag in ("no_cpu", "allow_beta_work", *GPU_PREF_TAGS.values()):
            values[tag] = _flag(child, f"{where}/{tag}")
        elif tag == "no_gpus":  # BOINC's older form: every GPU type
            if _flag(child, f"{where}/no_gpus"):
                values.update(dict.fromkeys(GPU_PREF_TAGS.values(), True))
        elif tag == "project_specific":
            _read_specific(child, values)
    return ProjectPrefs(**values)


def parse_project_prefs(body: str) -> ProjectPrefsDoc:
    """The body of ``<project_preferences>`` (or the whole element, as BOINC stores it)
    read into its sets. Raises ProtocolError only if the body is not XML."""
    fragment = parse_fragment(body)
    root = fragment
    children = list(child_elements(fragment))
    if len(children) == 1 and children[0].tag == _ROOT:
        root = children[0]
    venues: dict[str, ProjectPrefs] = {}
    for child in child_elements(root):
        if child.tag == "venue":
            name = (child.get("name") or "").strip()
            if name in VENUES:
                venues[name] = _read_set(child, f"{_ROOT}/venue[{name}]")
    return ProjectPrefsDoc(
        primary=_read_set(root, _ROOT),
        venues=tuple((v, venues[v]) for v in VENUES if v in venues),
    )


def _write_set(block: Block, prefs: ProjectPrefs, indent: str) -> None:
    block.leaf("resource_share", format_float(prefs.resource_share, client=False), indent)
    for tag in ("no_cpu", *GPU_PREF_TAGS.values()):
        if getattr(prefs, tag):
            block.leaf(tag, "1", indent)
    block.leaf("allow_beta_work", "1" if prefs.allow_beta_work else "0", indent)
    if not (prefs.apps_selected or prefs.allow_non_preferred_apps or prefs.specific):
        return
    with block.block("project_specific", indent) as specific:
        inner = indent + "    "
        if prefs.apps_selected:
            with specific.block("apps_selected", inner) as apps:
                for app_id in prefs.apps_selected:
                    apps.leaf("app_id", str(app_id), inner + "    ")
        if prefs.allow_non_preferred_apps:
            specific.leaf("allow_non_preferred_apps", "1", inner)
        for name, value in prefs.specific:
            specific.leaf(name, value, inner)


def render_project_prefs(doc: ProjectPrefsDoc) -> str:
    """The body of ``<project_preferences>`` (what an account stores and the scheduler
    reply carries), in prefs_project.inc's order."""
    document = new_document(_ROOT)
    _write_set(document, doc.primary, "")
    for name, prefs in doc.venues:
        with document.block("venue", attrib={"name": name}) as venue:
            _write_set(venue, prefs, "    ")
    text = serialize(document).decode("utf-8")
    head, tail = f"<{_ROOT}>", f"</{_ROOT}>\n"
    return text[len(head) : -len(tail)]
