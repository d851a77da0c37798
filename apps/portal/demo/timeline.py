"""The demo's past, replayed through the back end's own services in time order.

The demo seed writes what clients did (results sent, run, reported or never returned);
everything the project derives from that is left to the services that derive it in
production, each called when it would have run: the scheduler's judgement of a reporting
host's app version (quota, error rate, probation), the transitioner (time-outs, replacement
replicas, flagging a workunit for validation), the main feeder's normalization, the
validator's pass (canonical result; credit for the host, the user, the team, per app, the
app version and the day's history), the assimilator's pass, and update_stats every night
(RAC decay and each day's credit history). Totals, recent averages and their times then agree
as a real project's do, since they were made the same way.

``seed_demo`` writes each result's final state at once, so a workunit is transitioned only once
its last replica has reported or timed out, and the validator and assimilator passes only
see the workunits the transitioner has flagged by then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta

from apps.credit.domain.quota import JobOutcome
from apps.credit.services import (
    credit_normalize_app,
    credit_update_stats,
)
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.models import Result, Workunit
from apps.work.services.assimilator import workunits_assimilate
from apps.work.services.host_outcomes import results_record_outcome
from apps.work.services.transitioner import workunit_transition, workunits_transition
from apps.work.services.validator import workunits_validate

# How long after the event that wakes it each daemon gets to a workunit.
TRANSITION_DELAY = timedelta(minutes=1)
VALIDATE_DELAY = timedelta(minutes=5)
ASSIMILATE_DELAY = timedelta(minutes=15)
# When the nightly update_stats runs.
UPDATE_STATS_AT = time(23, 50)


class DemoPastError(RuntimeError):
    """A back-end pass failed while replaying the demo's past."""


@dataclass(order=True)
class _Event:
    when: datetime
    seq: int
    action: Callable[[datetime], None] = field(compare=False)


@dataclass
class Timeline:
    """What happened in the demo project's past, run in time order by ``run``."""

    project: Project
    events: list[_Event] = field(default_factory=list)

    def at(self, when: datetime, action: Callable[[datetime], None]) -> None:
        self.events.append(_Event(when, len(self.events), action))

    def reported(self, result: Result, outcome: JobOutcome, when: datetime) -> None:
        """The client reported ``result`` (success or error): the scheduler judges its host."""
        self.at(when, lambda now: _judge(result, outcome, now))

    def transition(self, workunit: Workunit, when: datetime) -> None:
        """The transitioner handles ``workunit`` soon after ``when`` (its last report, or the
        end of the grace period of its replicas' deadline)."""
        self.at(when + TRANSITION_DELAY, lambda now: _transition(workunit, now))

    def completed(self, workunit: Workunit, last_report: datetime) -> None:
        """Every replica of ``workunit`` has reported success: the transitioner flags it, the
        validator validates it and grants credit, the assimilator assimilates it."""
        self.transition(workunit, last_report)
        self.at(last_report + VALIDATE_DELAY, lambda now: self._validate(workunit, now))
        self.at(last_report + ASSIMILATE_DELAY, self._assimilate)

    def run(self, *, now: datetime) -> None:
        """Every event up to ``now``, with update_stats each night and once more at ``now``."""
        if self.events:
            day = min(e.when for e in self.events).date()
            while day < now.date():
                self.at(datetime.combine(day, UPDATE_STATS_AT, tzinfo=now.tzinfo), self._update_stats)
                day += timedelta(days=1)
        self.at(now, self._update_stats)
        for event in sorted(self.events):
            if event.when > now:
                raise DemoPastError(f"an event of the demo's past is in the future ({event.when})")
            event.action(event.when)

    def transition_due(self, *, now: datetime) -> None:
        """The transitioner's pass of today: every workunit due gets its next transition time."""
        _check("transitioner", workunits_transition(project=self.project, now=now))

    def _validate(self, workunit: Workunit, now: datetime) -> None:
        # The feeder has normalized the app versions since the last grant (every 10 minutes).
        credit_normalize_app(app_id=workunit.app_id)
        _check("validator", workunits_validate(project=self.project, now=now))

    def _assimilate(self, now: datetime) -> None:
        _check("assimilator", workunits_assimilate(project=self.project, now=now))

    def _update_stats(self, now: datetime) -> None:
        _check("update_stats", credit_update_stats(project=self.project, now=now))


def _transition(workunit: Workunit, now: datetime) -> None:
    workunit_transition(workunit_id=workunit.id, now=now)


def _judge(result: Result, outcome: JobOutcome, now: datetime) -> None:
    results_record_outcome([result], outcome=outcome, delay_bound=result.workunit.delay_bound, now=now)


def _check(daemon: str, outcome: DaemonPass) -> None:
    # The passes log a failing workunit and go on; the demo must not quietly lack its credit.
    if outcome.errors:
        raise DemoPastError(f"{daemon}: {outcome.errors} failed ({outcome.message})")
