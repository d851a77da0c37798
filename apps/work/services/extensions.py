"""Calls from work's daemons into the apps built on work, registered from their AppConfig.ready().

work sits below those apps in the import layers, so it never imports them. The sequences app
moves a sequence on when one of its steps validates (``step_validated_connect``),
keeps db_purge off the steps of sequences that have not ended (``purge_hold_register``) and
adds its deadline daemon to the round (apps.work.services.daemons.daemon_register); the
submit app keeps db_purge off the jobs of batches not yet retired.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

StepValidated = Callable[..., object]  # called as hook(workunit_id=..., now=...); its value unused

# A condition on the workunit row ``w`` of db_purge's statement under which the workunit is
# kept, with its parameters: SQL over w's columns and the registering app's own tables.
PurgeHold = Callable[[], tuple[str, tuple[object, ...]]]

_step_validated: list[StepValidated] = []
_purge_holds: dict[str, PurgeHold] = {}


def step_validated_connect(hook: StepValidated) -> None:
    """Have ``hook`` called whenever a work-sequence step validates (once: ready() may run again)."""
    if hook not in _step_validated:
        _step_validated.append(hook)


def step_validated(*, workunit_id: int, now: datetime) -> None:
    """The validator, after its commit: a workunit that is a step of a work sequence changed."""
    for hook in _step_validated:
        hook(workunit_id=workunit_id, now=now)


def purge_hold_register(name: str, hold: PurgeHold) -> None:
    """Have db_purge keep the workunits ``hold`` names (once by name: ready() may run again)."""
    _purge_holds[name] = hold


def purge_holds() -> list[tuple[str, tuple[object, ...]]]:
    """The registered holds' conditions and parameters, for db_purge's statement."""
    return [hold() for hold in _purge_holds.values()]
