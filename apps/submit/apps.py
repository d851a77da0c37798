from __future__ import annotations

from django.apps import AppConfig


class SubmitConfig(AppConfig):
    name = "apps.submit"
    verbose_name = "Remote job submission"

    def ready(self) -> None:
        """Batches join work's daemon round (work sits below this app and never imports it):
        their figures follow their jobs, and expired or retired batches lose their files."""
        from apps.submit.services.batches import batches_daemon
        from apps.work.services.daemons import Daemon, daemon_register

        daemon_register(Daemon("batches", batches_daemon))
