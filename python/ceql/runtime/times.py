"""Time keys: event times as comparable numbers, and back to the values users gave.

Timestamps (``datetime``/``date``, Arrow timestamp/date columns) become microseconds since the
epoch; numbers stay as given and count ``time_unit``s.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import sys
import zoneinfo
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CeqlInputError

__all__ = ["Clock", "exact", "from_micros", "to_micros", "tzinfo_named"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_FLOAT_WHOLE = 2**53
_FLOAT_MAX = Fraction(sys.float_info.max)
# Arrow times ceql can give back as datetimes in any time zone (a day inside Python's range)
_MIN_US = (_dt.datetime(1, 1, 2) - _dt.datetime(1970, 1, 1)) // _dt.timedelta(microseconds=1)
_MAX_US = (_dt.datetime(9999, 12, 30) - _dt.datetime(1970, 1, 1)) // _dt.timedelta(microseconds=1)
_PER_US = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}  # ns: compared as microseconds
_OFFSET = re.compile(r"([+-])([01]\d|2[0-3]):?([0-5]\d)")


def exact(x: Fraction) -> int | float:
    """A window amount as an ``int`` when whole (exact comparisons), else a ``float``.

    From 2**53 on every float is whole, so the amount's integer part compares with any key
    exactly as the amount would; beyond the largest float it is infinite (keys are added to and
    compared with it, and no two float keys are that far apart).
    """
    if x > _FLOAT_MAX:
        return math.inf
    if x.denominator == 1 or x >= _FLOAT_WHOLE:
        return int(x)
    return float(x)


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


def tzinfo_named(name: str, column: str | None = None) -> _dt.tzinfo:
    """The time zone of an Arrow timestamp type: an IANA name or a fixed offset (``+01:00``);
    :class:`CeqlInputError` (naming ``column``) for anything else."""
    m = _OFFSET.fullmatch(name)
    if m:
        sign = -1 if m[1] == "-" else 1
        return _dt.timezone(sign * _dt.timedelta(hours=int(m[2]), minutes=int(m[3])))
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        where = f" of time column {column!r}" if column is not None else ""
        raise CeqlInputError(
            f"Unknown time zone {name!r}{where}: use an IANA name such as 'Europe/Paris' or "
            "an offset from -23:59 to +23:59 such as '+01:00'.") from None


class Clock:
    """Reads and checks an evaluation's time keys: the time attribute (or positions) and the
    attribute of ``WITHIN n [attr]``, both non-decreasing; remembers how to give times back
    (timestamp or number, time zone, date)."""

    __slots__ = ("as_date", "is_ts", "last_time", "last_wattr", "time", "tz", "wattr")

    def __init__(self, time: str | None, wattr: str | None) -> None:
        self.time = time
        self.wattr = wattr
        self.is_ts: bool | None = None  # decided by the first timed event
        self.tz: _dt.tzinfo | None = None  # timestamps come back as they came in
        self.as_date = False
        self.last_time: Any = None
        self.last_wattr: Any = None

    def decide(self, is_ts: bool, where: int) -> bool:
        """Record whether times are timestamps; True the first time it is decided."""
        if self.is_ts is None:
            self.is_ts = is_ts
            return True
        if self.is_ts != is_ts:
            raise CeqlInputError(
                f"Event {where}: time attribute {self.time!r} mixes timestamps and numbers; "
                "give every event the same kind of time value."
            )
        return False

    def row_time(self, ev: Mapping[str, Any], pos: int) -> tuple[Any, bool]:
        """The time key of one event, and whether this event decided the kind of times."""
        v = ev.get(self.time, None) if self.time is not None else None
        if v is None or isinstance(v, bool):
            raise CeqlInputError(
                f"Event {pos} has no usable time: attribute {self.time!r} is "
                f"{'missing' if v is None else repr(v)}; every event needs a number or a "
                "timestamp there."
            )
        if isinstance(v, (_dt.date, _dt.datetime)):
            if self.is_ts is None:
                self.as_date = not isinstance(v, _dt.datetime)
                self.tz = v.tzinfo if isinstance(v, _dt.datetime) else None
            return to_micros(v), self.decide(True, pos)
        if isinstance(v, (int, float)) and v == v:
            return v, self.decide(False, pos)
        raise CeqlInputError(
            f"Event {pos} has time {v!r} in attribute {self.time!r}: use a number (seconds, or "
            "the time_unit given) or a datetime."
        )

    def row_wattr(self, ev: Mapping[str, Any], pos: int) -> Any:
        """The ``WITHIN n [attr]`` key of one event, checked for order."""
        wkey = ev.get(self.wattr) if self.wattr is not None else None
        if wkey is None or isinstance(wkey, bool) or not isinstance(wkey, (int, float)):
            raise CeqlInputError(
                f"Event {pos} has no number in attribute {self.wattr!r}, which WITHIN "
                f"measures the window on (got {wkey!r})."
            )
        if self.last_wattr is not None and wkey < self.last_wattr:
            raise self.out_of_order(pos, self.last_wattr, wkey, "attr")
        self.last_wattr = wkey
        return wkey

    def check_row_time(self, tkey: Any, pos: int) -> None:
        """Refuse a time key below the previous one."""
        if self.last_time is not None and tkey < self.last_time:
            raise self.out_of_order(pos, self.last_time, tkey, "time")
        self.last_time = tkey

    def value(self, key: Any) -> Any:
        """A time key as the user gave it (a datetime/date for timestamps)."""
        if self.is_ts:
            return from_micros(key, self.tz, self.as_date)
        return key

    def form(self) -> tuple[_dt.tzinfo | None, bool] | None:
        """How :class:`~ceql.Match` turns start keys back into times (None: as given)."""
        return (self.tz, self.as_date) if self.is_ts else None

    def out_of_order(self, pos: int, prev: Any, now: Any, what: str) -> CeqlInputError:
        """The error for an event whose time (``what="time"``) or window attribute goes back."""
        if self.is_ts and what == "time":
            prev, now = self.value(prev), self.value(now)
        name = self.time if what == "time" else self.wattr
        return CeqlInputError(
            f"Event {pos} is out of order: {name!r} goes back from {prev!r} to {now!r}. "
            "Sort the events by time first (Query.run(..., sort=True) does it), or fix the data."
        )

    def check_order(self, arr: np.ndarray, idx: np.ndarray, base: int, what: str) -> None:
        """Refuse a batch of keys (rows ``idx`` of a batch at ``base``) that goes back."""
        last = self.last_time if what == "time" else self.last_wattr
        if last is not None and arr[0] < last:
            raise self.out_of_order(int(idx[0]) + base, last, arr[0].item(), what)
        if arr.size > 1:
            d = np.flatnonzero(arr[1:] < arr[:-1])
            if d.size:
                k = int(d[0]) + 1
                raise self.out_of_order(int(idx[k]) + base, arr[k - 1].item(), arr[k].item(),
                                        what)
        v = arr[-1].item()
        if what == "time":
            self.last_time = v
        else:
            self.last_wattr = v

    def arrow_times(self, col: pa.Array | None, names: list[str], idx: np.ndarray,
                    base: int) -> tuple[np.ndarray, bool]:
        """The time keys of rows ``idx`` of a batch, and whether this batch decided their kind."""
        if col is None:
            raise CeqlInputError(
                f"Event {base} has no usable time: there is no column {self.time!r}; "
                f"columns are {', '.join(names)}."
            )
        t = col.type
        sel = col.take(pa.array(idx))
        temporal = pa.types.is_timestamp(t) or pa.types.is_date(t)
        if temporal:
            tzname = getattr(t, "tz", None)
            if self.is_ts is None:
                self.as_date = pa.types.is_date(t)
                self.tz = tzinfo_named(tzname, self.time) if tzname else None
            decided = self.decide(True, base)
            try:  # finer units are truncated to microseconds, overflows refused
                sel = pc.cast(sel, options=pc.CastOptions(pa.timestamp("us", tz=tzname),
                                                          allow_time_truncate=True))
            except pa.ArrowInvalid:
                raise self.out_of_range(sel, idx, base) from None
            sel = sel.cast(pa.int64())
        elif pa.types.is_integer(t) or pa.types.is_floating(t):
            decided = self.decide(False, base)
        else:
            raise CeqlInputError(
                f"Event {base} has time of type {t} in column {self.time!r}: use a number "
                "(seconds, or the time_unit given) or a timestamp/date column."
            )
        if sel.null_count:
            bad = int(idx[np.flatnonzero(np.asarray(pc.is_null(sel)))[0]]) + base
            raise CeqlInputError(
                f"Event {bad} has no usable time: attribute {self.time!r} is missing; every "
                "event needs a number or a timestamp there."
            )
        arr = sel.to_numpy(zero_copy_only=False)
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            bad = int(idx[np.flatnonzero(np.isnan(arr))[0]]) + base
            raise CeqlInputError(f"Event {bad} has time NaN in attribute {self.time!r}.")
        self.check_order(arr, idx, base, "time")
        if temporal and (arr[0] < _MIN_US or arr[-1] > _MAX_US):  # in order: ends are extremes
            raise self.out_of_range(col.take(pa.array(idx)), idx, base)
        return np.asarray(arr), decided

    def out_of_range(self, sel: pa.Array, idx: np.ndarray, base: int) -> CeqlInputError:
        """The error for the first time (of rows ``idx``, values ``sel``) ceql cannot hold."""
        t = sel.type
        ints = sel.cast(pa.int32()) if t == pa.date32() else sel
        raw = np.asarray(ints.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False))
        if pa.types.is_date(t):
            per = 86_400_000_000 if t == pa.date32() else 1_000
        else:
            per = _PER_US[t.unit]
        us = raw // 1_000 if getattr(t, "unit", None) == "ns" else raw
        bad = np.flatnonzero((us < -(-_MIN_US // per)) | (us > _MAX_US // per))
        k = int(bad[0]) if bad.size else 0
        return CeqlInputError(
            f"Event {int(idx[k]) + base} has time {int(raw[k])} ({t}) in column {self.time!r}, "
            "outside the years 1 to 9999 that ceql can give back as datetimes."
        )

    def arrow_wattr(self, col: pa.Array | None, idx: np.ndarray, base: int) -> np.ndarray:
        """The ``WITHIN n [attr]`` keys of rows ``idx`` of a batch, checked for order."""
        ok = col is not None and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type))
        sel = col.take(pa.array(idx)) if ok else None  # type: ignore[union-attr]
        if not ok or sel.null_count:  # type: ignore[union-attr]
            bad = base if sel is None else int(
                idx[np.flatnonzero(np.asarray(pc.is_null(sel)))[0]]) + base
            raise CeqlInputError(
                f"Event {bad} has no number in attribute {self.wattr!r}, which WITHIN "
                "measures the window on."
            )
        arr = np.asarray(sel.to_numpy(zero_copy_only=False))  # type: ignore[union-attr]
        self.check_order(arr, idx, base, "attr")
        return arr
