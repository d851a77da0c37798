"""Which BOINC schemas the importer knows, and how it tells.

BOINC's database has no version table. Its project directory may hold a ``db_revision``
file (the number of the last html/ops/db_update.php update applied; ``upgrade`` writes
it), but it is missing or stale on many servers. So the columns decide: every table
the importer reads must have every column it reads, which holds for the schema of
update_9_12_2018 (revision 27028: the consent tables) and every later one up to
update_5_2_2026b (27032). Columns added later are ignored. A db_revision file naming a
revision outside that range is refused too, since its tables may mean something else.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

OLDEST_REVISION = 27028  # update_9_12_2018: consent, consent_type
NEWEST_REVISION = 27032  # update_5_2_2026b

REQUIRED_COLUMNS: dict[str, frozenset[str]] = {
    "platform": frozenset({"id", "name", "user_friendly_name", "deprecated"}),
    "app": frozenset(
        {
            "id",
            "create_time",
            "name",
            "user_friendly_name",
            "deprecated",
            "weight",
            "beta",
            "min_avg_pfc",
            "host_scale_check",
            "non_cpu_intensive",
            "homogeneous_redundancy",
            "homogeneous_app_version",
        }
    ),
    "app_version": frozenset(
        {
            "id",
            "create_time",
            "appid",
            "version_num",
            "platformid",
            "xml_doc",
            "min_core_version",
            "max_core_version",
            "deprecated",
            "plan_class",
            "pfc_n",
            "pfc_avg",
            "pfc_scale",
            "expavg_credit",
            "expavg_time",
            "beta",
        }
    ),
    "team": frozenset(
        {
            "id",
            "create_time",
            "userid",
            "name",
            "url",
            "type",
            "description",
            "country",
            "total_credit",
            "expavg_credit",
            "expavg_time",
        }
    ),
    "user": frozenset(
        {
            "id",
            "create_time",
            "email_addr",
            "name",
            "authenticator",
            "country",
            "total_credit",
            "expavg_credit",
            "expavg_time",
            "global_prefs",
            "project_prefs",
            "teamid",
            "url",
            "show_hosts",
            "cross_project_id",
            "passwd_hash",
        }
    ),
    "host": frozenset(
        {
            "id",
            "create_time",
            "userid",
            "rpc_seqno",
            "rpc_time",
            "total_credit",
            "expavg_credit",
            "expavg_time",
            "timezone",
            "domain_name",
            "last_ip_addr",
            "on_frac",
            "connected_frac",
            "active_frac",
            "gpu_active_frac",
            "p_ncpus",
            "p_vendor",
            "p_model",
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
            "credit_per_cpu_sec",
            "venue",
            "avg_turnaround",
            "host_cpid",
            "max_results_day",
            "error_rate",
        }
    ),
    "host_app_version": frozenset(
        {
            "host_id",
            "app_version_id",
            "pfc_n",
            "pfc_avg",
            "et_n",
            "et_avg",
            "et_var",
            "et_q",
            "max_jobs_per_day",
            "n_jobs_today",
            "turnaround_n",
            "turnaround_avg",
            "turnaround_var",
            "turnaround_q",
            "consecutive_valid",
        }
    ),
    "workunit": frozenset(
        {
            "id",
            "create_time",
            "appid",
            "name",
            "xml_doc",
            "batch",
            "rsc_fpops_est",
            "rsc_fpops_bound",
            "rsc_memory_bound",
            "rsc_disk_bound",
            "rsc_bandwidth_bound",
            "need_validate",
            "canonical_resultid",
            "canonical_credit",
            "transition_time",
            "delay_bound",
            "error_mask",
            "file_delete_state",
            "assimilate_state",
            "min_quorum",
            "target_nresults",
            "max_error_results",
            "max_total_results",
            "max_success_results",
            "result_template_file",
            "priority",
            "app_version_id",
            "hr_class",
            "transitioner_flags",
            "keywords",
        }
    ),
    "result": frozenset(
        {
            "id",
            "create_time",
            "workunitid",
            "server_state",
            "outcome",
            "client_state",
            "hostid",
            "userid",
            "report_deadline",
            "sent_time",
            "received_time",
            "name",
            "cpu_time",
            "xml_doc_in",
            "xml_doc_out",
            "stderr_out",
            "file_delete_state",
            "validate_state",
            "claimed_credit",
            "granted_credit",
            "appid",
            "exit_status",
            "priority",
            "elapsed_time",
            "flops_estimate",
            "app_version_id",
            "runtime_outlier",
            "peak_working_set_size",
        }
    ),
    "assignment": frozenset({"id", "create_time", "target_id", "target_type", "multi", "workunitid"}),
    "credit_user": frozenset({"userid", "appid", "njobs", "total", "expavg", "expavg_time", "credit_type"}),
    "credit_team": frozenset({"teamid", "appid", "njobs", "total", "expavg", "expavg_time", "credit_type"}),
    "user_deleted": frozenset({"userid", "public_cross_project_id", "create_time"}),
    "host_deleted": frozenset({"hostid", "public_cross_project_id", "create_time"}),
    "consent": frozenset({"id", "userid", "consent_type_id", "consent_time", "consent_flag"}),
    "consent_type": frozenset({"id", "shortname", "enabled"}),
    "batch": frozenset(
        {
            "id",
            "user_id",
            "create_time",
            "logical_start_time",
            "logical_end_time",
            "est_completion_time",
            "njobs",
            "fraction_done",
            "nerror_jobs",
            "state",
            "completion_time",
            "credit_estimate",
            "credit_canonical",
            "name",
            "app_id",
            "description",
            "expire_time",
        }
    ),
    "user_submit": frozenset(
        {"user_id", "quota", "logical_start_time", "submit_all", "manage_all", "max_jobs_in_progress"}
    ),
    "user_submit_app": frozenset({"user_id", "app_id", "manage"}),
}


def schema_problems(present: Mapping[str, Collection[str]]) -> list[str]:
    """What keeps a database with these tables (name → its columns) from being imported;
    empty when every table and column the importer reads is there."""
    problems = []
    for table, needed in REQUIRED_COLUMNS.items():
        if table not in present:
            problems.append(f"table {table} is missing")
            continue
        missing = sorted(needed - set(present[table]))
        if missing:
            problems.append(f"table {table} lacks column(s) {', '.join(missing)}")
    return problems


def db_revision_problem(revision: int | None) -> str | None:
    """Why a project's db_revision file rules the import out, or None (also without one)."""
    if revision is None or OLDEST_REVISION <= revision <= NEWEST_REVISION:
        return None
    if revision < OLDEST_REVISION:
        return (
            f"db_revision {revision} is older than {OLDEST_REVISION} (update_9_12_2018); "
            "bring the database up to date with BOINC's html/ops/upgrade_db.php first"
        )
    return (
        f"db_revision {revision} is newer than {NEWEST_REVISION} (update_5_2_2026b), "
        "the newest BOINC schema this importer knows"
    )


def schema_refusal(present: Mapping[str, Collection[str]], revision: int | None) -> str | None:
    """The whole message refusing this database, or None if it can be imported."""
    problems = schema_problems(present)
    revision_problem = db_revision_problem(revision)
    if revision_problem:
        problems.insert(0, revision_problem)
    if not problems:
        return None
    return (
        "This is not a BOINC database schema the importer knows (BOINC server schema "
        f"revisions {OLDEST_REVISION}-{NEWEST_REVISION}, from September 2018 on): " + "; ".join(problems)
    )
