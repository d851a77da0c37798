from django.contrib import admin

from apps.boinc_import.models import BoincImport, ImportIssue, ImportTable
from apps.core.admin_base import RecordAdmin


class ImportTableInline(admin.TabularInline):
    model = ImportTable
    extra = 0
    readonly_fields = fields = ("table", "imported", "last_source_id", "id_offset", "reserved_max_id", "done")
    can_delete = False


@admin.register(BoincImport)
class BoincImportAdmin(RecordAdmin):
    list_display = ["project", "source", "started", "finished"]
    list_select_related = ["project"]
    inlines = [ImportTableInline]


@admin.register(ImportIssue)
class ImportIssueAdmin(RecordAdmin):
    """What an import refused (fix it in BOINC, run the import again) or changed."""

    list_display = ["table", "source_id", "source_key", "refused", "reason"]
    list_filter = ["refused", "table", "boinc_import__project"]
    show_full_result_count = False
