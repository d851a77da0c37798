from __future__ import annotations

from django.apps import AppConfig


class SequencesConfig(AppConfig):
    name = "apps.sequences"
    verbose_name = "Work sequences"

    def ready(self) -> None:
        """Plug seed 001 into work (which sits below this app and never imports it): a
        validated step moves its sequence on, the deadline daemon joins the round, and
        create_work takes --sequence."""
        from apps.sequences.management.create_work_sequence import CREATE_WORK_SEQUENCE
        from apps.sequences.services import sequence_deadlines_daemon, sequence_on_result_validated
        from apps.work.management.create_work_extensions import create_work_extend
        from apps.work.services.daemons import Daemon, daemon_register
        from apps.work.services.extensions import step_validated_connect

        step_validated_connect(sequence_on_result_validated)
        daemon_register(Daemon("sequence_deadlines", sequence_deadlines_daemon))
        create_work_extend(CREATE_WORK_SEQUENCE)
