from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from apps.core.admin_base import RecordAdmin, indexed_search
from apps.core.admin_paging import LargeTableAdmin
from apps.volunteers.models import Account, CreditHistory, DeletedAccount, LoginLockout, Team


@admin.register(Account)
class AccountAdmin(LargeTableAdmin):
    list_display = [
        "id",
        "name",
        "email_addr",
        "project",
        "team",
        "total_credit",
        "expavg_credit",
        "create_time",
    ]
    list_filter = ["project", "allow_beta_work", ("deleted_time", admin.EmptyFieldListFilter)]
    search_fields = ["=id", "^name", "=email_addr", "=authenticator"]
    search_help_text = (
        "An account id, an exact email address, the start of a name (any case), or an account key."
    )
    list_select_related = ["project", "team"]
    raw_id_fields = ["team"]
    readonly_fields = [
        "authenticator",
        "cross_project_id",
        "passwd_hash",
        "total_credit",
        "expavg_credit",
        "expavg_time",
        "create_time",
        "delete_requested",
        "delete_after",
        "deleted_time",
    ]
    show_full_result_count = False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Account], search_term: str
    ) -> tuple[QuerySet[Account], bool]:
        # As BOINC's admin pages search: each condition reads an index, where a substring
        # search would read every account.
        term = search_term.strip()
        if "@" in term:
            also = Q(email_addr__iexact=term)
        else:
            also = Q(name__istartswith=term) | Q(authenticator=term)
        return indexed_search(queryset, term, names=(), also=also), False


@admin.register(Team)
class TeamAdmin(LargeTableAdmin):
    list_display = ["name", "project", "type", "founder", "total_credit", "expavg_credit"]
    list_filter = ["project", "type"]
    search_fields = ["name"]
    # Newest first, on the primary key: the model's order by name sorts every team per page.
    ordering = ["-id"]
    list_select_related = ["project", "founder"]
    raw_id_fields = ["founder", "ping_user"]
    readonly_fields = ["total_credit", "expavg_credit", "expavg_time", "create_time"]


@admin.register(CreditHistory)
class CreditHistoryAdmin(admin.ModelAdmin):
    list_display = ["day", "account", "team", "total_credit", "expavg_credit"]
    # A row per volunteer and day: newest first by the primary key (rows are written day by
    # day), not by sorting the whole table on day; a date filter instead of date_hierarchy,
    # which reads every row's day on each page.
    list_filter = ["project", "day"]
    ordering = ["-id"]
    raw_id_fields = ["account", "team"]
    list_select_related = ["account", "team"]
    show_full_result_count = False


@admin.register(DeletedAccount)
class DeletedAccountAdmin(RecordAdmin):
    """Read-only: written when an exported account is deleted, listed by db_dump, then expired."""

    list_display = ["userid", "cpid", "project", "create_time"]
    list_filter = ["project"]
    search_fields = ["=userid", "cpid"]


@admin.register(LoginLockout)
class LoginLockoutAdmin(RecordAdmin):
    """Read-only: a row each time a log-in limit is reached; "active" while it still refuses."""

    list_display = ["time", "scope", "kind", "account", "address", "until", "active"]
    list_filter = ["scope", "kind", "time"]
    search_fields = ["=account"]

    @admin.display(boolean=True, description="active")
    def active(self, obj: LoginLockout) -> bool:
        return obj.until > timezone.now()
