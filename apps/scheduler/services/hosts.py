"""Authentication and host identification/update for a scheduler RPC."""

from __future__ import annotations

import functools
from datetime import datetime

from apps.core.db import update_rows
from apps.hosts.models import Host, HostCoproc
from apps.protocol import ProtocolError, SchedulerRequest, global_prefs_parse, prefs_mod_time
from apps.protocol.global_prefs import parse_global_prefs
from apps.scheduler.domain.policy import HostInstances, effective_instances
from apps.scheduler.queries import account_by_key, account_by_key_with_host, host_coprocs
from apps.scheduler.services.context import RpcContext
from apps.volunteers.domain.weak_keys import weak_key_userid
from apps.volunteers.models import Account
from apps.volunteers.services.weak_keys import account_weak_key_matches

HOST_FIELDS = [
    "rpc_seqno",
    "rpc_time",
    "host_cpid",
    "domain_name",
    "last_ip_addr",
    "timezone",
    "platform_name",
    "client_version",
    "p_ncpus",
    "p_vendor",
    "p_model",
    "p_features",
    "p_fpops",
    "p_iops",
    "p_membw",
    "os_name",
    "os_version",
    "m_nbytes",
    "m_cache",
    "m_swap",
    "d_total",
    "d_free",
    "n_bwup",
    "n_bwdown",
    "on_frac",
    "connected_frac",
    "active_frac",
    "gpu_active_frac",
]


def account_authenticate(ctx: RpcContext) -> Account | None:
    """The account with the request's authenticator (with its team), or None.

    The authenticator is the account key or the account's weak key (``<id>_<md5>``), which
    attaches a computer and fetches work but changes nothing of the account
    (``ctx.weak_auth``). A request naming its hostid also gets that host and its coprocessor
    rows in the same statement (one row per coprocessor); ``host_identify`` then checks
    they belong.
    """
    authenticator = ctx.req.authenticator.strip()
    if not authenticator:
        return None
    weak_userid = weak_key_userid(authenticator)
    hostid = ctx.req.hostid
    if hostid:
        found = account_by_key_with_host(
            ctx.project.id,
            ctx.project.host_id_from_client(hostid),
            account_id=weak_userid,
            authenticator=authenticator,
        )
        if found is None:
            return None
        account, ctx.known_host, ctx.known_coprocs = found
    else:
        lone = account_by_key(ctx.project.id, account_id=weak_userid, authenticator=authenticator)
        if lone is None:
            return None
        account = lone
    if weak_userid is not None:
        if not account_weak_key_matches(account, authenticator):
            return None
        ctx.weak_auth = True
    return account


def host_identify(ctx: RpcContext) -> Host:
    """Find the host this request is from, or create it (BOINC's rules).

    A known hostid of this account with rpc_seqno not going backwards is the host. A
    lower rpc_seqno means the client's state file was copied to another computer, so
    that computer gets a new host record. A request without hostid first tries the
    account's host with the same host_cpid (a re-attach), then creates one.

    A blocked host is returned as found, with nothing written: the caller refuses it.
    """
    req, account = ctx.req, ctx.account
    assert account is not None
    host = None
    coprocs = None
    if req.hostid:
        known = ctx.known_host  # read with the account
        if known is not None and req.rpc_seqno >= known.rpc_seqno:
            host, coprocs = known, ctx.known_coprocs
    elif req.host_info.host_cpid:
        host = (
            Host.objects.filter(project=ctx.project, account=account, host_cpid=req.host_info.host_cpid)
            .order_by("-id")
            .first()
        )
        ctx.reattached = host is not None
    if host is not None and host.blacklisted:
        # Refused before anything is recorded, as BOINC refuses a blocked host.
        ctx.host = host
        return host
    if host is None:
        # A new computer starts in the volunteer's default location (BOINC's user.venue).
        host = Host(project=ctx.project, account=account, venue=account.venue)
    # The client must be told its host id whenever its own idea differs (then it resets rpc_seqno).
    ctx.new_host = host.pk is None or host.pk != req.hostid
    # The previous RPC's day, for the daily job counters, before this RPC overwrites it.
    ctx.previous_rpc_day = host.last_rpc_day
    host_update(host, req, now=ctx.now, remote_addr=ctx.remote_addr)
    host.last_rpc_day = ctx.now.date()
    if ctx.new_host:
        host.rpc_seqno = 0
    if host.pk is None:
        host.save()
    else:
        update_rows(Host, [host], [*HOST_FIELDS, "last_rpc_day"], batch=ctx.writes)
    coprocs_update(host, req, coprocs)
    ctx.host = host  # its venue picks the account's preferences
    host_instances(ctx)  # once, for every job limit of the RPC
    return host


