"""Users, hosts and teams as BOINC's XML records (show_user and the db_dump stats export)."""

from __future__ import annotations

from collections.abc import Iterable

from apps.hosts.models import Host
from apps.protocol.stats_xml import Record
from apps.volunteers.models import Account, Team


def user_record(account: Account, hosts: Iterable[Host] = ()) -> Record:
    """db_dump's user fields; the exported cpid is md5(cross_project_id + email), never the id.

    The cpid links a user's accounts across projects, so it is there only for users who
    consented to the statistics export (as the export itself, apps.portal.stats_export).
    """
    return Record(
        "user",
        (
            ("id", account.id),
            ("name", account.name),
            ("country", account.country),
            ("create_time", int(account.create_time.timestamp())),
            ("total_credit", account.total_credit),
            ("expavg_credit", account.expavg_credit),
            ("expavg_time", account.expavg_time),
            ("cpid", account.public_cpid if account.stats_export_consent else None),
            ("url", account.url or None),
            ("teamid", account.team_id),
        ),
        tuple(host_record(h, show_owner=False) for h in hosts),
    )


def host_record(host: Host, *, show_owner: bool = True, export: bool = False) -> Record:
    """db_dump's host fields. host_cpid only with ``export``: the statistics export holds only
    consenting users' hosts, and the host_cpid would link a host to its owner across projects
    (BOINC shows it, and the domain name, to the owner only)."""
    return Record(
        "host",
        (
            ("id", host.id),
            ("userid", host.account_id if show_owner and host.account.show_hosts else None),
            ("total_credit", host.total_credit),
            ("expavg_credit", host.expavg_credit),
            ("expavg_time", host.expavg_time),
            ("p_vendor", host.p_vendor),
            ("p_model", host.p_model),
            ("os_name", host.os_name),
            ("os_version", host.os_version),
            ("create_time", int(host.create_time.timestamp())),
            ("rpc_time", int(host.rpc_time.timestamp()) if host.rpc_time else 0),
            ("timezone", host.timezone),
            ("ncpus", host.p_ncpus),
            ("p_fpops", host.p_fpops),
            ("p_iops", host.p_iops),
            ("p_membw", host.p_membw),
            ("m_nbytes", host.m_nbytes),
            ("m_cache", host.m_cache),
            ("m_swap", host.m_swap),
            ("d_total", host.d_total),
            ("d_free", host.d_free),
            ("n_bwup", host.n_bwup),
            ("n_bwdown", host.n_bwdown),
            ("avg_turnaround", host.avg_turnaround),
            ("credit_per_cpu_sec", host.credit_per_cpu_sec),
            ("host_cpid", host.host_cpid if export else None),
        ),
    )


def team_record(team: Team) -> Record:
    return Record(
        "team",
        (
            ("id", team.id),
            ("type", team.type),
            ("name", team.name),
            ("userid", team.founder_id or 0),
            ("total_credit", team.total_credit),
            ("expavg_credit", team.expavg_credit),
            ("expavg_time", team.expavg_time),
            ("founder_name", team.founder.name if team.founder else ""),
            ("create_time", int(team.create_time.timestamp())),
            ("url", team.url),
            ("name_html", team.name),
            ("description", team.description),
            ("country", team.country),
        ),
    )
