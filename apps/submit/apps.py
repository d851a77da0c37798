from __future__ import annotations

from django.apps import AppConfig


class SubmitConfig(AppConfig):
    name = "apps.submit"
    verbose_name = "Remote job submission"

    def ready(self) -> None:
        """Batches join work's daemon round (work sits below this app and never imports it):
        their figures follow their jobs, and expired or retired batches lose their files.
        db_purge keeps a batch's jobs until the batch is retired and its outputs deleted."""
        from apps.submit.services.batches import batch_jobs_purge_hold, batches_daemon
        from apps.work.services.daemons import Daemon, daemon_register
        from apps.work.services.extensions import purge_hold_register

        daemon_register(Daemon("batches", batches_daemon))
        purge_hold_register("submit", batch_jobs_purge_hold)
