"""Which app versions can run on this host, how fast, and whether today's quota allows them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from apps.applications.domain.plan_classes import (
    BUILTIN_PLAN_CLASSES,
    GpuInfo,
    HostResources,
    PlanClassSpec,
    resource_usage,
)
from apps.applications.models import App, AppVersion
from apps.core.db import ModelColumns, update_rows
from apps.core.domain.resources import ProcType
from apps.credit.convert import HAV_STAT_FIELDS, hav_stats, max_jobs_per_day_init
from apps.credit.domain.quota import effective_daily_quota, roll_daily_count
from apps.credit.domain.runtime import FlopsSource, estimate_flops
from apps.credit.domain.stats import HostAppVersionStats
from apps.hosts.models import HostAppVersion
from apps.protocol import ClientAppVersion
from apps.scheduler.domain.policy import VersionOption
from apps.scheduler.queries import host_app_versions_locked
from apps.scheduler.services.catalog import ProjectCatalog, project_catalog
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.hosts import host_instances
from apps.work.domain.states import ServerState
from apps.work.models import Result

BETA_WORK_WITHHELD = (
    "Tasks of test applications ({apps}) go only to volunteers who allow them:"
    ' turn on "Run test applications?" in your project preferences'
)


@dataclass(slots=True)
class HostVersions:
    """Everything the dispatcher needs to know about versions for one RPC."""

    apps: dict[int, App]
    options: dict[int, list[VersionOption]]  # app id -> usable versions
    versions: dict[int, AppVersion] = field(default_factory=dict)  # by id (non-anonymous)
    client_versions: dict[int, ClientAppVersion] = field(default_factory=dict)  # anonymous, by index
    havs: dict[tuple[int, int | None, str], HostAppVersion] = field(default_factory=dict)
    resources_with_versions: set[ProcType] = field(default_factory=set)
    quota_limits: dict[tuple[int, int | None, str], int] = field(default_factory=dict)  # 0 = no quota
    quota_reached: set[int] = field(default_factory=set)  # apps refused today because of it
    dirty_havs: dict[int, HostAppVersion] = field(default_factory=dict)  # rows to write back

    def hav_key(self, option: VersionOption) -> tuple[int, int | None, str]:
        if option.anonymous:
            return (option.app_id, None, option.proc_type.value)
        return (option.app_id, option.key, "")

    def quota_allows(self, option: VersionOption) -> bool:
        """Per job, not only per version choice (BOINC's bug #3073 was checking it once)."""
        key = self.hav_key(option)
        limit = self.quota_limits.get(key, 0)
        if not limit:
            return True
        hav = self.havs.get(key)
        return (hav.n_jobs_today if hav is not None else 0) < limit


def host_resources(ctx: RpcContext) -> HostResources:
    assert ctx.host is not None
    req = ctx.req
    # Plan classes see the effective counts too (as BOINC's plan_class_spec): an mt version
    # is sized for the CPUs the volunteer lets BOINC use, never for a claimed million.
    instances = host_instances(ctx)
    gpus = {}
    for coproc in req.coprocs:
        if coproc.count <= 0 or coproc.type in gpus:
            continue
        props = dict(coproc.properties)
        try:
            capability = int(props.get("major", "0")) * 100 + int(props.get("minor", "0"))
        except ValueError:
            capability = 0
        gpus[coproc.type] = GpuInfo(
            count=instances.count(coproc.type),
            peak_flops=coproc.peak_flops,
            available_ram_mb=coproc.available_ram / 1e6,
            have_opencl=props.get("have_opencl", "0").strip() in ("1", "true"),
            compute_capability=capability,
        )
    return HostResources(p_ncpus=instances.ncpus, p_fpops=ctx.host.p_fpops, gpus=gpus)


def _spec_for(version: AppVersion, named: dict[str, PlanClassSpec]) -> PlanClassSpec:
    """Usage from the version row (resolved when it was added); requirements from its class."""
    base = named.get(version.plan_class) or BUILTIN_PLAN_CLASSES.get(version.plan_class) or PlanClassSpec("")
    return replace(
        base,
        proc_type=ProcType(version.proc_type),
        avg_ncpus=version.avg_ncpus,
        multi_thread=version.multi_thread,
        max_ncpus=version.max_ncpus,
        gpu_usage=version.gpu_usage,
    )


_HAV = ModelColumns(HostAppVersion, "v")


def host_app_versions_lock(ctx: RpcContext) -> None:
    """Load and lock the host's host_app_version rows once for the whole RPC.

    Reports update them and dispatch counts jobs on them; locking them here (by id order,
    this table only) keeps two RPCs of one host from interleaving those updates.
    """
    assert ctx.host is not None
    havs = host_app_versions_locked(ctx.host.id, _HAV)
    ctx.havs = {(h.app_id, h.app_version_id, h.anonymous_proc_type): h for h in havs}


def host_app_versions_save(ctx: RpcContext) -> None:
    """Write the changed host_app_version rows (their whole statistics, into the RPC's
    write batch) and forget them."""
    if ctx.dirty_havs:
        update_rows(HostAppVersion, list(ctx.dirty_havs.values()), HAV_STAT_FIELDS, batch=ctx.writes)
        ctx.dirty_havs.clear()


def host_versions(ctx: RpcContext) -> HostVersions:
    """Usable versions per app, with projected FLOPS (CreditNew's runtime estimates)."""
    host = ctx.host
    assert host is not None
    catalog = project_catalog(ctx.project)
    apps = catalog.apps
    ctx.apps = apps
    result = HostVersions(apps=apps, options={app_id: [] for app_id in apps})
    result.havs = ctx.havs
    result.dirty_havs = ctx.dirty_havs
    resources = host_resources(ctx)
    if ctx.req.is_anonymous_platform:
        _anonymous_options(ctx, result, resources)
    else:
        _project_options(ctx, result, resources, catalog)
    _roll_daily_counts(ctx, result)
    _apply_quotas(ctx, result)
    return result


def _project_options(
    ctx: RpcContext, out: HostVersions, resources: HostResources, catalog: ProjectCatalog
) -> None:
    named = plan_class_specs(catalog)
    platforms = set(ctx.req.platforms)
    for name in platforms:
        out.resources_with_versions |= catalog.platform_resources.get(name, frozenset())
    assert ctx.account is not None
    offered = catalog.current_versions if ctx.prefs.allow_beta_work else catalog.released_versions
    for version in offered:
        option = version_option(ctx, version, resources=resources, named=named, havs=out.havs)
        if option is None:
            continue
        out.versions[version.id] = version
        out.options[version.app_id].append(option)


def plan_class_specs(catalog: ProjectCatalog) -> dict[str, PlanClassSpec]:
    """The project's own plan classes by name."""
    return {
        pc.name: PlanClassSpec(
            name=pc.name,
            proc_type=ProcType(pc.proc_type),
            min_gpu_ram_mb=pc.min_gpu_ram_mb,
            needs_opencl=pc.needs_opencl,
            min_compute_capability=pc.min_compute_capability,
        )
        for pc in catalog.plan_classes
    }


def version_option(
    ctx: RpcContext,
    version: AppVersion,
    *,
    resources: HostResources,
    named: dict[str, PlanClassSpec],
    havs: dict[tuple[int, int | None, str], HostAppVersion],
) -> VersionOption | None:
    """How this host would run ``version``, or None if it cannot (platform, client version,
    plan class)."""
    client_version = ctx.req.client_version
    if version.platform.name not in ctx.req.platforms:
        return None
    if version.min_core_version and client_version < version.min_core_version:
        return None
    if version.max_core_version and client_version > version.max_core_version:
        return None
    usage = resource_usage(_spec_for(version, named), resources)
    if usage is None:
        return None
    hav = havs.get((version.app_id, version.id, ""))
    flops = estimate_flops(
        peak_flops=usage.peak_flops,
        hav_et=hav.et if hav else None,
        hav_pfc=hav.pfc if hav else None,
        av_pfc=version.pfc,
    ).flops
    return VersionOption(
        key=version.id,
        app_id=version.app_id,
        proc_type=usage.proc_type,
        projected_flops=flops,
        peak_flops=usage.peak_flops,
        avg_ncpus=usage.avg_ncpus,
        gpu_usage=usage.gpu_usage,
    )


def _anonymous_options(ctx: RpcContext, out: HostVersions, resources: HostResources) -> None:
    """Anonymous platform: the client's own app_versions are the menu (BOINC's -2/-3/-4 version ids)."""
    by_name = {a.name: a for a in out.apps.values()}
    assert ctx.account is not None
    allow_beta = ctx.prefs.allow_beta_work
    for index, cav in enumerate(ctx.req.app_versions):
        app = by_name.get(cav.app_name)
        if app is None:
            continue
        gpu = cav.coprocs[0] if cav.coprocs else None
        proc_type = gpu.type if gpu else ProcType.CPU
        gpu_usage = gpu.count if gpu else 0.0
        out.resources_with_versions.add(proc_type)
        if app.beta and not allow_beta:
            continue  # a beta app's jobs go only to users who allow beta work
        gpu_info = resources.gpus.get(proc_type) if gpu else None
        if gpu and gpu_info is None:
            continue
        peak = cav.avg_ncpus * resources.p_fpops + (gpu_usage * gpu_info.peak_flops if gpu_info else 0.0)
        hav = out.havs.get((app.id, None, proc_type.value))
        # The client's own FLOPS figure (6.12+ clients always send one), corrected by this
        # host's elapsed-time statistics once they pass the threshold (docs/credit.md).
        claimed = cav.flops if cav.flops > 0 else peak
        estimate = estimate_flops(peak_flops=claimed, hav_et=hav.et if hav else None)
        flops = estimate.flops
        scale = claimed / flops if estimate.source is FlopsSource.HOST_ET and flops > 0 else 1.0
        out.client_versions[index] = cav
        out.options[app.id].append(
            VersionOption(
                key=index,
                app_id=app.id,
                proc_type=proc_type,
                projected_flops=flops,
                peak_flops=peak,
                avg_ncpus=cav.avg_ncpus,
                gpu_usage=gpu_usage,
                anonymous=True,
                rsc_fpops_scale=scale,
            )
        )


def beta_work_withheld(ctx: RpcContext) -> str | None:
    """Why no job of a beta app was sent, if that is a reason: the user does not allow beta
    work, and a beta app this host has a platform for has unsent jobs.

    For the no-work message only: it may cost a query per beta app, and runs only when
    nothing was sent to a user who does not allow beta work in a project with beta apps.
    """
    account = ctx.account
    if account is None or ctx.prefs.allow_beta_work:
        return None
    catalog = project_catalog(ctx.project)
    beta_apps = {app.id: app for app in catalog.apps.values() if app.beta}
    if not beta_apps:
        return None
    if ctx.req.is_anonymous_platform:
        names = {cav.app_name for cav in ctx.req.app_versions}
        runnable = {app_id for app_id, app in beta_apps.items() if app.name in names}
    else:
        platforms = set(ctx.req.platforms)
        runnable = {
            v.app_id
            for v in catalog.current_versions
            if v.app_id in beta_apps and v.platform.name in platforms
        }
    waiting = [
        beta_apps[app_id]
        for app_id in sorted(runnable)
        if Result.objects.filter(app_id=app_id, server_state=ServerState.UNSENT).exists()
    ]
    if not waiting:
        return None
    return BETA_WORK_WITHHELD.format(apps=", ".join(str(app) for app in waiting))


def _roll_daily_counts(ctx: RpcContext, out: HostVersions) -> None:
    """On the first request of a new UTC day every host_app_version's n_jobs_today restarts,
    not only those of versions offered now: a GPU absent this morning keeps no count from
    yesterday into the afternoon."""
    if ctx.previous_rpc_day == ctx.now.date():
        return
    for hav in out.havs.values():
        rolled = roll_daily_count(hav_stats(hav), last_rpc_day=ctx.previous_rpc_day, now=ctx.now_unix)
        if rolled.n_jobs_today != hav.n_jobs_today:
            hav.n_jobs_today = rolled.n_jobs_today
            out.dirty_havs[hav.pk] = hav


def _apply_quotas(ctx: RpcContext, out: HostVersions) -> None:
    """Each option's daily job limit (CreditNew's host punishment), checked per job later.

    The limit is max_jobs_per_day × CPUs (or GPUs × gpu_multiplier), and 1 when the host
    has been punished down to 1. The CPUs are the reported ones (capped), not the share the
    volunteer's preferences allow: BOINC's scaled_max_jobs_per_day uses host.p_ncpus.
    """
    instances = host_instances(ctx)
    for app_id, options in out.options.items():
        app = out.apps[app_id]
        init = max_jobs_per_day_init(app, ctx.project)
        for option in options:
            key = out.hav_key(option)
            hav = out.havs.get(key)
            stats = hav_stats(hav) if hav is not None else HostAppVersionStats()
            out.quota_limits[key] = effective_daily_quota(
                stats,
                max_jobs_per_day_init=init,
                is_gpu=option.proc_type.is_gpu,
                ncpus=instances.p_ncpus,
                ngpus=instances.count(option.proc_type),
                gpu_multiplier=ctx.project.gpu_multiplier,
            )
