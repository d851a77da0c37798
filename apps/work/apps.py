from django.apps import AppConfig


class WorkConfig(AppConfig):
    name = "apps.work"
    verbose_name = "Work"
