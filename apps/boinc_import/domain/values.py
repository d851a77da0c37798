"""Reading one BOINC column value into what a Cobblestone column accepts.

Each reader either returns the value or raises ``RowRefused`` saying which column broke
which rule. Text that only describes (a URL, a CPU model) and does not fit is shortened
or dropped with a note instead, so one long string does not cost a volunteer their account.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from apps.protocol import is_safe_file_name

# BOINC keeps times as 32-bit Unix times (transition_time's INT_MAX means "never").
MAX_UNIX_TIME = 2**31 - 1
INT32_MAX = 2**31 - 1
SMALLINT_MAX = 32767
# A time this far past the import's clock is not a real time (a clock or data error).
FUTURE_SLACK = 86400.0


class RowRefused(Exception):
    """The row cannot be imported; the message says why (shown to the operator)."""


Row = Mapping[str, Any]


@dataclass(slots=True)
class Mapped:
    """A BOINC row as Cobblestone column values, with notes on anything changed."""

    values: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    files: list[Any] = field(default_factory=list)  # the row's files (app, input or output)


def text(row: Row, column: str, *, max_len: int, required: bool = False) -> str:
    """A text column that must fit as it is (identity: names, keys, emails)."""
    value = _decoded(row, column)
    if required and not value:
        raise RowRefused(f"{column} is empty")
    if len(value) > max_len:
        raise RowRefused(f"{column} has {len(value)} characters, more than {max_len}")
    return value


def described(row: Row, column: str, *, max_len: int, notes: list[str]) -> str:
    """A descriptive text column: shortened to ``max_len`` characters with a note if longer."""
    value = _decoded(row, column)
    if len(value) > max_len:
        notes.append(f"{column} shortened from {len(value)} to {max_len} characters")
        return value[:max_len]
    return value


def fitted(value: str, what: str, max_len: int) -> str:
    """A value taken from a stored document that must fit as it is."""
    if len(value) > max_len:
        raise RowRefused(f"{what} has {len(value)} characters, more than {max_len}")
    return value


def file_name_check(name: str) -> None:
    """Refuse a file name Cobblestone could not store or serve (its data areas keep
    unfinished uploads under hidden names, so a name may not start with '.')."""
    if not is_safe_file_name(name) or name.startswith(".") or len(name) > 254:
        raise RowRefused(f"file name {name!r} is not a safe name of at most 254 characters")


def _decoded(row: Row, column: str) -> str:
    value = row[column]
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise RowRefused(f"{column} is not valid UTF-8") from None
    value = str(value)
    if "\x00" in value:
        raise RowRefused(f"{column} contains a NUL character")
    return value


def number(row: Row, column: str, *, lo: float = 0.0, hi: float = math.inf) -> float:
    """A float column within [lo, hi] (credits, FLOPS, byte counts)."""
    value = row[column]
    value = 0.0 if value is None else float(value)
    if not math.isfinite(value) or value < lo or value > hi:
        raise RowRefused(f"{column} = {value!r} is outside [{lo:g}, {hi:g}]")
    return value


def integer(row: Row, column: str, *, lo: int = 0, hi: int = INT32_MAX) -> int:
    """An integer column within [lo, hi] (counts, states, quorums)."""
    value = row[column]
    value = 0 if value is None else int(value)
    if value < lo or value > hi:
        raise RowRefused(f"{column} = {value} is outside [{lo}, {hi}]")
    return value


def flag(row: Row, column: str) -> bool:
    value = row[column]
    return bool(value) and value != b"\x00"


def unix_time(row: Row, column: str, *, now: float, required: bool = False) -> datetime | None:
    """A BOINC Unix time as an aware datetime; 0 (and INT_MAX, "never") give None."""
    value = row[column]
    value = 0.0 if value is None else float(value)
    if value in (0.0, float(MAX_UNIX_TIME)):
        if required:
            raise RowRefused(f"{column} is not set")
        return None
    if not math.isfinite(value) or value < 0 or value > MAX_UNIX_TIME:
        raise RowRefused(f"{column} = {value!r} is not a Unix time")
    if value > now + FUTURE_SLACK:
        raise RowRefused(f"{column} {_iso(value)} is in the future")
    return datetime.fromtimestamp(value, tz=UTC)


def deadline(row: Row, column: str) -> datetime | None:
    """A time that may lie ahead (report deadlines, transition times); 0/INT_MAX give None."""
    value = row[column]
    value = 0.0 if value is None else float(value)
    if value in (0.0, float(MAX_UNIX_TIME)):
        return None
    if not math.isfinite(value) or value < 0 or value > MAX_UNIX_TIME:
        raise RowRefused(f"{column} = {value!r} is not a Unix time")
    return datetime.fromtimestamp(value, tz=UTC)


def average_time(row: Row, column: str, *, now: float) -> float:
    """An expavg_time: a Unix time as a float (0 = never updated), not after now."""
    value = number(row, column)
    if value > now + FUTURE_SLACK:
        raise RowRefused(f"{column} {_iso(value)} is in the future")
    return value


def _iso(value: float) -> str:
    return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
