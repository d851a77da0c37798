from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "apps.ops"
    verbose_name = "Operations"
