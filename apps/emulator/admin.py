from django.contrib import admin

from apps.emulator.models import EmulationRun, Scenario


class EmulationRunInline(admin.TabularInline):
    model = EmulationRun
    fields = ["policy", "create_time"]
    readonly_fields = fields
    extra = 0
    show_change_link = True


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "create_time"]
    list_filter = ["project"]
    inlines = [EmulationRunInline]


@admin.register(EmulationRun)
class EmulationRunAdmin(admin.ModelAdmin):
    list_display = ["scenario", "policy", "create_time"]
    readonly_fields = ["scenario", "policy", "create_time", "figures", "table", "chart_svg"]
