"""Non-CPU-intensive apps: one job of each such app per host (BOINC's send_nci).

Such an app (a monitor, a network probe) runs beside the host's computing and is flagged to
the client in its ``<app>``. A host gets a job of one only while it has none in progress;
the general and locality sources never send them.
"""

from __future__ import annotations

from apps.scheduler.queries import apps_busy_on_host
from apps.scheduler.services.dispatch import Dispatcher, unsent_window


def send_nci_work(dispatcher: Dispatcher) -> None:
    """A job of each non-CPU-intensive app this host can run and has none of (no query when
    the project has no such app)."""
    versions = dispatcher.versions
    apps = [
        app_id
        for app_id, options in sorted(versions.options.items())
        if options and versions.apps[app_id].non_cpu_intensive
    ]
    if not apps:
        return
    host = dispatcher.ctx.host
    assert host is not None
    busy = apps_busy_on_host(host.id, apps)
    for app_id in apps:
        if app_id in busy or not dispatcher.need.work_needed():
            continue
        # The jobs of such an app are alike: if the first cannot go, none can.
        # Including locality-file work, which the locality source leaves to this one.
        window = unsent_window(
            dispatcher.ctx, [app_id], None, 1, homogeneity=dispatcher.homogeneity, with_locality_work=True
        )
        if window:
            dispatcher.try_send(window[0])
