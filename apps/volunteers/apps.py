from django.apps import AppConfig
from django.db.models.signals import pre_delete


class VolunteersConfig(AppConfig):
    name = "apps.volunteers"
    verbose_name = "Volunteers"

    def ready(self) -> None:
        from apps.volunteers.deletions import account_deletion_record
        from apps.volunteers.models import Account

        pre_delete.connect(account_deletion_record, sender=Account, dispatch_uid="account-deletion-record")
