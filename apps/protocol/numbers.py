"""Lenient number reading and strict range checks, shared by the XML and JSON faces.

The BOINC client prints numbers with ``%f`` and ``%d``; other clients and people write
``1e9`` or `` 2 ``. All of those are accepted. NaN, infinities, hex floats, Unicode digits
and values outside a field's sane range are refused with ``ProtocolError``; request
seconds are clamped instead, as the stock scheduler does.
"""

from __future__ import annotations

import math
import re

from apps.protocol.errors import ProtocolError

# BOINC's WORK_REQ bounds (sched_types.h MIN_REQ_SECS / MAX_REQ_SECS): 0 to 28 days.
MIN_REQ_SECS = 0.0
MAX_REQ_SECS = 28 * 86400.0

# Sane upper bound for Unix times (year 5138) and for byte counts (1 EB).
MAX_TIME = 1e11
MAX_BYTES = 1e18
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_MAX_NUMBER_TEXT = 100
FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT_RE = re.compile(r"[+-]?[0-9]{1,19}")
TRUE_TEXTS = frozenset({"", "1", "true", "yes"})
FALSE_TEXTS = frozenset({"0", "false", "no"})


def parse_float(text: str, where: str) -> float:
    """Read a decimal number written by printf or a person; refuse anything else."""
    s = text.strip()
    if len(s) > _MAX_NUMBER_TEXT or not FLOAT_RE.fullmatch(s):
        raise ProtocolError(f"{where}: not a number: {s[:40]!r}")
    value = float(s)
    if not math.isfinite(value):
        raise ProtocolError(f"{where}: number out of range")
    return value


def parse_int(text: str, where: str) -> int:
    """Read an integer; ``7.000000`` and ``1e3`` are accepted, ``7.5`` is not."""
    s = text.strip()
    if _INT_RE.fullmatch(s):
        return int(s)
    value = parse_float(s, where)
    if not value.is_integer():
        raise ProtocolError(f"{where}: not an integer: {s[:40]!r}")
    return int(value)


def parse_bool(text: str, where: str) -> bool:
    """``<flag/>``, ``<flag>1</flag>``, ``true``/``false``; any other number is C truth."""
    s = text.strip().lower()
    if s in TRUE_TEXTS:
        return True
    if s in FALSE_TEXTS:
        return False
    try:
        return parse_float(s, where) != 0
    except ProtocolError:
        raise ProtocolError(f"{where}: not a boolean: {s[:40]!r}") from None


def check_float(value: float, where: str, lo: float, hi: float, *, clamp: bool = False) -> float:
    """Refuse (or clamp) a finite value outside [lo, hi]."""
    if not math.isfinite(value):
        raise ProtocolError(f"{where}: number out of range")
    if lo <= value <= hi:
        return value
    if clamp:
        return lo if value < lo else hi
    raise ProtocolError(f"{where}: {value!r} is outside [{lo:g}, {hi:g}]")


def check_int(value: int, where: str, lo: float, hi: float) -> int:
    if not lo <= value <= hi:
        raise ProtocolError(f"{where}: {value} is outside [{lo:g}, {hi:g}]")
    return value


def coerce_float(value: object, where: str) -> float:
    """A JSON value as a float: a number (not a bool) or a numeric string."""
    if isinstance(value, str):
        return parse_float(value, where)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"{where}: expected a number")
    try:
        result = float(value)
    except OverflowError:
        raise ProtocolError(f"{where}: number out of range") from None
    if not math.isfinite(result):
        raise ProtocolError(f"{where}: number out of range")
    return result


def coerce_int(value: object, where: str) -> int:
    if isinstance(value, bool):
        raise ProtocolError(f"{where}: expected an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return parse_int(value, where)
    result = coerce_float(value, where)
    if not result.is_integer():
        raise ProtocolError(f"{where}: not an integer")
    return int(result)


def coerce_bool(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return parse_bool(value, where)
    raise ProtocolError(f"{where}: expected a boolean")


def format_int(value: int | float) -> str:
    if isinstance(value, float):
        if not value.is_integer():
            raise ProtocolError(f"cannot write {value!r} as an integer")
        value = int(value)
    return str(value)


def format_float(value: float, *, client: bool, fmt: str = "") -> str:
    """``%f`` (or ``fmt``) as the client prints; otherwise the shortest text strtod reads back."""
    value = float(value)
    if not math.isfinite(value):
        raise ProtocolError("cannot write a non-finite number")
    if client:
        return format(value, fmt or "f")
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)
