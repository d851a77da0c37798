"""Adaptive replication and reliable hosts, for one RPC (the rules: domain/replication.py).

The dispatcher asks three things of a ``Replication``: whether a result may go to this
host's version (a result that needs a reliable host goes only to reliable ones, while any
host with a reliable version of its app has been active lately); the deadline it gets
there; and, once it is sent, whether its workunit must be replicated. The raised
workunits are written by ``flush``, conditionally, with the transitioner called at once
to create their replicas.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.db.models import F, Q
from django.db.models.functions import Greatest

from apps.credit.convert import max_jobs_per_day_init
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project
from apps.scheduler.domain.policy import VersionOption
from apps.scheduler.domain.replication import (
    CONS_VALID_RELIABLE,
    MIN_HOST_SAMPLES,
    HostVersionRecord,
    ReliableConfig,
    needs_reliable,
    reliable,
    reliable_delay_bound,
    replicate_on_send,
    trusted,
    turnaround_factor,
)
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.versions import HostVersions
from apps.work.models import Result, Workunit

# A reliable host app version counts as available when its host made an RPC this recently;
# without one, results needing a reliable host go to any host rather than wait for none.
RELIABLE_ACTIVE_WINDOW = timedelta(days=1)


def reliable_config(project: Project) -> ReliableConfig:
    return ReliableConfig(
        max_avg_turnaround=project.reliable_max_avg_turnaround,
        max_error_rate=project.reliable_max_error_rate,
        on_priority=project.reliable_on_priority,
        reduced_delay_bound=project.reliable_reduced_delay_bound,
    )


class Replication:
    """Trust, reliability and the workunits to replicate, for one RPC."""

    def __init__(self, ctx: RpcContext, versions: HostVersions, rng: random.Random | None = None) -> None:
        self.ctx = ctx
        self.versions = versions
        self.config = reliable_config(ctx.project)
        self.rng = rng or random.Random()
        host = ctx.host
        assert host is not None
        self.factor = turnaround_factor(host.os_name, host.p_vendor)
        self._reliable: dict[tuple[int, int | None, str], bool] = {}
        self._others_reliable: dict[int, bool] = {}
        self.raised: dict[int, list[int]] = {}  # app id -> workunit ids to replicate

    def _record(self, option: VersionOption) -> HostVersionRecord:
        hav = self.versions.havs.get(self.versions.hav_key(option))
        if hav is None:
            return HostVersionRecord()
        return HostVersionRecord(
            consecutive_valid=hav.consecutive_valid,
            turnaround_n=hav.turnaround.n,
            turnaround_avg=hav.turnaround.avg,
            error_rate=hav.error_rate,
            max_jobs_per_day=hav.max_jobs_per_day,
        )

    def is_reliable(self, option: VersionOption) -> bool:
        key = self.versions.hav_key(option)
        known = self._reliable.get(key)
        if known is None:
            app = self.versions.apps[option.app_id]
            known = self._reliable[key] = reliable(
                self._record(option),
                self.config,
                full_quota=max_jobs_per_day_init(app, self.ctx.project),
                factor=self.factor,
            )
        return known

    def needs_reliable(self, result: Result) -> bool:
        return not self.versions.apps[result.app_id].beta and needs_reliable(result.priority, self.config)

    def allows(self, result: Result, option: VersionOption) -> bool:
        """False for a result that needs a reliable host when this version is not reliable
        and some other active host has a reliable version of the app."""
        if not self.needs_reliable(result) or self.is_reliable(option):
            return True
        return not self._reliable_elsewhere(result.app_id)

    def delay_bound(self, result: Result, option: VersionOption, est_dur: float) -> float:
        """The result's deadline from now: reduced for a retry on a reliable host."""
        delay_bound = result.workunit.delay_bound
        if self.needs_reliable(result) and self.is_reliable(option):
            return reliable_delay_bound(delay_bound, self.config, est_dur)
        return delay_bound

    def on_send(self, result: Result, option: VersionOption) -> None:
        """Decide, for a result just sent, whether its workunit must be replicated."""
        app = self.versions.apps[result.app_id]
        if not app.adaptive_replication:
            return
        raise_it = replicate_on_send(
            adaptive=True,
            app_target_nresults=app.target_nresults,
            wu_target_nresults=result.workunit.target_nresults,
            trusted=trusted(self._record(option).consecutive_valid, self.rng.random()),
        )
        if raise_it:
            self.raised.setdefault(app.id, []).append(result.workunit_id)

    def flush(self) -> None:
        """Raise the replicated workunits to their app's quorum, and have the transitioner
        create their replicas now. Only a workunit still at one result is changed."""
        for app_id, wu_ids in self.raised.items():
            app = self.versions.apps[app_id]
            Workunit.objects.filter(id__in=wu_ids, target_nresults=1).update(
                min_quorum=max(app.min_quorum, 2),
                target_nresults=app.target_nresults,
                max_total_results=Greatest(F("max_total_results"), app.target_nresults),
            )
            self.ctx.transition_time_lower(wu_ids, self.ctx.now)
        self.raised.clear()

    def _reliable_elsewhere(self, app_id: int) -> bool:
        known = self._others_reliable.get(app_id)
        if known is None:
            host = self.ctx.host
            assert host is not None
            qs = HostAppVersion.objects.filter(
                app_id=app_id,
                consecutive_valid__gte=CONS_VALID_RELIABLE,
                host__rpc_time__gte=self.ctx.now - RELIABLE_ACTIVE_WINDOW,
            ).exclude(host_id=host.id)
            if self.config.max_avg_turnaround > 0:
                qs = qs.filter(
                    Q(turnaround_n__lte=MIN_HOST_SAMPLES)
                    | Q(turnaround_avg__lte=self.config.max_avg_turnaround * 1.8)
                )
            if self.config.max_error_rate > 0:
                qs = qs.filter(error_rate__lte=self.config.max_error_rate)
            known = self._others_reliable[app_id] = qs.exists()
        return known
