"""Time keys: event times as comparable numbers, and back to the values users gave.

Timestamps (``datetime``/``date``, Arrow timestamp/date columns) become microseconds since the
epoch; numbers stay as given and count ``time_unit``s.
"""

from __future__ import annotations

import datetime as _dt
from fractions import Fraction
from typing import Any

__all__ = ["UNITS", "exact", "from_micros", "to_micros", "tzinfo_named"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

#: Ticks per second of each numeric ``time_unit``.
UNITS = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def exact(x: Fraction) -> int | float:
    """A window amount as an ``int`` when whole (exact comparisons), else a ``float``."""
    return int(x) if x.denominator == 1 else float(x)


def to_micros(v: Any) -> int:
    """Microseconds since the epoch of a ``datetime`` (naive = UTC) or ``date``; else TypeError."""
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.UTC)
        return int((v - _EPOCH) // _dt.timedelta(microseconds=1))
    if isinstance(v, _dt.date):
        return (v - _dt.date(1970, 1, 1)).days * 86_400_000_000
    raise TypeError


def from_micros(us: int, tz: _dt.tzinfo | None, as_date: bool) -> Any:
    """Microseconds since the epoch as a naive (``tz=None``) or aware datetime, or a date."""
    t = _EPOCH + _dt.timedelta(microseconds=int(us))
    if as_date:
        return t.date()
    return t.replace(tzinfo=None) if tz is None else t.astimezone(tz)


def tzinfo_named(name: str) -> _dt.tzinfo:
    """The time zone of an Arrow timestamp type: an IANA name or a fixed offset (``+01:00``)."""
    try:
        import zoneinfo

        return zoneinfo.ZoneInfo(name)
    except Exception:  # fixed offsets such as "+01:00"
        sign = -1 if name.startswith("-") else 1
        hh, _, mm = name.lstrip("+-").partition(":")
        return _dt.timezone(sign * _dt.timedelta(hours=int(hh), minutes=int(mm or 0)))
