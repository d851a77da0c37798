"""The credit statistics the server keeps (the tables CreditNew's design adds), as values.

The validator service loads these from the AppVersion and HostAppVersion rows, passes
them to the domain functions, and writes back the values those return. "Not defined"
is 0, as in BOINC and in the model columns (``min_avg_pfc``, ``pfc_scale``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apps.core.domain.average import Average, AverageVar

# BOINC's initial error rate of a host or app version ("replicate for a while").
ERROR_RATE_INIT = 0.1


@dataclass(frozen=True, slots=True)
class AppVersionStats:
    """app_version.pfc (average of PFC/fpops_est) and app_version.pfc_scale (0 = undefined)."""

    pfc: Average = field(default_factory=Average)
    pfc_scale: float = 0.0


@dataclass(frozen=True, slots=True)
class HostAppVersionStats:
    """The design's host_app_version row, for a real version or an anonymous (-2..-6) one.

    pfc         average of PFC/fpops_est of this host's validated jobs
    et          average of elapsed time/fpops_est (feeds the runtime estimate)
    turnaround  average of received - sent, seconds
    host_scale_time   host scaling is not used before this Unix time
    scale_probation   no host scaling while set; initially set
    max_jobs_per_day  per-device daily quota; 0 = not initialised (use the app's value)
    n_jobs_today      jobs sent on the current UTC day
    consecutive_valid BOINC's counter, used by the BOINC probation rule
    """

    pfc: Average = field(default_factory=Average)
    et: AverageVar = field(default_factory=AverageVar)
    turnaround: AverageVar = field(default_factory=AverageVar)
    host_scale_time: float = 0.0
    scale_probation: bool = True
    error_rate: float = ERROR_RATE_INIT
    max_jobs_per_day: int = 0
    n_jobs_today: int = 0
    consecutive_valid: int = 0
