"""A BOINC project database for the import tests, built in the private MariaDB server.

The tables are those of BOINC's db/schema.sql (revision 27032) that the importer reads,
with their column names, MySQL types and defaults, plus a few columns it ignores; each
test database is made from this description, and rows are added with ``BoincDb.add``
giving only the columns a test cares about.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pymysql

from apps.boinc_import.services.source import parse_source_url

INT, DOUBLE, TINY = "integer not null default 0", "double not null default 0", "tinyint not null default 0"
TEXT254 = "varchar(254) not null default ''"

# table → (column, MySQL type); the first column is the primary key unless noted.
TABLES: dict[str, list[tuple[str, str]]] = {
    "platform": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("name", "varchar(191) not null"),
        ("user_friendly_name", TEXT254),
        ("deprecated", TINY),
    ],
    "app": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("name", "varchar(191) not null"),
        ("min_version", INT),
        ("deprecated", "smallint not null default 0"),
        ("user_friendly_name", TEXT254),
        ("homogeneous_redundancy", "smallint not null default 0"),
        ("weight", "double not null default 1"),
        ("beta", "smallint not null default 0"),
        ("target_nresults", "smallint not null default 0"),
        ("min_avg_pfc", "double not null default 1"),
        ("host_scale_check", TINY),
        ("homogeneous_app_version", TINY),
        ("non_cpu_intensive", TINY),
        ("locality_scheduling", INT),
        ("n_size_classes", "smallint not null default 0"),
        ("fraction_done_exact", TINY),
    ],
    "app_version": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("appid", INT),
        ("version_num", INT),
        ("platformid", INT),
        ("xml_doc", "mediumblob"),
        ("min_core_version", INT),
        ("max_core_version", INT),
        ("deprecated", TINY),
        ("plan_class", "varchar(128) not null default ''"),
        ("pfc_n", DOUBLE),
        ("pfc_avg", DOUBLE),
        ("pfc_scale", DOUBLE),
        ("expavg_credit", DOUBLE),
        ("expavg_time", DOUBLE),
        ("beta", TINY),
    ],
    "user": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("email_addr", "varchar(191) not null"),
        ("name", "varchar(191)"),
        ("authenticator", "varchar(191)"),
        ("country", "varchar(254)"),
        ("postal_code", "varchar(254)"),
        ("total_credit", DOUBLE),
        ("expavg_credit", DOUBLE),
        ("expavg_time", DOUBLE),
        ("global_prefs", "blob"),
        ("project_prefs", "blob"),
        ("teamid", INT),
        ("venue", TEXT254),
        ("url", "varchar(254)"),
        ("send_email", "smallint not null default 1"),
        ("show_hosts", "smallint not null default 1"),
        ("posts", "smallint not null default 0"),
        ("seti_id", INT),
        ("seti_nresults", INT),
        ("seti_last_result_time", INT),
        ("seti_total_cpu", DOUBLE),
        ("signature", "varchar(254)"),
        ("has_profile", "smallint not null default 0"),
        ("cross_project_id", "varchar(254) not null"),
        ("passwd_hash", "varchar(254) not null"),
        ("email_validated", "smallint not null default 0"),
        ("donated", "smallint not null default 0"),
        ("login_token", "char(32) not null default ''"),
        ("login_token_time", DOUBLE),
        ("previous_email_addr", TEXT254),
        ("email_addr_change_time", DOUBLE),
    ],
    "team": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("userid", INT),
        ("name", "varchar(191) not null"),
        ("name_lc", "varchar(254)"),
        ("url", "varchar(254)"),
        ("type", "integer not null default 1"),
        ("name_html", "varchar(254)"),
        ("description", "text"),
        ("nusers", INT),
        ("country", "varchar(254)"),
        ("total_credit", DOUBLE),
        ("expavg_credit", DOUBLE),
        ("expavg_time", DOUBLE),
        ("seti_id", INT),
        ("ping_user", INT),
        ("ping_time", "integer unsigned not null default 0"),
        ("joinable", "tinyint not null default 1"),
        ("mod_time", "timestamp default current_timestamp on update current_timestamp"),
    ],
    "host": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("userid", INT),
        ("rpc_seqno", INT),
        ("rpc_time", INT),
        ("total_credit", DOUBLE),
        ("expavg_credit", DOUBLE),
        ("expavg_time", DOUBLE),
        ("timezone", INT),
        ("domain_name", "varchar(254)"),
        ("serialnum", "varchar(254)"),
        ("last_ip_addr", "varchar(254)"),
        ("nsame_ip_addr", INT),
        ("on_frac", "double not null default 1"),
        ("connected_frac", "double not null default 1"),
        ("active_frac", "double not null default 1"),
        ("cpu_efficiency", "double not null default 1"),
        ("duration_correction_factor", "double not null default 1"),
        ("p_ncpus", "integer not null default 4"),
        ("p_vendor", "varchar(254)"),
        ("p_model", "varchar(254)"),
        ("p_fpops", "double not null default 3e9"),
        ("p_iops", "double not null default 9e9"),
        ("p_membw", DOUBLE),
        ("os_name", "varchar(254)"),
        ("os_version", "varchar(254)"),
        ("m_nbytes", "double not null default 8e9"),
        ("m_cache", DOUBLE),
        ("m_swap", DOUBLE),
        ("d_total", "double not null default 2e11"),
        ("d_free", "double not null default 1e11"),
        ("d_boinc_used_total", DOUBLE),
        ("d_boinc_used_project", DOUBLE),
        ("d_boinc_max", DOUBLE),
        ("n_bwup", DOUBLE),
        ("n_bwdown", DOUBLE),
        ("credit_per_cpu_sec", DOUBLE),
        ("venue", TEXT254),
        ("nresults_today", INT),
        ("avg_turnaround", DOUBLE),
        ("host_cpid", "varchar(254)"),
        ("external_ip_addr", "varchar(254)"),
        ("max_results_day", INT),
        ("error_rate", DOUBLE),
        ("product_name", TEXT254),
        ("gpu_active_frac", "double not null default 1"),
        ("p_ngpus", INT),
        ("p_gpu_fpops", DOUBLE),
        ("misc", "text not null default ''"),
    ],
    "host_app_version": [
        ("host_id", INT),
        ("app_version_id", INT),
        ("pfc_n", DOUBLE),
        ("pfc_avg", DOUBLE),
        ("et_n", DOUBLE),
        ("et_avg", DOUBLE),
        ("et_var", DOUBLE),
        ("et_q", DOUBLE),
        ("max_jobs_per_day", INT),
        ("n_jobs_today", INT),
        ("turnaround_n", DOUBLE),
        ("turnaround_avg", DOUBLE),
        ("turnaround_var", DOUBLE),
        ("turnaround_q", DOUBLE),
        ("consecutive_valid", INT),
    ],
    "workunit": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("appid", INT),
        ("name", "varchar(191) not null"),
        ("xml_doc", "blob"),
        ("batch", INT),
        ("rsc_fpops_est", "double not null default 1e12"),
        ("rsc_fpops_bound", "double not null default 1e14"),
        ("rsc_memory_bound", "double not null default 5e8"),
        ("rsc_disk_bound", "double not null default 1e9"),
        ("need_validate", "smallint not null default 0"),
        ("canonical_resultid", INT),
        ("canonical_credit", DOUBLE),
        ("transition_time", INT),
        ("delay_bound", "integer not null default 604800"),
        ("error_mask", INT),
        ("file_delete_state", INT),
        ("assimilate_state", INT),
        ("hr_class", INT),
        ("opaque", DOUBLE),
        ("min_quorum", "integer not null default 1"),
        ("target_nresults", "integer not null default 1"),
        ("max_error_results", "integer not null default 3"),
        ("max_total_results", "integer not null default 10"),
        ("max_success_results", "integer not null default 6"),
        ("result_template_file", "varchar(63) not null default 'templates/worker_out'"),
        ("priority", INT),
        ("mod_time", "timestamp default current_timestamp on update current_timestamp"),
        ("rsc_bandwidth_bound", DOUBLE),
        ("fileset_id", INT),
        ("app_version_id", INT),
        ("transitioner_flags", TINY),
        ("size_class", "smallint not null default -1"),
        ("keywords", TEXT254),
        ("app_version_num", INT),
    ],
    "result": [
        ("id", "integer not null auto_increment"),
        ("create_time", INT),
        ("workunitid", INT),
        ("server_state", "integer not null default 2"),
        ("outcome", INT),
        ("client_state", INT),
        ("hostid", INT),
        ("userid", INT),
        ("report_deadline", INT),
        ("sent_time", INT),
        ("received_time", INT),
        ("name", "varchar(191) not null"),
        ("cpu_time", DOUBLE),
        ("xml_doc_in", "blob"),
        ("xml_doc_out", "blob"),
        ("stderr_out", "blob"),
        ("batch", INT),
        ("file_delete_state", INT),
        ("validate_state", INT),
        ("claimed_credit", DOUBLE),
        ("granted_credit", DOUBLE),
        ("opaque", DOUBLE),
        ("random", INT),
        ("app_version_num", INT),
        ("appid", INT),
        ("exit_status", INT),
        ("teamid", INT),
        ("priority", INT),
        ("mod_time", "timestamp default current_timestamp on update current_timestamp"),
        ("elapsed_time", DOUBLE),
        ("flops_estimate", DOUBLE),
        ("app_version_id", INT),
        ("runtime_outlier", TINY),
        ("size_class", "smallint not null default -1"),
        ("peak_working_set_size", DOUBLE),
        ("peak_swap_size", DOUBLE),
        ("peak_disk_usage", DOUBLE),
    ],
    "credit_user": [
        ("userid", INT),
        ("appid", INT),
        ("njobs", INT),
        ("total", DOUBLE),
        ("expavg", DOUBLE),
        ("expavg_time", DOUBLE),
        ("credit_type", INT),
    ],
    "credit_team": [
        ("teamid", INT),
        ("appid", INT),
        ("njobs", INT),
        ("total", DOUBLE),
        ("expavg", DOUBLE),
        ("expavg_time", DOUBLE),
        ("credit_type", INT),
    ],
    "user_deleted": [
        ("userid", INT),
        ("public_cross_project_id", "varchar(254) not null"),
        ("create_time", DOUBLE),
    ],
    "host_deleted": [
        ("hostid", INT),
        ("public_cross_project_id", "varchar(254) not null"),
        ("create_time", DOUBLE),
    ],
    "consent_type": [
        ("id", "integer not null auto_increment"),
        ("shortname", "varchar(191) not null"),
        ("description", "varchar(255) not null default ''"),
        ("enabled", INT),
        ("project_specific", INT),
        ("privacypref", INT),
    ],
    "consent": [
        ("id", "integer not null auto_increment"),
        ("userid", INT),
        ("consent_type_id", INT),
        ("consent_time", INT),
        ("consent_flag", TINY),
        ("consent_not_required", TINY),
        ("source", "varchar(255) not null default ''"),
    ],
}
# Primary keys of the tables without an id column (and the unique keys BOINC adds).
KEYS = {
    "host_app_version": "unique (host_id, app_version_id)",
    "credit_user": "primary key (userid, appid, credit_type)",
    "credit_team": "primary key (teamid, appid, credit_type)",
    "user_deleted": "primary key (userid)",
    "host_deleted": "primary key (hostid)",
}
UNIQUE = {
    "platform": ("name",),
    "app": ("name",),
    "user": ("email_addr", "authenticator"),
    "team": ("name",),
    "workunit": ("name",),
    "result": ("name",),
}

_numbers = itertools.count()


def create_table_sql(table: str) -> str:
    columns = [f"`{name}` {kind}" for name, kind in TABLES[table]]
    columns.append(KEYS.get(table, "primary key (id)"))
    columns += [f"unique (`{column}`)" for column in UNIQUE.get(table, ())]
    return f"CREATE TABLE `{table}` ({', '.join(columns)}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


class BoincDb:
    """A throw-away BOINC database on the test MariaDB server."""

    def __init__(self, server_url: str) -> None:
        url = parse_source_url(server_url)
        self.name = f"boinc_{os.getpid()}_{next(_numbers)}"
        self.url = f"mysql://{url.user}:{url.password}@{url.host}:{url.port}/{self.name}"
        self.conn = pymysql.connect(
            host=url.host,
            port=url.port,
            user=url.user,
            password=url.password,
            autocommit=True,
            charset="utf8mb4",
        )
        self.execute(f"CREATE DATABASE `{self.name}` CHARACTER SET utf8mb4")
        self.execute(f"USE `{self.name}`")
        for table in TABLES:
            self.execute(create_table_sql(table))

    def execute(self, sql: str, params: Any = None) -> None:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, params)

    def executemany(self, sql: str, params: Any) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(sql, params)

    def query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def add(self, table: str, **values: Any) -> int:
        """Insert one row (unnamed columns take their defaults); returns its id."""
        names = ", ".join(f"`{name}`" for name in values)
        marks = ", ".join(["%s"] * len(values))
        with self.conn.cursor() as cursor:
            cursor.execute(f"INSERT INTO `{table}` ({names}) VALUES ({marks})", list(values.values()))
            return int(cursor.lastrowid or values.get("id", 0))

    def clear(self) -> None:
        for table in TABLES:
            self.execute(f"DELETE FROM `{table}`")

    def drop(self) -> None:
        self.execute(f"DROP DATABASE IF EXISTS `{self.name}`")
        self.conn.close()
