from django.apps import AppConfig


class TricklesConfig(AppConfig):
    name = "apps.trickles"
    verbose_name = "Trickle messages"
