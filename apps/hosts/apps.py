from django.apps import AppConfig


class HostsConfig(AppConfig):
    name = "apps.hosts"
    verbose_name = "Hosts"
