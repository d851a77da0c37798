"""BOINC's rules for a member taking over a team whose founder does not answer
(html/inc/team.inc: new_transfer_request_ok, transfer_ok).

A member asks; the founder may hand the team to anyone or decline. If the founder does
nothing for 60 days, the member who asked may take the team. A new request is allowed
when no request was made in the last 60 days, or when the open one is over 90 days old
(its asker then had 30 days to take over, and another member gets a chance).
"""

from __future__ import annotations

from datetime import datetime, timedelta

TAKEOVER_AFTER = timedelta(days=60)
QUIET_AFTER_REQUEST = timedelta(days=60)
REQUEST_EXPIRES = timedelta(days=90)


def founder_request_allowed(*, open_request: bool, ping_time: datetime | None, now: datetime) -> bool:
    """Whether a member may ask for foundership now."""
    if ping_time is None:
        return True
    if open_request:
        return ping_time < now - REQUEST_EXPIRES
    return ping_time < now - QUIET_AFTER_REQUEST


def founder_takeover_time(ping_time: datetime) -> datetime:
    """When the member who asked at ``ping_time`` may take the team if the founder is silent."""
    return ping_time + TAKEOVER_AFTER


def founder_takeover_allowed(*, ping_time: datetime | None, now: datetime) -> bool:
    return ping_time is not None and now > founder_takeover_time(ping_time)
