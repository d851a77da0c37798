from django.apps import AppConfig


class EmulatorConfig(AppConfig):
    name = "apps.emulator"
    verbose_name = "Client emulator"
