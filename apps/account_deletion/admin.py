"""The admin's deletion of accounts: an action on the accounts' list (the volunteers app's
AccountAdmin with it added), doing what a volunteer's confirmed request does."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.account_deletion.services import account_delete
from apps.core import clock
from apps.volunteers.admin import AccountAdmin
from apps.volunteers.models import Account


@admin.action(description="Delete the selected accounts' personal data (credit stays in the totals)")
def delete_accounts(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Account]) -> None:
    now = clock.now()
    deleted = sum(account_delete(account_id=pk, now=now) for pk in queryset.values_list("id", flat=True))
    modeladmin.message_user(request, f"{deleted} accounts deleted.", messages.SUCCESS)


class AccountDeletionAdmin(AccountAdmin):
    actions = [delete_accounts]


admin.site.unregister(Account)
admin.site.register(Account, AccountDeletionAdmin)
