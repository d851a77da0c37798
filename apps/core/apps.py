from pathlib import Path
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.db.backends.signals import connection_created


class CoreConfig(AppConfig):
    name = "apps.core"
    verbose_name = "Core"

    def ready(self) -> None:
        from boincproj.celery import ensure_broker_dirs

        ensure_broker_dirs()
        # WhiteNoise warns on every request when its root is missing (fresh checkout).
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
        connection_created.connect(_keep_prepared_statements)


def _keep_prepared_statements(sender: object, connection: Any, **kwargs: Any) -> None:
    """Apply DATABASE_PREPARED_MAX to each new PostgreSQL connection."""
    limit = getattr(settings, "DATABASE_PREPARED_MAX", None)
    if connection.vendor == "postgresql" and limit:
        connection.connection.prepared_max = limit
