"""Reads about hosts that pages and admin views show."""

from __future__ import annotations

from apps.hosts.domain.hr import HostDescription, HrCensus
from apps.hosts.models import Host

# Hosts at or below this recent average credit are not counted (BOINC's hr_info: they do
# not compute for the project now).
ACTIVE_RECENT_CREDIT = 1.0


def hr_census(*, project_id: int) -> HrCensus:
    """How much computing each homogeneous redundancy class has among the project's active
    hosts: their number, recent average credit and CPU FLOPS, fine and coarse."""
    census = HrCensus()
    rows = Host.objects.filter(project_id=project_id, expavg_credit__gt=ACTIVE_RECENT_CREDIT).values_list(
        "os_name", "p_vendor", "p_model", "expavg_credit", "p_ncpus", "p_fpops"
    )
    for os_name, vendor, model, recent_credit, ncpus, fpops in rows.iterator(chunk_size=2000):
        census.add(HostDescription(os_name, vendor, model), recent_credit=recent_credit, flops=ncpus * fpops)
    return census
