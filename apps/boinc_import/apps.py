from django.apps import AppConfig


class BoincImportConfig(AppConfig):
    name = "apps.boinc_import"
    verbose_name = "BOINC import"
