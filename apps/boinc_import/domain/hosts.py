"""BOINC's host and host_app_version rows as Cobblestone hosts and their per-version records."""

from __future__ import annotations

from dataclasses import dataclass

from apps.boinc_import.domain.ids import IdMap
from apps.boinc_import.domain.values import (
    INT32_MAX,
    Mapped,
    Row,
    RowRefused,
    average_time,
    described,
    integer,
    number,
    text,
    unix_time,
)
from apps.core.domain.resources import ANONYMOUS_CODES, ProcType

# host_app_version.app_version_id of an anonymous-platform record is sched_util.h's
# generalized_app_version_id: appid * 1000000 - code (code -2 CPU, -3 NVIDIA, ...).
ANONYMOUS_ID_BASE = 1_000_000
_ANONYMOUS_TYPES = {-code: proc for proc, code in ANONYMOUS_CODES.items()}
FRACTION = {"lo": 0.0, "hi": 1.0}


def map_host(row: Row, *, now: float, users: IdMap) -> Mapped:
    """A host row, owned by its imported user (a host whose user was not imported is refused)."""
    userid = integer(row, "userid", lo=0)
    account_id = users.target(userid)
    if account_id is None:
        raise RowRefused(f"its user {userid} was not imported")
    notes: list[str] = []
    max_results_day = integer(row, "max_results_day", lo=-(2**31), hi=INT32_MAX)
    values = {
        "account_id": account_id,
        "create_time": unix_time(row, "create_time", now=now, required=True),
        "rpc_seqno": integer(row, "rpc_seqno"),
        "rpc_time": unix_time(row, "rpc_time", now=now),
        "host_cpid": text(row, "host_cpid", max_len=64),
        "domain_name": described(row, "domain_name", max_len=255, notes=notes),
        "last_ip_addr": described(row, "last_ip_addr", max_len=64, notes=notes),
        "timezone": integer(row, "timezone", lo=-86400, hi=86400),
        "venue": described(row, "venue", max_len=50, notes=notes),
        "p_ncpus": integer(row, "p_ncpus"),
        "p_vendor": described(row, "p_vendor", max_len=255, notes=notes),
        "p_model": described(row, "p_model", max_len=255, notes=notes),
        "p_fpops": number(row, "p_fpops"),
        "p_iops": number(row, "p_iops"),
        "p_membw": number(row, "p_membw"),
        "os_name": described(row, "os_name", max_len=255, notes=notes),
        "os_version": described(row, "os_version", max_len=255, notes=notes),
        "m_nbytes": number(row, "m_nbytes"),
        "m_cache": number(row, "m_cache"),
        "m_swap": number(row, "m_swap"),
        "d_total": number(row, "d_total"),
        "d_free": number(row, "d_free"),
        "n_bwup": number(row, "n_bwup"),
        "n_bwdown": number(row, "n_bwdown"),
        "on_frac": number(row, "on_frac", **FRACTION),
        "connected_frac": _fraction_or_unknown(row, "connected_frac"),
        "active_frac": number(row, "active_frac", **FRACTION),
        "gpu_active_frac": number(row, "gpu_active_frac", **FRACTION),
        "total_credit": number(row, "total_credit"),
        "expavg_credit": number(row, "expavg_credit"),
        "expavg_time": average_time(row, "expavg_time", now=now),
        "avg_turnaround": number(row, "avg_turnaround"),
        "credit_per_cpu_sec": number(row, "credit_per_cpu_sec"),
        # BOINC's scheduler refuses a host whose max_results_day is -1 (docs/boinc-reference.md).
        "blacklisted": max_results_day == -1,
    }
    return Mapped(values, notes)


def _fraction_or_unknown(row: Row, column: str) -> float:
    """connected_frac is -1 when the client does not know it; Cobblestone keeps 0..1."""
    value = number(row, column, lo=-1.0, hi=1.0)
    return 1.0 if value < 0 else value


@dataclass(frozen=True, slots=True)
class VersionRef:
    """An imported app version as host_app_version and result rows refer to it."""

    id: int
    app_id: int
    platform: str
    version_num: int
    plan_class: str
    proc_type: str
    avg_ncpus: float
    gpu_usage: float


@dataclass(frozen=True, slots=True)
class HavTarget:
    """What a host_app_version.app_version_id names: a version, or an anonymous record."""

    app_id: int
    app_version_id: int | None
    anonymous_proc_type: str


def hav_target(gavid: int, *, versions: dict[int, VersionRef], apps: dict[int, int]) -> HavTarget:
    """Decode a generalized app version id into the imported version or anonymous record."""
    if gavid in versions:
        version = versions[gavid]
        return HavTarget(app_id=version.app_id, app_version_id=version.id, anonymous_proc_type="")
    appid, code = divmod(gavid, ANONYMOUS_ID_BASE)
    if gavid > ANONYMOUS_ID_BASE and code in _ANONYMOUS_TYPES:
        if appid not in apps:
            raise RowRefused(f"anonymous-platform record of app {appid}, which was not imported")
        return HavTarget(app_id=apps[appid], app_version_id=None, anonymous_proc_type=_ANONYMOUS_TYPES[code])
    raise RowRefused(f"app version {gavid} was not imported")


def map_host_app_version(
    row: Row, *, hosts: IdMap, versions: dict[int, VersionRef], apps: dict[int, int], error_rate: float
) -> Mapped:
    """Per-(host, app version) statistics; ``error_rate`` is the host's (BOINC keeps one per host)."""
    hostid = integer(row, "host_id")
    host_id = hosts.target(hostid)
    if host_id is None:
        raise RowRefused(f"host {hostid} was not imported")
    target = hav_target(integer(row, "app_version_id", lo=-(2**31)), versions=versions, apps=apps)
    values = {
        "host_id": host_id,
        "app_id": target.app_id,
        "app_version_id": target.app_version_id,
        "anonymous_proc_type": target.anonymous_proc_type,
        "max_jobs_per_day": integer(row, "max_jobs_per_day", lo=-(2**31)),
        "n_jobs_today": integer(row, "n_jobs_today"),
        "consecutive_valid": integer(row, "consecutive_valid"),
        "error_rate": max(0.0, min(1.0, error_rate)),
        "host_scale_time": 0.0,
    }
    for column in ("pfc_n", "pfc_avg", "et_n", "et_avg", "et_var", "et_q"):
        values[column] = number(row, column)
    for column in ("turnaround_n", "turnaround_avg", "turnaround_var", "turnaround_q"):
        values[column] = number(row, column)
    # A host with validated jobs has left the initial scale probation (the first valid
    # result ends it); one without any starts on probation, as a new host does.
    values["scale_probation"] = values["pfc_n"] == 0
    return Mapped(values)


def is_cpu(proc_type: str) -> bool:
    return proc_type == ProcType.CPU.value
