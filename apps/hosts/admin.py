from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path

from apps.core.admin_base import RecordAdmin, indexed_search
from apps.core.admin_paging import LargeTableAdmin
from apps.hosts import services
from apps.hosts.domain.hr import HrType
from apps.hosts.models import DeletedHost, Host, HostAppVersion, HostCoproc
from apps.hosts.selectors import ACTIVE_RECENT_CREDIT, hr_census
from apps.projects.models import Project


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


class OsFilter(admin.SimpleListFilter):
    """Hosts by operating system, from a fixed list of the names BOINC clients report.

    Django's filter on a field lists the column's distinct values, which reads every host
    on every view of the list (1.7 s at 4.5 million hosts)."""

    title = "operating system"
    parameter_name = "os_name"
    # What each client's os_name starts with.
    SYSTEMS = (
        ("Microsoft Windows", "Windows"),
        ("Linux", "Linux"),
        ("Darwin", "macOS"),
        ("Android", "Android"),
        ("FreeBSD", "FreeBSD"),
    )

    def lookups(self, request: HttpRequest, model_admin: Any) -> tuple[tuple[str, str], ...]:
        return self.SYSTEMS

    def queryset(self, request: HttpRequest, queryset: QuerySet[Host]) -> QuerySet[Host]:
        value = self.value()
        return queryset.filter(os_name__startswith=value) if value else queryset


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
    list_filter = ["project", OsFilter, "blacklisted"]
    search_fields = ["=id", "^domain_name", "=host_cpid"]
    search_help_text = "A host id, the start of a host name (any case), or a host CPID."
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

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Host], search_term: str
    ) -> tuple[QuerySet[Host], bool]:
        # Each condition reads an index; a substring search would read every host.
        term = search_term.strip()
        also = Q(domain_name__istartswith=term) | Q(host_cpid=term)
        return indexed_search(queryset, term, names=(), also=also), False

    @admin.action(description="Block (the scheduler refuses these hosts)", permissions=["change"])
    def block(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        n = services.hosts_block(ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} host(s) blocked.", messages.SUCCESS)

    @admin.action(description="Unblock", permissions=["change"])
    def unblock(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        n = services.hosts_block(ids=list(queryset.values_list("id", flat=True)), blocked=False)
        self.message_user(request, f"{n} host(s) unblocked.", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.hr_classes_view)
        return [path("hr-classes/<int:project_id>/", view, name="hosts_host_hr_classes"), *super().get_urls()]

    def hr_classes_view(self, request: HttpRequest, project_id: int) -> HttpResponse:
        """How much computing each homogeneous redundancy class has (BOINC's hr_info): an
        app whose class holds little computing leaves its workunits waiting long."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        project = get_object_or_404(Project, pk=project_id)
        census = hr_census(project_id=project.pk)
        types = []
        for hr_type, label in (
            (HrType.FINE, "Fine (OS and CPU model)"),
            (HrType.COARSE, "Coarse (OS and CPU vendor)"),
        ):
            total = census.total_credit(hr_type)
            rows = [(c, 100 * c.recent_credit / total if total else 0.0) for c in census.ranked(hr_type)]
            types.append({"label": label, "rows": rows, "unknown": census.unknown[hr_type]})
        context = {
            **self.admin_site.each_context(request),
            "title": f"Homogeneous redundancy classes: {project.name}",
            "opts": Host._meta,
            "project": project,
            "types": types,
            "min_credit": ACTIVE_RECENT_CREDIT,
        }
        return TemplateResponse(request, "admin/hosts/hr_classes.html", context)


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
