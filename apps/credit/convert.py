"""Model rows ↔ the pure credit values (apps.credit.domain), in one place."""

from __future__ import annotations

from dataclasses import replace

from apps.applications.models import App, AppVersion, CreditPolicyChoices
from apps.core.domain.average import APP_VERSION_AVERAGE, HOST_AVERAGE
from apps.credit.domain.policy import CreditPolicy, Rule
from apps.credit.domain.stats import AppVersionStats, HostAppVersionStats
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project

HAV_STAT_FIELDS = [
    "pfc_n",
    "pfc_avg",
    "et_n",
    "et_avg",
    "et_var",
    "et_q",
    "turnaround_n",
    "turnaround_avg",
    "turnaround_var",
    "turnaround_q",
    "host_scale_time",
    "scale_probation",
    "error_rate",
    "max_jobs_per_day",
    "n_jobs_today",
    "consecutive_valid",
]


def _rule(choice: str) -> Rule:
    return Rule.BOINC if choice == CreditPolicyChoices.BOINC else Rule.SEED


def credit_policy(app: App, project: Project | None = None) -> CreditPolicy:
    """The app's credit options (the design's rules by default, BOINC's where chosen) and its
    project's cheat bounds. ``project`` is the app's, when the caller holds it already."""
    project = project or app.project
    return CreditPolicy(
        host_scale_check=app.host_scale_check,
        probation_rule=_rule(app.probation_policy),
        grant_rule=_rule(app.granted_credit_policy),
        normalization_rule=_rule(app.normalization_policy),
        runtime_outlier_check=app.runtime_outlier_check,
        max_granted_credit=app.max_granted_credit,
        host_scale_max=project.credit_host_scale_max,
        host_average=replace(HOST_AVERAGE, limit=project.credit_host_sample_cap),
        version_average=replace(APP_VERSION_AVERAGE, limit=project.credit_version_sample_cap),
        version_median=project.credit_version_median,
        claim_cap=project.credit_claim_cap,
    )


def max_jobs_per_day_init(app: App, project: Project) -> int:
    """The app's initial daily quota per device, else the project's (docs/credit.md)."""
    return app.max_jobs_per_day_init or project.daily_result_quota


def hav_stats(hav: HostAppVersion) -> HostAppVersionStats:
    return HostAppVersionStats(
        pfc=hav.pfc,
        et=hav.et,
        turnaround=hav.turnaround,
        host_scale_time=hav.host_scale_time,
        scale_probation=hav.scale_probation,
        error_rate=hav.error_rate,
        max_jobs_per_day=hav.max_jobs_per_day,
        n_jobs_today=hav.n_jobs_today,
        consecutive_valid=hav.consecutive_valid,
    )


def hav_apply(hav: HostAppVersion, stats: HostAppVersionStats) -> None:
    """Write the values back onto the row (the caller saves ``HAV_STAT_FIELDS``)."""
    hav.pfc = stats.pfc
    hav.et = stats.et
    hav.turnaround = stats.turnaround
    hav.host_scale_time = stats.host_scale_time
    hav.scale_probation = stats.scale_probation
    hav.error_rate = stats.error_rate
    hav.max_jobs_per_day = stats.max_jobs_per_day
    hav.n_jobs_today = stats.n_jobs_today
    hav.consecutive_valid = stats.consecutive_valid


def app_version_stats(version: AppVersion) -> AppVersionStats:
    return AppVersionStats(pfc=version.pfc, pfc_scale=version.pfc_scale)