def host_update(host: Host, req: SchedulerRequest, *, now: datetime, remote_addr: str) -> None:
    info, ts = req.host_info, req.time_stats
    host.rpc_seqno = req.rpc_seqno
    host.rpc_time = now
    host.host_cpid = info.host_cpid[:64]
    host.domain_name = info.domain_name[:255]
    host.last_ip_addr = (remote_addr or info.ip_addr)[:64]
    host.timezone = info.timezone
    host.platform_name = req.platform_name[:100]
    host.client_version = (
        f"{req.core_client_major_version}.{req.core_client_minor_version}.{req.core_client_release}"
    )
    host.p_ncpus = max(info.p_ncpus, 1)
    host.p_vendor, host.p_model = info.p_vendor[:255], info.p_model[:255]
    host.p_features = info.p_features[:4000]
    host.p_fpops = info.p_fpops or host.p_fpops
    host.p_iops = info.p_iops or host.p_iops
    host.p_membw = info.p_membw
    host.os_name, host.os_version = info.os_name[:255], info.os_version[:255]
    host.m_nbytes, host.m_cache, host.m_swap = info.m_nbytes, info.m_cache, info.m_swap
    host.d_total, host.d_free = info.d_total, info.d_free
    host.n_bwup, host.n_bwdown = req.net_stats.bwup, req.net_stats.bwdown
    host.on_frac, host.active_frac, host.gpu_active_frac = ts.on_frac, ts.active_frac, ts.gpu_active_frac
    host.connected_frac = ts.connected_frac


def host_instances(ctx: RpcContext) -> HostInstances:
    """The request's CPU and GPU counts as every job limit of this RPC counts them: the
    CPUs the volunteer's preferences let BOINC use (``sched_max_ncpus_pct``), capped by the
    project's max_ncpus and max_ngpus (the host row keeps the reported counts, which the
    volunteer's host page shows).

    Worked out once per RPC (host_identify does it) and kept on the context.
    """
    if ctx.instances is None:
        req = ctx.req
        ctx.instances = effective_instances(
            p_ncpus=req.host_info.p_ncpus,
            gpu_counts=[(c.type, c.count) for c in req.coprocs],
            max_ncpus=ctx.project.max_ncpus,
            max_ngpus=ctx.project.max_ngpus,
            max_ncpus_pct=sched_max_ncpus_pct(ctx),
        )
    return ctx.instances


def sched_max_ncpus_pct(ctx: RpcContext) -> float:
    """max_ncpus_pct of the global preferences BOINC schedules by (handle_global_prefs):
    the client's working preferences; else the request's own, unless the account's are
    newer (by mod_time, a future one counting as now); else the account's, those of the
    host's venue if they have such a block; else 100.
    """
    req = ctx.req
    if req.working_global_prefs is not None:
        return req.working_global_prefs.max_ncpus_pct
    venue = ctx.host.venue if ctx.host is not None else ""
    stored = (
        _stored_prefs(ctx.account.global_prefs, venue) if ctx.account and ctx.account.global_prefs else None
    )
    sent = req.global_prefs
    if sent is not None:
        if stored is not None and min(stored[0], ctx.now_unix) > min(sent.mod_time, ctx.now_unix):
            return stored[1]
        return sent.max_ncpus_pct
    return stored[1] if stored is not None else 100.0


@functools.lru_cache(maxsize=4096)
def _stored_prefs(body: str, venue: str) -> tuple[float, float] | None:
    """(mod_time, max_ncpus_pct) of an account's stored global preferences, read as the
    client's are (the ``venue`` block if there is one); None if they are not XML (then they
    are not used, see services.prefs).

    Accounts' stored texts repeat from RPC to RPC: each distinct one is read once.
    """
    mod_time = prefs_mod_time(body)
    if mod_time is None:
        return None
    if venue:
        in_venue = parse_global_prefs(body).venue(venue)
        if in_venue is not None:
            return mod_time, min(max(in_venue.max_ncpus_pct, 0.0), 100.0)
    try:
        return mod_time, global_prefs_parse(body).max_ncpus_pct
    except ProtocolError:
        return mod_time, 100.0  # a value the parser refuses counts as unset, as BOINC's parse_double


def _compute_capability(properties: tuple[tuple[str, str], ...]) -> int:
    """major × 100 + minor, or 0 (unknown) unless both are plausible (0-99)."""
    props = dict(properties)
    try:
        major, minor = int(props.get("major", "0")), int(props.get("minor", "0"))
    except ValueError:
        return 0
    return major * 100 + minor if 0 <= major < 100 and 0 <= minor < 100 else 0


def coprocs_update(host: Host, req: SchedulerRequest, rows: list[HostCoproc] | None = None) -> None:
    """Keep one HostCoproc row per GPU type the client reports; write only on change.

    ``rows`` are the host's current rows when the caller has read them already.
    """
    if not req.coprocs and not host.pk:
        return
    if rows is None:
        rows = host_coprocs(host.id)
    existing = {c.proc_type: c for c in rows}
    seen = set()
    for coproc in req.coprocs:
        if coproc.count <= 0 or coproc.type.value in seen:
            continue
        seen.add(coproc.type.value)
        props = dict(coproc.properties)
        values = {
            "name": coproc.name[:255],
            "count": coproc.count,
            "peak_flops": coproc.peak_flops,
            "available_ram": coproc.available_ram,
            "have_opencl": props.get("have_opencl", "0").strip() in ("1", "true"),
            "compute_capability": _compute_capability(coproc.properties),
        }
        row = existing.get(coproc.type.value)
        if row is None:
            HostCoproc.objects.create(host=host, proc_type=coproc.type.value, **values)
        elif any(getattr(row, k) != v for k, v in values.items()):
            for key, value in values.items():
                setattr(row, key, value)
            row.save()
    stale = [pk for proc, row in existing.items() if proc not in seen for pk in [row.pk]]
    if stale:
        HostCoproc.objects.filter(pk__in=stale).delete()
