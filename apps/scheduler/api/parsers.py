"""The JSON parser of the scheduler API: JSON too deep to parse is bad input, not a crash."""

from __future__ import annotations

from apps.core.api import SafeJSONParser


class SchedulerJSONParser(SafeJSONParser):
    """The project's safe JSON parser, named for the scheduler's JSON face."""
