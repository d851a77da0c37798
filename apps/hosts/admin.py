from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.core.admin_base import RecordAdmin, indexed_search
from apps.core.admin_paging import LargeTableAdmin
from apps.hosts import services
from apps.hosts.models import DeletedHost, Host, HostAppVersion, HostCoproc


class HostCoprocInline(admin.TabularInline):
    model = HostCoproc
    extra = 0
    readonly_fields = ["proc_type", "name", "count", "peak_flops", "available_ram", "have_opencl"]
    can_delete = False


class HostAppVersionInline(admin.TabularInline):
    model = HostAppVersion
    extra = 0
    readonly_fields = fields = (
        "app_version",
        "anonymous_proc_type",
        "pfc_n",
        "pfc_avg",
        "et_n",
        "et_avg",
        "turnaround_avg",
        "scale_probation",
        "error_rate",
        "max_jobs_per_day",
        "n_jobs_today",
        "consecutive_valid",
    )
    can_delete = False
    show_change_link = True

    def get_queryset(self, request: HttpRequest) -> QuerySet[HostAppVersion]:
        # Each row names its app version (app and platform) and links to itself by that name.
        return (
            super().get_queryset(request).select_related("app", "app_version__app", "app_version__platform")
        )


@admin.register(Host)
class HostAdmin(LargeTableAdmin):
    list_display = [
        "id",
        "domain_name",
        "account",
        "project",
        "p_ncpus",
        "p_fpops",
        "os_name",
        "total_credit",
        "expavg_credit",
        "rpc_time",
        "blacklisted",
    ]
    list_filter = ["project", "os_name", "blacklisted"]
    search_fields = ["=id", "domain_name", "host_cpid", "account__name"]
    list_select_related = ["account", "project"]
    raw_id_fields = ["account"]
    readonly_fields = [
        "create_time",
        "rpc_time",
        "rpc_seqno",
        "total_credit",
        "expavg_credit",
        "expavg_time",
        "avg_turnaround",
    ]
    inlines = [HostCoprocInline, HostAppVersionInline]
    actions = ["block", "unblock"]
    show_full_result_count = False

    @admin.action(description="Block (the scheduler refuses these hosts)", permissions=["change"])
    def block(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        n = services.hosts_block(ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} host(s) blocked.", messages.SUCCESS)

    @admin.action(description="Unblock", permissions=["change"])
    def unblock(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        n = services.hosts_block(ids=list(queryset.values_list("id", flat=True)), blocked=False)
        self.message_user(request, f"{n} host(s) unblocked.", messages.SUCCESS)


@admin.register(HostAppVersion)
class HostAppVersionAdmin(LargeTableAdmin):
    list_display = [
        "host",
        "app",
        "app_version",
        "anonymous_proc_type",
        "pfc_n",
        "pfc_avg",
        "scale_probation",
        "error_rate",
        "max_jobs_per_day",
        "n_jobs_today",
        "consecutive_valid",
    ]
    list_filter = ["app__project", "scale_probation", "app"]
    search_fields = ["host__id"]
    search_help_text = "A host id."
    raw_id_fields = ["host", "app_version"]
    list_select_related = ["host", "app", "app_version__platform", "app_version__app"]
    readonly_fields = [
        "pfc_n",
        "pfc_avg",
        "et_n",
        "et_avg",
        "et_var",
        "turnaround_n",
        "turnaround_avg",
        "turnaround_var",
    ]
    actions = ["reset_probation"]
    show_full_result_count = False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[HostAppVersion], search_term: str
    ) -> tuple[QuerySet[HostAppVersion], bool]:
        # By the host_id index; the default search casts every row's host id to text.
        return indexed_search(queryset, search_term, names=(), numbers=("host_id",)), False

    @admin.action(description="Reset scale probation (host scaling allowed again)", permissions=["change"])
    def reset_probation(self, request: HttpRequest, queryset: QuerySet[HostAppVersion]) -> None:
        n = services.host_app_version_reset_probation(ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"Probation reset on {n} record(s).", messages.SUCCESS)


@admin.register(DeletedHost)
class DeletedHostAdmin(RecordAdmin):
    """Read-only: written when an exported host is deleted, listed by db_dump, then expired."""

    list_display = ["hostid", "host_cpid", "project", "create_time"]
    list_filter = ["project"]
    search_fields = ["=hostid", "host_cpid"]
