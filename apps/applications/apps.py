from django.apps import AppConfig


class ApplicationsConfig(AppConfig):
    name = "apps.applications"
    verbose_name = "Applications"
