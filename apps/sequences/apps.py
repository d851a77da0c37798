from django.apps import AppConfig


class SequencesConfig(AppConfig):
    name = "apps.sequences"
    verbose_name = "Work sequences"
