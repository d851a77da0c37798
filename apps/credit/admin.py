"""Admin for per-app credit, cross-project normalization, and the credit view of each app.

The credit view (``admin:credit_app_credit``, linked from the App change page) shows an
app's version scales, min_avg_pfc, hosts on scale probation and the spread of recently
granted credit, and can recompute the normalization at once. It hangs off the
PlanClassScale admin's URLs because the App admin (applications) may not import credit.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from apps.applications.models import App
from apps.core import clock
from apps.credit.cross_project_services import app_credit_recompute
from apps.credit.domain.distribution import CreditDistribution
from apps.credit.models import PlanClassScale, ScaleSource, TeamAppCredit, UserAppCredit
from apps.credit.selectors import app_credit_overview


@admin.register(UserAppCredit)
class UserAppCreditAdmin(admin.ModelAdmin):
    list_display = ["account", "app", "njobs", "total", "expavg"]
    list_filter = ["app"]
    raw_id_fields = ["account"]
    list_select_related = ["account", "app"]
    show_full_result_count = False


@admin.register(TeamAppCredit)
class TeamAppCreditAdmin(admin.ModelAdmin):
    list_display = ["team", "app", "njobs", "total", "expavg"]
    list_filter = ["app"]
    raw_id_fields = ["team"]
    list_select_related = ["team", "app"]


@admin.register(ScaleSource)
class ScaleSourceAdmin(admin.ModelAdmin):
    """External exports (``/api/v1/projects/<slug>/app_version_scales/`` or
    ``/<slug>/app_version_scales.xml`` of another portal, or any file in that format)."""

    list_display = ["url", "enabled", "last_fetch", "last_error"]
    list_filter = ["enabled"]
    readonly_fields = ["last_fetch", "last_error"]


# --- the credit view of one app -------------------------------------------------------------

CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 600, 160, 24


@dataclass(frozen=True, slots=True)
class Bar:
    """One histogram bar in SVG user units, with the credit range and count it stands for."""

    x: float
    y: float
    width: float
    height: float
    lo: float
    hi: float
    count: int


def histogram_bars(distribution: CreditDistribution | None) -> list[Bar]:
    if distribution is None or not distribution.bins:
        return []
    top = max(b.count for b in distribution.bins)
    plot_h = CHART_HEIGHT - 2 * CHART_PAD
    width = (CHART_WIDTH - 2 * CHART_PAD) / len(distribution.bins)
    bars = []
    for i, b in enumerate(distribution.bins):
        h = plot_h * b.count / top
        bars.append(Bar(CHART_PAD + i * width, CHART_PAD + plot_h - h, width - 1, h, b.lo, b.hi, b.count))
    return bars


def _probation_url(app: App) -> str:
    changelist = reverse("admin:hosts_hostappversion_changelist")
    return f"{changelist}?app__id__exact={app.pk}&scale_probation__exact=1"


def _recompute(model_admin: admin.ModelAdmin, request: HttpRequest, app: App) -> None:
    outcome = app_credit_recompute(app_id=app.pk, now=clock.now())
    cross = outcome.cross_project
    if cross is None:
        text = (
            f"Factors not refreshed: another cross-project pass is running. "
            f"{outcome.rows_changed} row(s) of {app.name} changed with the stored factors."
        )
        model_admin.message_user(request, text, messages.WARNING)
        return
    text = (
        f"Recomputed: {len(cross.plan_classes)} plan-class factor(s) from {cross.rows} version rows "
        f"({cross.sources_failed} source(s) failed); {outcome.rows_changed} row(s) of {app.name} changed."
    )
    model_admin.message_user(request, text, messages.WARNING if cross.sources_failed else messages.SUCCESS)


@admin.register(PlanClassScale)
class PlanClassScaleAdmin(admin.ModelAdmin):
    list_display = ["plan_class", "scale", "weight", "n_versions", "computed_time"]
    readonly_fields = ["plan_class", "scale", "weight", "n_versions", "computed_time"]

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.app_credit_view)
        return [path("app/<int:app_id>/", view, name="credit_app_credit"), *super().get_urls()]

    def app_credit_view(self, request: HttpRequest, app_id: int) -> HttpResponse:
        """GET: the app's credit figures. POST: recompute now, then show them again."""
        if not request.user.has_perm("applications.view_app"):
            raise PermissionDenied
        app = get_object_or_404(App.objects.select_related("project"), pk=app_id)
        if request.method == "POST":
            if not request.user.has_perm("applications.change_app"):
                raise PermissionDenied
            _recompute(self, request, app)
            return HttpResponseRedirect(request.path)
        overview = app_credit_overview(app=app)
        bars = histogram_bars(overview.distribution)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Credit: {app}",
            "opts": App._meta,
            "overview": overview,
            "bars": bars,
            "chart": {
                "width": CHART_WIDTH,
                "height": CHART_HEIGHT,
                "pad": CHART_PAD,
                "right": CHART_WIDTH - CHART_PAD,
                "axis_y": CHART_HEIGHT - CHART_PAD,
                "label_y": CHART_HEIGHT - 6,
            },
            "top_count": max((b.count for b in bars), default=0),
            "probation_url": _probation_url(app),
            "can_recompute": request.user.has_perm("applications.change_app"),
        }
        return TemplateResponse(request, "admin/credit/app_credit.html", context)
