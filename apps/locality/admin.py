from django.contrib import admin

from apps.locality.models import HostFile, LocalityFile, NeedWork


@admin.register(LocalityFile)
class LocalityFileAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "nbytes", "in_working_set", "no_work_available", "files_no_work"]
    list_filter = ["project", "in_working_set", "no_work_available", "files_no_work"]
    search_fields = ["name"]
    raw_id_fields = ["input_file"]
    show_full_result_count = False


@admin.register(HostFile)
class HostFileAdmin(admin.ModelAdmin):
    list_display = ["host", "file", "first_seen", "last_seen", "sent_by_scheduler", "delete_requested"]
    list_filter = ["sent_by_scheduler", "delete_requested"]
    raw_id_fields = ["host", "file"]
    list_select_related = ["file"]
    show_full_result_count = False


@admin.register(NeedWork)
class NeedWorkAdmin(admin.ModelAdmin):
    list_display = ["file", "requested_time", "requested_by_host", "handled_time", "workunits_created"]
    list_filter = ["file__project"]
    raw_id_fields = ["file", "requested_by_host"]
    list_select_related = ["file"]
