from django.apps import AppConfig
from django.db.models.signals import pre_delete


class HostsConfig(AppConfig):
    name = "apps.hosts"
    verbose_name = "Hosts"

    def ready(self) -> None:
        from apps.hosts.deletions import host_deletion_record
        from apps.hosts.models import Host

        pre_delete.connect(host_deletion_record, sender=Host, dispatch_uid="host-deletion-record")
