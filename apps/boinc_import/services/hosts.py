"""Hosts (keeping their ids where the portal allows), their per-version statistics and the
records of deleted hosts."""

from __future__ import annotations

from apps.boinc_import.domain import Mapped, Row, map_host, map_host_app_version
from apps.boinc_import.queries import rows_insert
from apps.boinc_import.services.accounts import deleted_import
from apps.boinc_import.services.engine import ImportRun, KeyedTable, project_rows, table_import
from apps.boinc_import.services.source import TableQuery
from apps.hosts.models import DeletedHost, Host, HostAppVersion
from apps.projects.models import Project

HOST_COLUMNS = (
    "id, create_time, userid, rpc_seqno, rpc_time, total_credit, expavg_credit, expavg_time, timezone,"
    " domain_name, last_ip_addr, on_frac, connected_frac, active_frac, gpu_active_frac, p_ncpus, p_vendor,"
    " p_model, p_fpops, p_iops, p_membw, os_name, os_version, m_nbytes, m_cache, m_swap, d_total, d_free,"
    " n_bwup, n_bwdown, credit_per_cpu_sec, venue, avg_turnaround, host_cpid, max_results_day"
)
HAV_COLUMNS = (
    "hav.host_id, hav.app_version_id, hav.pfc_n, hav.pfc_avg, hav.et_n, hav.et_avg, hav.et_var, hav.et_q,"
    " hav.max_jobs_per_day, hav.n_jobs_today, hav.turnaround_n, hav.turnaround_avg, hav.turnaround_var,"
    " hav.turnaround_q, hav.consecutive_valid, h.error_rate"
)


def hosts_import(run: ImportRun) -> None:
    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(
            Host,
            project_rows(run, rows, run.hosts),
        )

    table_import(
        run,
        KeyedTable(
            table="host",
            query=TableQuery(select=HOST_COLUMNS, from_="host", key="id"),
            map_row=lambda row: map_host(row, now=run.now_unix, users=run.users),
            write=write,
            model=Host,
            ids=run.hosts,
        ),
    )
    _host_id_mapping(run)


def _host_id_mapping(run: ImportRun) -> None:
    """Shifted host ids: the scheduler maps the ids attached clients still send."""
    state = run.table_state("host")
    if run.dry_run or state.id_offset == 0:
        return
    Project.objects.filter(pk=run.project.pk).update(
        boinc_hostid_offset=state.id_offset, boinc_hostid_max=state.reserved_max_id
    )
    run.project.boinc_hostid_offset, run.project.boinc_hostid_max = state.id_offset, state.reserved_max_id


def host_app_versions_import(run: ImportRun) -> None:
    def map_row(row: Row) -> Mapped:
        return map_host_app_version(
            row,
            hosts=run.hosts,
            versions=run.versions,
            apps=run.apps,
            error_rate=float(row["error_rate"] or 0),
        )

    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(HostAppVersion, [m.values for _, m in rows])

    table_import(
        run,
        KeyedTable(
            table="host_app_version",
            query=TableQuery(
                select=HAV_COLUMNS,
                from_="host_app_version hav LEFT JOIN host h ON h.id = hav.host_id",
                key="hav.host_id",
                key_alias="host_id",
                key2="hav.app_version_id",
            ),
            map_row=map_row,
            write=write,
        ),
    )


def deleted_hosts_import(run: ImportRun) -> None:
    deleted_import(run, table="host_deleted", key="hostid", model=DeletedHost, ids=run.hosts)
