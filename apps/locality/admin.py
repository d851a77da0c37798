"""Admin for locality scheduling: files, files on hosts, need-work signals, and the
per-project page (working set, files with and without work, pending signals, savings)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from apps.core import clock
from apps.locality.admin_views import locality_index_view, locality_project_view
from apps.locality.models import HostFile, LocalityFile, NeedWork
from apps.locality.services import locality_files_set_no_work_available, working_set_update
from apps.projects.models import Project


@admin.register(LocalityFile)
class LocalityFileAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "project",
        "nbytes",
        "in_working_set",
        "no_work_available",
        "files_no_work",
        "no_work_since",
    ]
    list_filter = ["project", "in_working_set", "no_work_available", "files_no_work"]
    list_select_related = ["project"]
    search_fields = ["name"]
    raw_id_fields = ["input_file"]
    show_full_result_count = False
    actions = ["mark_no_work_available", "clear_no_work_available", "refresh_working_set"]

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path("projects/", self.admin_site.admin_view(locality_index_view), name="locality_index"),
            path(
                "projects/<int:pk>/",
                self.admin_site.admin_view(locality_project_view),
                name="locality_project",
            ),
        ]
        return custom + super().get_urls()

    @admin.action(
        description="Mark: the generator can make no more work (skip the wait)", permissions=["change"]
    )
    def mark_no_work_available(self, request: HttpRequest, queryset: QuerySet[LocalityFile]) -> None:
        count = locality_files_set_no_work_available(
            file_ids=queryset.values_list("id", flat=True), value=True
        )
        self.message_user(request, f"{count} file(s) marked as having no more work.", messages.SUCCESS)

    @admin.action(description="Clear the no-more-work mark", permissions=["change"])
    def clear_no_work_available(self, request: HttpRequest, queryset: QuerySet[LocalityFile]) -> None:
        count = locality_files_set_no_work_available(
            file_ids=queryset.values_list("id", flat=True), value=False
        )
        self.message_user(request, f"{count} file(s) cleared.", messages.SUCCESS)

    @admin.action(
        description="Run the working-set manager for these files' projects now", permissions=["change"]
    )
    def refresh_working_set(self, request: HttpRequest, queryset: QuerySet[LocalityFile]) -> None:
        now = clock.now()
        for project in Project.objects.filter(id__in=queryset.values("project_id")):
            result = working_set_update(project=project, now=now)
            self.message_user(
                request,
                f"{project.slug}: working set {len(result.working_set)}/{result.target_size} "
                f"(+{len(result.added)} -{len(result.removed)}).",
                messages.SUCCESS,
            )


@admin.register(HostFile)
class HostFileAdmin(admin.ModelAdmin):
    list_display = [
        "host",
        "file",
        "first_seen",
        "last_seen",
        "sent_by_scheduler",
        "downloads",
        "delete_requested",
    ]
    list_filter = ["sent_by_scheduler", "delete_requested"]
    raw_id_fields = ["host", "file"]
    list_select_related = ["file", "host"]
    show_full_result_count = False


@admin.register(NeedWork)
class NeedWorkAdmin(admin.ModelAdmin):
    list_display = [
        "file",
        "requested_time",
        "requested_by_host",
        "handled_time",
        "workunits_created",
        "page",
    ]
    list_filter = ["file__project"]
    raw_id_fields = ["file", "requested_by_host"]
    list_select_related = ["file", "requested_by_host"]
    date_hierarchy = "requested_time"
    show_full_result_count = False

    @admin.display(description="Project page")
    def page(self, obj: NeedWork) -> str:
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:locality_project", args=[obj.file.project_id]), "locality"
        )
