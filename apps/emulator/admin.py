from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from apps.emulator.admin_views import scenario_run_view
from apps.emulator.domain import PolicyName, ScenarioError
from apps.emulator.forms import ScenarioForm
from apps.emulator.models import EmulationRun, Scenario
from apps.emulator.services import scenario_run


class EmulationRunInline(admin.TabularInline):
    model = EmulationRun
    readonly_fields = fields = ("policy", "create_time")
    extra = 0
    show_change_link = True

    def get_queryset(self, request: HttpRequest) -> QuerySet[EmulationRun]:
        # Each row's link text names the scenario; the chart and tables are not shown here.
        return super().get_queryset(request).select_related("scenario").defer("chart_svg", "table", "figures")


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    form = ScenarioForm
    list_display = ["name", "project", "create_time", "run_link"]
    list_filter = ["project"]
    list_select_related = ["project"]
    inlines = [EmulationRunInline]
    actions = ["run_all_policies"]

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "<int:pk>/run/",
                self.admin_site.admin_view(scenario_run_view),
                name="emulator_scenario_run",
            )
        ]
        return custom + super().get_urls()

    @admin.display(description="Emulate")
    def run_link(self, obj: Scenario) -> str:
        return format_html('<a href="{}">Run…</a>', reverse("admin:emulator_scenario_run", args=[obj.pk]))

    @admin.action(description="Run under all three policies (v4, v6-gpu, rec)", permissions=["change"])
    def run_all_policies(self, request: HttpRequest, queryset: QuerySet[Scenario]) -> None:
        for scenario in queryset.select_related("project"):
            try:
                runs = scenario_run(scenario=scenario, policies=list(PolicyName))
            except ScenarioError as exc:
                self.message_user(request, f"{scenario.name}: {exc}", messages.ERROR)
                continue
            url = reverse("admin:emulator_scenario_run", args=[scenario.pk])
            ids = ",".join(str(r.pk) for r in runs)
            self.message_user(
                request,
                format_html('{}: <a href="{}?runs={}">chart and figures</a>', scenario.name, url, ids),
                messages.SUCCESS,
            )


@admin.register(EmulationRun)
class EmulationRunAdmin(admin.ModelAdmin):
    list_display = ["scenario", "policy", "create_time"]
    list_filter = ["policy"]
    list_select_related = ["scenario"]
    readonly_fields = fields = ("scenario", "policy", "create_time", "chart", "table_text", "figures")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="Chart")
    def chart(self, obj: EmulationRun) -> SafeString:
        return mark_safe(obj.chart_svg)  # our own SVG: every text in it is escaped

    @admin.display(description="Table")
    def table_text(self, obj: EmulationRun) -> str:
        return format_html("<pre>{}</pre>", obj.table)
