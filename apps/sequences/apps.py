from __future__ import annotations

from django.apps import AppConfig


class SequencesConfig(AppConfig):
    name = "apps.sequences"
    verbose_name = "Work sequences"

    def ready(self) -> None:
        """Plug work sequences into work (which sits below this app and never imports it): a
        validated step moves its sequence on, the deadline daemon joins the round, db_purge
        keeps the steps of sequences that have not ended, and create_work takes --sequence.
        Deleting a sequence deletes its steps."""
        from django.db.models.signals import pre_delete

        from apps.sequences.management.create_work_sequence import CREATE_WORK_SEQUENCE
        from apps.sequences.models import WorkSequence
        from apps.sequences.services import sequence_deadlines_daemon, sequence_on_result_validated
        from apps.sequences.services.rows import steps_delete, steps_purge_hold
        from apps.work.management.create_work_extensions import create_work_extend
        from apps.work.services.daemons import Daemon, daemon_register
        from apps.work.services.extensions import purge_hold_register, step_validated_connect

        step_validated_connect(sequence_on_result_validated)
        daemon_register(Daemon("sequence_deadlines", sequence_deadlines_daemon))
        create_work_extend(CREATE_WORK_SEQUENCE)
        purge_hold_register("sequences", steps_purge_hold)
        pre_delete.connect(steps_delete, sender=WorkSequence, dispatch_uid="sequences.steps_delete")
