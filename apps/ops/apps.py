from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "apps.ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from apps.ops import static  # noqa: F401  (registers its system check)
