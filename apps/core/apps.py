from pathlib import Path
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.db.backends.signals import connection_created

from apps.core.private_files import sqlite_files_private


class CoreConfig(AppConfig):
    name = "apps.core"
    verbose_name = "Core"

    def ready(self) -> None:
        from boincproj.celery import ensure_broker_dirs

        ensure_broker_dirs()
        # WhiteNoise warns on every request when its root is missing (fresh checkout).
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
        connection_created.connect(_keep_prepared_statements)
        connection_created.connect(_sqlite_file_private)


def _keep_prepared_statements(sender: object, connection: Any, **kwargs: Any) -> None:
    """Apply DATABASE_PREPARED_MAX to each new PostgreSQL connection."""
    limit = getattr(settings, "DATABASE_PREPARED_MAX", None)
    if connection.vendor == "postgresql" and limit:
        connection.connection.prepared_max = limit


def _sqlite_file_private(sender: object, connection: Any, **kwargs: Any) -> None:
    """Keep an SQLite database file (accounts' keys, the projects' private keys) 0600.

    SQLite creates the file with the process's umask on the first connection; this runs right
    after, before anything but the journal mode is written, and again on every new connection.
    """
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        return
    name = str(connection.settings_dict["NAME"])
    if not name.startswith("file:"):
        sqlite_files_private(Path(name))
