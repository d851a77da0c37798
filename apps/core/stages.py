"""Named stages of a job's life that a benchmark can meter: scheduler RPC, uploads, daemons.

``stage(name)`` marks a block. Nothing is measured unless a meter is installed with
``stage_meter_install``; only the benchmarks do that (``apps.benchmarks.stage_meter``), so
in production a stage costs one global read and an empty context manager.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

StageMeter = Callable[[str], AbstractContextManager[object]]

_NOTHING: AbstractContextManager[object] = nullcontext()
_meter: StageMeter | None = None


def stage_meter_install(meter: StageMeter | None) -> None:
    """Meter every later ``stage`` block with ``meter(name)``; ``None`` stops metering."""
    global _meter
    _meter = meter


def stage(name: str) -> AbstractContextManager[object]:
    """The block's meter under ``name``, or a context manager that does nothing."""
    meter = _meter
    return _NOTHING if meter is None else meter(name)
