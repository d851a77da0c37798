from django.apps import AppConfig


class CreditConfig(AppConfig):
    name = "apps.credit"
    verbose_name = "Credit"
