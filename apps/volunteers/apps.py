from django.apps import AppConfig


class VolunteersConfig(AppConfig):
    name = "apps.volunteers"
    verbose_name = "Volunteers"
