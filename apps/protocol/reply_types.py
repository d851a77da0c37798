"""The scheduler reply as frozen dataclasses (what the 7.20.5 client parses; docs/protocol.md).

Optional values are None and then not written. Booleans are written ``<flag/>`` when
true. Raw XML blocks (preferences, gui_urls, rss_feeds, trickle bodies) are strings of XML
content; they are parsed and embedded as elements when rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from apps.core.domain.resources import ProcType
from apps.protocol.numbers import INT32_MAX, MAX_TIME
from apps.protocol.request_types import CoprocUsage
from apps.protocol.schema import (
    FloatRange,
    IntRange,
    s_bool,
    s_custom,
    s_float,
    s_int,
    s_nodes,
    s_str,
    s_strs,
)

_ID: IntRange = {"lo": 0, "hi": INT32_MAX}
_CREDIT: FloatRange = {"lo": 0.0, "hi": 1e18}
_TIME: FloatRange = {"lo": 0.0, "hi": MAX_TIME}
_DELAY: FloatRange = {"lo": 0.0, "hi": 1e9}

# What BOINC's scheduler reports as its version ("Server version 720").
SCHEDULER_VERSION = 720


class MessagePriority(StrEnum):
    LOW = "low"  # event log only
    NOTICE = "notice"  # also shown to the user as a notice


@dataclass(frozen=True, slots=True)
class ReplyMessage:
    text: str
    priority: MessagePriority = MessagePriority.LOW


@dataclass(frozen=True, slots=True)
class FileRef:
    """``<file_ref>`` of an app version, workunit or result."""

    file_name: str = s_str(required=True)
    open_name: str = s_str()
    main_program: bool = s_bool()
    copy_file: bool = s_bool()
    optional: bool = s_bool()


@dataclass(frozen=True, slots=True)
class AppDesc:
    name: str = s_str(required=True)
    user_friendly_name: str = s_str()
    non_cpu_intensive: bool = s_bool()
    fraction_done_exact: bool = s_bool()


@dataclass(frozen=True, slots=True)
class FileInfoDesc:
    """A ``<file_info>``: a download (app or input file) or an upload (output file).

     ``download_urls`` and ``upload_urls`` are written so the client cannot confuse them
    : a URL goes in ``<url>`` only when the client will classify it right
     (upload iff it contains ``file_upload_handler``), else in ``<download_url>`` /
     ``<upload_url>``. An upload needs ``max_nbytes`` > 0.
    """

    name: str = s_str(required=True)
    download_urls: tuple[str, ...] = s_custom(())
    upload_urls: tuple[str, ...] = s_custom(())
    gzipped_urls: tuple[str, ...] = s_strs(tag="gzipped_url")
    md5_cksum: str | None = s_str(None)
    nbytes: float | None = s_float(None, hi=1e15)
    gzipped_nbytes: float | None = s_float(None, hi=1e15)
    max_nbytes: float | None = s_float(None, hi=1e15)
    executable: bool = s_bool()
    sticky: bool = s_bool()
    sticky_lifetime: float | None = s_float(None, hi=1e10)
    # Locality scheduling: large input files carry <sticky/> and <report_on_rpc/>; clients before 7.0
    # list in each request only the files so marked (7.x list every sticky file).
    report_on_rpc: bool = s_bool()
    no_delete: bool = s_bool()
    generated_locally: bool = s_bool()
    upload_when_present: bool = s_bool()
    gzip_when_done: bool = s_bool()
    file_signature: str | None = s_str(None, fmt="block")
    xml_signature: str | None = s_str(None, fmt="block")

    @property
    def is_upload(self) -> bool:
        return bool(self.upload_urls)


@dataclass(frozen=True, slots=True)
class AppVersionDesc:
    """``<app_version>``; identity is (app_name, platform, version_num, plan_class)."""

    app_name: str = s_str(required=True)
    version_num: int = s_int(0, **_ID)
    platform: str = s_str()
    plan_class: str = s_str()
    avg_ncpus: float | None = s_float(None, hi=1e6)
    max_ncpus: float | None = s_float(None, hi=1e6)
    flops: float | None = s_float(None, hi=1e18)
    api_version: str = s_str()
    cmdline: str = s_str()
    file_prefix: str = s_str()
    gpu_ram: float | None = s_float(None, hi=1e16)
    coprocs: tuple[CoprocUsage, ...] = s_nodes(CoprocUsage, tag="coproc")
    dont_throttle: bool = s_bool()
    is_wrapper: bool = s_bool()
    needs_network: bool = s_bool()
    file_refs: tuple[FileRef, ...] = s_nodes(FileRef, tag="file_ref")


@dataclass(frozen=True, slots=True)
class WorkunitDesc:
    """``<workunit>``; rsc_* left None take the client's defaults."""

    name: str = s_str(required=True)
    app_name: str = s_str(required=True)
    version_num: int | None = s_int(None, **_ID)
    command_line: str = s_str()
    rsc_fpops_est: float | None = s_float(None, hi=1e30)
    rsc_fpops_bound: float | None = s_float(None, hi=1e30)
    rsc_memory_bound: float | None = s_float(None)
    rsc_disk_bound: float | None = s_float(None)
    file_refs: tuple[FileRef, ...] = s_nodes(FileRef, tag="file_ref")


