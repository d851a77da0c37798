"""Cross-project normalization (docs/credit.md) from the command line: the same pass as the
periodic task ``credit.cross_project``, recorded as a DaemonRun "cross_project".

Prints the per-plan-class factors it stored and the GPU-only apps it normalized, or that it
skipped because another pass is running.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.core import clock
from apps.credit.cross_project_services import (
    DAEMON,
    CrossProjectOutcome,
    cross_project_normalize,
    cross_project_pass_locked,
)
from apps.projects.services import DaemonPass, daemon_pass_run


class Command(BaseCommand):
    help = "Aggregate per-plan-class scale factors across projects and apply them to GPU-only apps."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--local-only", action="store_true", help="Skip the external sources (ScaleSource rows)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        outcomes: list[CrossProjectOutcome] = []

        def run() -> DaemonPass:
            outcome = cross_project_normalize(now=clock.now(), external=not opts["local_only"])
            outcomes.append(outcome)
            return outcome.daemon_pass()

        result = daemon_pass_run(project=None, daemon=DAEMON, run=lambda: cross_project_pass_locked(run))
        if not outcomes and result.errors:
            raise CommandError(f"failed: {result.message}")
        if not outcomes:
            self.stdout.write(result.message)
            return
        outcome = outcomes[0]
        for scale in outcome.plan_classes:
            self.stdout.write(
                f"{scale.plan_class or '(none)'}: scale {scale.scale:.6g} "
                f"(weight {scale.weight:.6g}, {scale.n_versions} versions)"
            )
        for app_id, changed in outcome.normalized:
            self.stdout.write(f"GPU-only app {app_id}: {changed} rows changed")
        self.stdout.write(result.message)
