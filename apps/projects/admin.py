from django.contrib import admin
from django.http import HttpRequest

from apps.projects.models import DaemonRun, Platform


@admin.register(Platform)
class PlatformAdmin(admin.ModelAdmin):
    list_display = ["name", "user_friendly_name", "deprecated"]
    list_filter = ["deprecated"]
    search_fields = ["name", "user_friendly_name"]


@admin.register(DaemonRun)
class DaemonRunAdmin(admin.ModelAdmin):
    list_display = ["daemon", "project", "started", "duration", "items", "errors"]
    # A date filter, not date_hierarchy: that reads every run's date on each page.
    list_filter = ["daemon", "project", "started"]
    list_select_related = ["project"]
    show_full_result_count = False
    readonly_fields = [f.name for f in DaemonRun._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
