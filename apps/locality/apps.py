from django.apps import AppConfig


class LocalityConfig(AppConfig):
    name = "apps.locality"
    verbose_name = "Locality scheduling"
