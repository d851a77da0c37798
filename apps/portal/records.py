"""Users, hosts, teams, apps and pending results as BOINC's XML records (show_user, the XML web
RPCs and the db_dump stats export)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from typing import Any

from apps.applications.models import App, AppVersion
from apps.hosts.models import Host
from apps.protocol.stats_xml import Record, Value
from apps.volunteers.models import Account, Team, public_cpid
from apps.work.models import Result

# The statistics export reads millions of rows as named tuples of these columns (reading a
# model instance per row costs three times as much); ``*_export_record`` build the same
# records as the model-based functions from such rows.
USER_EXPORT_COLUMNS = (
    "id",
    "name",
    "country",
    "create_time",
    "total_credit",
    "expavg_credit",
    "expavg_time",
    "url",
    "team_id",
    "cross_project_id",
    "email_addr",
)
HOST_EXPORT_COLUMNS = (
    "id",
    "account_id",
    "account__show_hosts",
    "total_credit",
    "expavg_credit",
    "expavg_time",
    "p_vendor",
    "p_model",
    "os_name",
    "os_version",
    "create_time",
    "rpc_time",
    "timezone",
    "p_ncpus",
    "p_fpops",
    "p_iops",
    "p_membw",
    "m_nbytes",
    "m_cache",
    "m_swap",
    "d_total",
    "d_free",
    "n_bwup",
    "n_bwdown",
    "avg_turnaround",
    "credit_per_cpu_sec",
    "host_cpid",
)
TEAM_EXPORT_COLUMNS = (
    "id",
    "type",
    "name",
    "founder_id",
    "founder__name",
    "total_credit",
    "expavg_credit",
    "expavg_time",
    "create_time",
    "url",
    "description",
    "country",
)

Fields = tuple[tuple[str, Value], ...]


def _user_fields(user: Any, cpid: str | None) -> Fields:
    """``user`` is an Account or a row of USER_EXPORT_COLUMNS."""
    return (
        ("id", user.id),
        ("name", user.name),
        ("country", user.country),
        ("create_time", int(user.create_time.timestamp())),
        ("total_credit", user.total_credit),
        ("expavg_credit", user.expavg_credit),
        ("expavg_time", user.expavg_time),
        ("cpid", cpid),
        ("url", user.url or None),
        ("teamid", user.team_id),
    )


def user_record(account: Account, hosts: Iterable[Host] = ()) -> Record:
    """db_dump's user fields; the exported cpid is md5(cross_project_id + email), never the id.

    The cpid links a user's accounts across projects, so it is there only for users who
    consented to the statistics export (as the export itself, apps.portal.stats_export).
    """
    return Record(
        "user",
        _user_fields(account, account.public_cpid if account.stats_export_consent else None),
        tuple(host_record(h, show_owner=False) for h in hosts),
    )


def user_export_record(row: Any) -> Record:
    """``user_record`` of a consenting user from a row of USER_EXPORT_COLUMNS."""
    return Record("user", _user_fields(row, public_cpid(row.cross_project_id, row.email_addr)))


def _host_fields(host: Any, userid: int | None, host_cpid: str | None) -> Fields:
    """``host`` is a Host or a row of HOST_EXPORT_COLUMNS."""
    return (
        ("id", host.id),
        ("userid", userid),
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
        ("host_cpid", host_cpid),
    )


def host_record(host: Host, *, show_owner: bool = True, export: bool = False) -> Record:
    """db_dump's host fields. host_cpid only with ``export``: the statistics export holds only
    consenting users' hosts, and the host_cpid would link a host to its owner across projects
    (BOINC shows it, and the domain name, to the owner only)."""
    userid = host.account_id if show_owner and host.account.show_hosts else None
    return Record("host", _host_fields(host, userid, host.host_cpid if export else None))


def host_export_record(row: Any) -> Record:
    """``host_record(host, export=True)`` from a row of HOST_EXPORT_COLUMNS."""
    userid = row.account_id if row.account__show_hosts else None
    return Record("host", _host_fields(row, userid, row.host_cpid))


def _team_fields(team: Any, founder_name: str) -> Fields:
    """``team`` is a Team or a row of TEAM_EXPORT_COLUMNS."""
    return (
        ("id", team.id),
        ("type", team.type),
        ("name", team.name),
        ("userid", team.founder_id or 0),
        ("total_credit", team.total_credit),
        ("expavg_credit", team.expavg_credit),
        ("expavg_time", team.expavg_time),
        ("founder_name", founder_name),
        ("create_time", int(team.create_time.timestamp())),
        ("url", team.url),
        ("name_html", team.name),
        ("description", team.description),
        ("country", team.country),
    )


def team_record(team: Team) -> Record:
    return Record("team", _team_fields(team, team.founder.name if team.founder else ""))


def team_export_record(row: Any) -> Record:
    """``team_record`` from a row of TEAM_EXPORT_COLUMNS."""
    return Record("team", _team_fields(row, row.founder__name if row.founder_id else ""))


# --- the XML web RPCs (BOINC's xml.inc), which differ from the export's records -------------


def owner_record(account: Account, hosts: Iterable[Host]) -> Record:
    """show_user.php?auth=…&format=xml: the account as its owner sees it, with its computers."""
    return Record(
        "user",
        (
            ("id", account.id),
            ("cpid", account.public_cpid),
            ("create_time", int(account.create_time.timestamp())),
            ("name", account.name),
            ("total_credit", account.total_credit),
            ("expavg_credit", account.expavg_credit),
            ("expavg_time", account.expavg_time),
            ("teamid", account.team_id or 0),
            ("has_profile", 0),
            ("venue", account.venue),
        ),
        tuple(_owned_host_record(h) for h in hosts),
        (("country", account.country), ("url", account.url or None)),
    )


def _owned_host_record(host: Host) -> Record:
    return Record(
        "host",
        (
            ("id", host.id),
            ("create_time", int(host.create_time.timestamp())),
            ("rpc_seqno", host.rpc_seqno),
            ("rpc_time", int(host.rpc_time.timestamp()) if host.rpc_time else 0),
            ("host_cpid", host.host_cpid),
            ("total_credit", host.total_credit),
            ("expavg_credit", host.expavg_credit),
            ("expavg_time", host.expavg_time),
            ("domain_name", host.domain_name),
            ("p_ncpus", host.p_ncpus),
            ("p_vendor", host.p_vendor),
            ("p_model", host.p_model),
            ("p_fpops", host.p_fpops),
            ("p_iops", host.p_iops),
            ("os_name", host.os_name),
            ("os_version", host.os_version),
            ("m_nbytes", host.m_nbytes),
            ("d_free", host.d_free),
            ("d_total", host.d_total),
            ("venue", host.venue),
        ),
    )


def team_lookup_record(team: Team) -> Record:
    """team_lookup.php's <team>."""
    return Record(
        "team",
        (
            ("id", team.id),
            ("create_time", int(team.create_time.timestamp())),
            ("userid", team.founder_id or 0),
            ("name", team.name),
            ("url", team.url),
            ("type", team.type),
            ("country", team.country),
            ("total_credit", team.total_credit),
            ("expavg_credit", team.expavg_credit),
            ("expavg_time", team.expavg_time),
        ),
    )


