"""The main feeder's cross-version normalization, every 10 minutes (docs/credit.md)."""

from __future__ import annotations

from django.db import transaction

from apps.applications.models import App, AppVersion
from apps.core.domain.average import Average
from apps.credit.convert import credit_policy
from apps.credit.domain.cross_project import PlanClassScale as PlanClassScaleValue
from apps.credit.domain.normalization import VersionPfc, normalize_app_versions, version_pfc_median
from apps.credit.domain.policy import CreditPolicy
from apps.credit.models import PlanClassScale
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project
from apps.projects.services import DaemonPass, daemon_lock


def credit_normalize_app(*, app_id: int) -> int:
    """Recompute the app's versions' pfc_scale and app.min_avg_pfc (docs/credit.md).

    Rows are locked while read and written, so a concurrent validator's pfc sample lands
    either before (and is counted) or after (and is kept). With the project's
    ``credit_version_median`` each version's pfc average first becomes the median of its
    hosts' averages (``version_pfc_median``, read before the locks are taken). Returns the
    rows changed.
    """
    app = App.objects.select_related("project").get(id=app_id)
    policy = credit_policy(app)
    medians = _host_medians(app, policy) if policy.version_median else {}
    with transaction.atomic():
        # no_key: as the validator locks them (apps.credit.queries), so the foreign-key
        # checks of the results a scheduler RPC or the transitioner commits do not wait here.
        app = App.objects.select_for_update(no_key=True).get(id=app_id)
        versions = list(
            AppVersion.objects.select_for_update(no_key=True).filter(app=app, deprecated=False).order_by("id")
        )
        changed = 0
        for version in versions:
            median = medians.get(version.id)
            if median is not None and median != version.pfc_avg:
                version.pfc_avg = median
                version.save(update_fields=["pfc_avg"])
                changed += 1
        cross = [
            PlanClassScaleValue(
                plan_class=p.plan_class, scale=p.scale, weight=p.weight, n_versions=p.n_versions
            )
            for p in PlanClassScale.objects.all()
        ]
        result = normalize_app_versions(
            [VersionPfc(v.id, v.is_gpu, v.pfc, v.plan_class) for v in versions],
            policy=policy,
            cross_project=cross,
        )
        if result.min_avg_pfc is not None and result.min_avg_pfc != app.min_avg_pfc:
            app.min_avg_pfc = result.min_avg_pfc
            app.save(update_fields=["min_avg_pfc"])
            changed += 1
        by_id = {v.id: v for v in versions}
        for scale in result.scales:
            scaled = by_id.get(scale.app_version_id)
            if scaled is not None and scaled.pfc_scale != scale.pfc_scale:
                scaled.pfc_scale = scale.pfc_scale
                scaled.save(update_fields=["pfc_scale"])
                changed += 1
    return changed


def _host_medians(app: App, policy: CreditPolicy) -> dict[int, float]:
    """Each current version's median of its host_app_version pfc averages
    (``version_pfc_median``; versions without any host sample are left out)."""
    medians = {}
    for version_id in AppVersion.objects.filter(app=app, deprecated=False).values_list("id", flat=True):
        rows = HostAppVersion.objects.filter(app_version_id=version_id, pfc_n__gt=0).values_list(
            "pfc_n", "pfc_avg"
        )
        median = version_pfc_median(
            (Average(n=n, avg=avg) for n, avg in rows.iterator(chunk_size=2000)), policy=policy
        )
        if median is not None:
            medians[version_id] = median
    return medians


def credit_normalize_project(*, project: Project) -> DaemonPass:
    """The main feeder's pass for every app of the project; one at a time across workers."""
    with daemon_lock(f"credit.normalize:{project.pk}") as held:
        if not held:
            return DaemonPass(message="skipped: another feeder pass is running")
        app_ids = list(App.objects.filter(project=project, deprecated=False).values_list("id", flat=True))
        changed = sum(credit_normalize_app(app_id=app_id) for app_id in app_ids)
    return DaemonPass(items=changed, message=f"{len(app_ids)} apps")
