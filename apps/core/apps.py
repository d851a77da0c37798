from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class CoreConfig(AppConfig):
    name = "apps.core"
    verbose_name = "Core"

    def ready(self) -> None:
        from boincproj.celery import ensure_broker_dirs

        ensure_broker_dirs()
        # WhiteNoise warns on every request when its root is missing (fresh checkout).
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
