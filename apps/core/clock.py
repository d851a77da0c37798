"""The one clock: services take ``now`` from here so tests can freeze it."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone


def now() -> datetime:
    return timezone.now()


def to_unix(value: datetime | None) -> float:
    """Unix seconds for the wire and the pure domain code (0 for "never")."""
    return value.timestamp() if value is not None else 0.0


def from_unix(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)
