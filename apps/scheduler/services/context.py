"""The state of one scheduler RPC as it is handled (built up, then turned into a reply)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime

from apps.applications.models import App
from apps.core.db import WriteBatch
from apps.hosts.models import Host, HostAppVersion, HostCoproc
from apps.projects.models import Project
from apps.protocol import ReplyMessage, SchedulerRequest, TrickleDown
from apps.protocol.project_prefs import ProjectPrefs
from apps.protocol.reply_types import MessagePriority
from apps.scheduler.domain.policy import HostInstances, VersionOption
from apps.volunteers.models import Account
from apps.work.models import Result


@dataclass(slots=True)
class SentJob:
    """A result added to this reply, with the version chosen and its runtime estimate."""

    result: Result
    option: VersionOption
    est_dur: float
    projected_flops: float


@dataclass(slots=True)
class RpcContext:
    project: Project
    req: SchedulerRequest
    now: datetime
    remote_addr: str = ""
    account: Account | None = None
    # Authenticated by the account's weak key: the RPC must change nothing of the account.
    weak_auth: bool = False
    host: Host | None = None
    new_host: bool = False
    # The volunteer's project preferences for the host's venue (set with the host).
    prefs: ProjectPrefs = field(default_factory=ProjectPrefs)
    # The request had no hostid and its host was found by host_cpid (a detach and attach).
    reattached: bool = False
    messages: list[ReplyMessage] = field(default_factory=list)
    acks: list[str] = field(default_factory=list)
    aborts: list[str] = field(default_factory=list)
    aborts_if_not_started: list[str] = field(default_factory=list)
    delete_file_infos: list[str] = field(default_factory=list)
    sent: list[SentJob] = field(default_factory=list)
    no_work_reasons: list[str] = field(default_factory=list)
    sequences_assigned: list[str] = field(default_factory=list)
    sequences_unassigned: list[str] = field(default_factory=list)
    sequences_ended: list[str] = field(default_factory=list)
    message_ack: bool = False  # the request's trickle-ups are stored (services.trickles)
    trickle_downs: tuple[TrickleDown, ...] = ()
    request_delay: float | None = None
    global_prefs_out: str | None = None  # the account's global preferences, if the client should adopt them
    previous_rpc_day: date | None = None
    # The request's hostid as read with the account (None: no such host of this account).
    known_host: Host | None = None
    known_coprocs: list[HostCoproc] = field(default_factory=list)
    # The host's CPU and GPU counts for every job limit of this RPC, worked out once when
    # the host is identified (read through services.hosts.host_instances).
    instances: HostInstances | None = None
    apps: dict[int, App] = field(default_factory=dict)
    # The host's host_app_version rows, locked once per RPC, keyed (app, version, anonymous type).
    havs: dict[tuple[int, int | None, str], HostAppVersion] = field(default_factory=dict)
    # Rows of ``havs`` changed by reports, the daily roll-over or sends, written once by
    # host_app_versions_save (one UPDATE statement for all of them).
    dirty_havs: dict[int, HostAppVersion] = field(default_factory=dict)
    # Workunits whose transition time reports and sends bring forward (the earliest time
    # each), written once by transition_times_save.
    transition_times: dict[int, datetime] = field(default_factory=dict)
    # Writes nothing reads back before the next flush, sent together (see WriteBatch).
    writes: WriteBatch = field(default_factory=WriteBatch)

    @property
    def now_unix(self) -> float:
        return self.now.timestamp()

    def message(self, text: str, *, notice: bool = False) -> None:
        priority = MessagePriority.NOTICE if notice else MessagePriority.LOW
        self.messages.append(ReplyMessage(text=text, priority=priority))

    def transition_time_lower(self, workunit_ids: Iterable[int], when: datetime) -> None:
        """The transitioner must look at these workunits by ``when`` (recorded, written later)."""
        times = self.transition_times
        for wu_id in workunit_ids:
            known = times.get(wu_id)
            if known is None or when < known:
                times[wu_id] = when

    def no_work_reason(self, text: str) -> None:
        if text not in self.no_work_reasons:
            self.no_work_reasons.append(text)