def team_member_record(account: Account, *, credit_only: bool = False, email: bool = False) -> Record:
    """team_email_list.php's <user>; the email address only for the team's founder
    (team_members_list.php), the cpid only for users who consented to the export."""
    head: tuple[tuple[str, Value], ...] = (
        ("id", account.id),
        ("cpid", account.public_cpid if account.stats_export_consent else None),
        ("email_addr", account.email_addr if email else None),
        ("total_credit", account.total_credit),
    )
    if credit_only:
        return Record("user", head)
    return Record(
        "user",
        (
            *head,
            ("create_time", int(account.create_time.timestamp())),
            ("name", account.name),
            ("expavg_credit", account.expavg_credit),
            ("expavg_time", account.expavg_time),
            ("has_profile", 0),
            ("country", account.country),
            ("url", account.url or None),
        ),
    )


def app_record(app: App, versions: Iterable[AppVersion]) -> Record:
    """apps.php?xml=1's <application> with its current versions."""
    return Record(
        "application",
        (
            ("user_friendly_name", app.user_friendly_name or app.name),
            ("name", app.name),
            ("id", app.id),
            ("beta", app.beta),
        ),
        tuple(
            Record(
                "version",
                (
                    ("platform_short", v.platform.name),
                    ("platform_long", v.platform.user_friendly_name or v.platform.name),
                    ("version_num", v.version_num),
                    ("plan_class", v.plan_class),
                    ("date", v.create_time.astimezone(UTC).strftime("%-d %b %Y, %-H:%M:%S UTC")),
                    ("date_unix", int(v.create_time.timestamp())),
                    ("beta", v.beta),
                ),
            )
            for v in versions
        ),
    )


def pending_credit_record(claims: Iterable[tuple[Result, float]]) -> Record:
    """pending.php?format=xml: the account's results awaiting validation and their claims."""
    rows = list(claims)
    return Record(
        "pending_credit",
        (),
        tuple(
            Record(
                "result",
                (
                    ("resultid", r.id),
                    ("workunitid", r.workunit_id),
                    ("hostid", r.host_id or 0),
                    ("claimed_credit", claim),
                    ("received_time", int(r.received_time.timestamp()) if r.received_time else 0),
                ),
            )
            for r, claim in rows
        ),
        (("total_claimed_credit", sum(claim for _, claim in rows)),),
    )