@dataclass(frozen=True, slots=True)
class ResultDesc:
    """``<result>`` (a task). ``report_deadline`` is absolute Unix time; always sent."""

    name: str = s_str(required=True)
    wu_name: str = s_str(required=True)
    report_deadline: float = s_float(0.0, **_TIME)
    platform: str = s_str()
    version_num: int | None = s_int(None, **_ID)
    plan_class: str = s_str()
    report_immediately: bool = s_bool()
    file_refs: tuple[FileRef, ...] = s_nodes(FileRef, tag="file_ref")


@dataclass(frozen=True, slots=True)
class TrickleDown:
    """``<trickle_down>``: a message to a running task; ``body`` is XML content."""

    result_name: str = s_str(required=True)
    time: int = s_int(0, lo=0, hi=int(MAX_TIME))
    body: str = s_custom("")


@dataclass(frozen=True, slots=True)
class SchedulerReply:
    """A ``<scheduler_reply>``; fields are written in this order.

     ``hostid`` must be set only when a new host record was created; ``code_sign_key`` only
     when the request had none; ``result_acks`` must name every reported result
    . ``no_rsc_apps`` must never list every resource. The ``work_sequence_*``
     lists are a Cobblestone extension the stock client ignores.
    """

    scheduler_version: int | None = s_int(None, lo=0, hi=INT32_MAX)
    dont_use_dcf: bool = s_bool()
    master_url: str | None = s_str(None)
    project_name: str | None = s_str(None)
    messages: tuple[ReplyMessage, ...] = s_custom(())
    request_delay: float | None = s_float(None, **_DELAY)
    next_rpc_delay: float | None = s_float(None, **_DELAY)
    project_is_down: bool = s_bool()
    userid: int | None = s_int(None, **_ID)
    user_name: str | None = s_str(None)
    user_total_credit: float | None = s_float(None, **_CREDIT)
    user_expavg_credit: float | None = s_float(None, **_CREDIT)
    user_create_time: float | None = s_float(None, **_TIME)
    cpid_time: float | None = s_float(None, **_TIME)
    email_hash: str | None = s_str(None)
    cross_project_id: str | None = s_str(None)
    external_cpid: str | None = s_str(None)
    teamid: int | None = s_int(None, **_ID)
    team_name: str | None = s_str(None)
    project_preferences: str | None = s_custom(None)
    global_preferences: str | None = s_custom(None)
    hostid: int | None = s_int(None, **_ID)
    host_total_credit: float | None = s_float(None, **_CREDIT)
    host_expavg_credit: float | None = s_float(None, **_CREDIT)
    host_venue: str | None = s_str(None)
    host_create_time: float | None = s_float(None, **_TIME)
    non_cpu_intensive: bool = s_bool()
    verify_files_on_app_start: bool = s_bool()
    send_full_workload: bool = s_bool()
    ended: bool = s_bool()
    send_time_stats_log: int | None = s_int(None, lo=0, hi=INT32_MAX)
    send_job_log: int | None = s_int(None, lo=0, hi=INT32_MAX)
    gui_urls: str | None = s_custom(None)
    rss_feeds: str | None = s_custom(None)
    no_rsc_apps: tuple[ProcType, ...] = s_custom(())
    apps: tuple[AppDesc, ...] = s_nodes(AppDesc, tag="app")
    file_infos: tuple[FileInfoDesc, ...] = s_nodes(FileInfoDesc, tag="file_info")
    app_versions: tuple[AppVersionDesc, ...] = s_nodes(AppVersionDesc, tag="app_version")
    workunits: tuple[WorkunitDesc, ...] = s_nodes(WorkunitDesc, tag="workunit")
    results: tuple[ResultDesc, ...] = s_nodes(ResultDesc, tag="result")
    result_acks: tuple[str, ...] = s_strs(tag="result_ack", sub="name")
    result_aborts: tuple[str, ...] = s_strs(tag="result_abort", sub="name")
    result_aborts_if_not_started: tuple[str, ...] = s_strs(tag="result_abort_if_not_started", sub="name")
    delete_file_infos: tuple[str, ...] = s_strs(tag="delete_file_info")
    message_ack: bool = s_bool()
    trickle_downs: tuple[TrickleDown, ...] = s_nodes(TrickleDown, tag="trickle_down")
    work_sequences_assigned: tuple[str, ...] = s_strs(tag="work_sequence_assigned", sub="name")
    work_sequences_unassigned: tuple[str, ...] = s_strs(tag="work_sequence_unassigned", sub="name")
    work_sequences_ended: tuple[str, ...] = s_strs(tag="work_sequence_ended", sub="name")
    code_sign_key: str | None = s_str(None, fmt="block")
    code_sign_key_signature: str | None = s_str(None, fmt="block")
