"""A BOINC project's own XML, as the importer reads it: ``config.xml`` and the documents
BOINC's database keeps (``app_version.xml_doc``, ``workunit.xml_doc``, ``result.xml_doc_in``
and ``xml_doc_out``).

The stored documents are fragments without a root: ``<file_info>`` elements followed by
one ``<app_version>``, ``<workunit>`` or ``<result>``. They are read with the same
hardened parser and field declarations as the scheduler's messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.protocol.errors import ProtocolError
from apps.protocol.numbers import INT32_MAX
from apps.protocol.reply_types import AppVersionDesc, FileInfoDesc, FileRef
from apps.protocol.schema import from_xml, s_bool, s_float, s_int, s_nodes, s_str
from apps.protocol.xmlsafe import child_elements, parse_document

MAX_CONFIG_BYTES = 4 * 1024 * 1024
# app_version.xml_doc is a MEDIUMBLOB (16 MB); the others are BLOBs (64 KB).
MAX_STORED_DOC_BYTES = 16 * 1024 * 1024
_COUNT: dict[str, Any] = {"lo": 0, "hi": INT32_MAX}


@dataclass(frozen=True, slots=True)
class BoincConfig:
    """The ``<config>`` options of a project's config.xml that Cobblestone carries over;
    None where the file does not set them (Cobblestone's defaults then apply)."""

    master_url: str = s_str()
    long_name: str = s_str()
    uldl_dir_fanout: int = s_int(1024, **_COUNT)
    daily_result_quota: int | None = s_int(None, **_COUNT)
    max_wus_to_send: int | None = s_int(None, **_COUNT)
    max_wus_in_progress: int | None = s_int(None, **_COUNT)
    max_wus_in_progress_gpu: int | None = s_int(None, **_COUNT)
    gpu_multiplier: int | None = s_int(None, **_COUNT)
    max_ncpus: int | None = s_int(None, **_COUNT)
    min_core_client_version: int | None = s_int(None, **_COUNT)
    report_grace_period: int | None = s_int(None, **_COUNT)
    grace_period_hours: float | None = s_float(None, hi=1e6)
    delete_delay_hours: float | None = s_float(None, hi=1e6)
    resend_lost_results: bool = s_bool()
    one_result_per_user_per_wu: bool = s_bool()


@dataclass(frozen=True, slots=True)
class StoredJobPart:
    """The ``<workunit>`` or ``<result>`` of a stored document: its file references."""

    file_refs: tuple[FileRef, ...] = s_nodes(FileRef, tag="file_ref")
    command_line: str = s_str()


@dataclass(frozen=True, slots=True)
class StoredDoc:
    """One stored document: its file_infos and the element they belong to."""

    file_infos: tuple[FileInfoDesc, ...] = s_nodes(FileInfoDesc, tag="file_info")
    app_versions: tuple[AppVersionDesc, ...] = s_nodes(AppVersionDesc, tag="app_version")
    workunits: tuple[StoredJobPart, ...] = s_nodes(StoredJobPart, tag="workunit")
    results: tuple[StoredJobPart, ...] = s_nodes(StoredJobPart, tag="result")


def parse_boinc_config(body: bytes) -> BoincConfig:
    """config.xml (``<boinc><config>…</config>…</boinc>``); unknown options are ignored."""
    root = parse_document(body, root="boinc", max_bytes=MAX_CONFIG_BYTES)
    configs = [child for child in child_elements(root) if child.tag == "config"]
    if not configs:
        raise ProtocolError("config.xml has no <config> element")
    config: BoincConfig = from_xml(BoincConfig, configs[-1], "boinc/config")
    return config


def parse_stored_doc(body: bytes | str | None) -> StoredDoc:
    """A document from BOINC's database (empty or NULL gives an empty one)."""
    if not body:
        return StoredDoc()
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    root = parse_document(b"<doc>" + data + b"</doc>", root="doc", max_bytes=MAX_STORED_DOC_BYTES)
    doc: StoredDoc = from_xml(StoredDoc, root, "doc")
    return doc


@dataclass(frozen=True, slots=True)
class ProjectPrefsSwitches:
    """The resource and beta choices inside BOINC's ``<project_preferences>``
    (html/inc/prefs_project.inc writes them there; Cobblestone keeps them as columns)."""

    no_cpu: bool = s_bool()
    no_cuda: bool = s_bool()
    no_ati: bool = s_bool()
    no_intel_gpu: bool = s_bool()
    allow_beta_work: bool = s_bool()

    @property
    def no_gpus(self) -> bool:
        return self.no_cuda and self.no_ati and self.no_intel_gpu

    @property
    def some_gpus_only(self) -> bool:
        """Some GPU types refused and others not: Cobblestone has one switch for all GPUs."""
        return (self.no_cuda or self.no_ati or self.no_intel_gpu) and not self.no_gpus


def parse_project_prefs_switches(body: str) -> ProjectPrefsSwitches:
    """The switches of an account's stored project preferences (all off when empty)."""
    if not body.strip():
        return ProjectPrefsSwitches()
    root = parse_document(body.encode("utf-8"), root="project_preferences", max_bytes=MAX_CONFIG_BYTES)
    switches: ProjectPrefsSwitches = from_xml(ProjectPrefsSwitches, root, "project_preferences")
    return switches
