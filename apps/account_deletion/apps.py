from django.apps import AppConfig


class AccountDeletionConfig(AppConfig):
    name = "apps.account_deletion"
    verbose_name = "Account deletion"
