"""Time keys: event times as comparable numbers, and back to the values users gave.

Timestamps (``datetime``/``date``, Arrow timestamp/date columns) become microseconds since the
epoch; numbers stay as given and count ``time_unit``s. Strings are times only with a
``time_format`` (``datetime.strptime``'s; on Arrow columns ``pyarrow.compute.strptime``'s).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import reprlib
import sys
import zoneinfo
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CeqlInputError
from ..predicates.values import norm_slow

__all__ = ["Clock", "column", "exact", "from_micros", "iso", "show_event", "to_micros",
           "tzinfo_named"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_FLOAT_WHOLE = 2**53
_FLOAT_MAX = Fraction(sys.float_info.max)
# Arrow times ceql can give back as datetimes in any time zone (a day inside Python's range)
_MIN_US = (_dt.datetime(1, 1, 2) - _dt.datetime(1970, 1, 1)) // _dt.timedelta(microseconds=1)
_MAX_US = (_dt.datetime(9999, 12, 30) - _dt.datetime(1970, 1, 1)) // _dt.timedelta(microseconds=1)
_PER_US = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}  # ns: compared as microseconds
_OFFSET = re.compile(r"([+-])([01]\d|2[0-3]):?([0-5]\d)")
_SHOWN_FIELDS = 8  # of an event quoted in a message
_short = reprlib.Repr()
_short.maxstring = 40
_short.maxother = 40
_short.maxlist = _short.maxtuple = _short.maxset = _short.maxdict = 4


def iso(v: Any) -> str:
    """A time for a message: ISO 8601 for datetimes and dates, else its ``repr``."""
    if isinstance(v, (_dt.date, _dt.time)):
        return v.isoformat()
    return repr(v)


def show_event(e: Any) -> str:
    """An event for a message: its first fields, times in ISO 8601, long values cut short."""
    if not isinstance(e, Mapping):
        return _short.repr(e)
    try:
        items = list(e.items())
    except Exception:  # a mapping that cannot list its items: say what it is
        return _short.repr(e)
    shown = [f"{k!r}: {iso(v) if isinstance(v, (_dt.date, _dt.time)) else _short.repr(v)}"
             for k, v in items[:_SHOWN_FIELDS]]
    more = f", … ({len(items) - _SHOWN_FIELDS} more)" if len(items) > _SHOWN_FIELDS else ""
    return "{" + ", ".join(shown) + more + "}"


def column(rb: pa.RecordBatch, name: str | None, what: str | None) -> pa.Array | None:
    """Column ``name`` of a batch (None if absent). If two columns have that name:
    :class:`CeqlInputError`, for ``what`` (e.g. "the time") cannot tell which one is meant, or
    with ``what=None`` the first one (as conditions read it)."""
    if name is None:
        return None
    i = rb.schema.get_field_index(name)
    if i >= 0:
        return rb.column(i)
    names = rb.schema.names
    if names.count(name) > 1:
        if what is None:
            return rb.column(names.index(name))
        raise CeqlInputError(
            f"The events have {names.count(name)} columns named {name!r}, which {what} reads: "
            "rename or drop all but one.")
    return None


# a number as text: what a CSV reader would have read as a number
_NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_string_view(t))


def _batch_event(rb: pa.RecordBatch, i: int) -> str:
    """Row ``i`` of a batch, for a message."""
    try:
        return show_event(rb.slice(i, 1).to_pylist()[0])
    except (pa.ArrowException, ValueError, OverflowError):  # values Python cannot hold
        return f"row {i} of a batch with columns {', '.join(rb.schema.names)}"


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

    __slots__ = ("as_date", "is_ts", "last_time", "last_wattr", "time", "time_format", "tz",
                 "wattr")

    def __init__(self, time: str | None, wattr: str | None,
                 time_format: str | None = None) -> None:
        self.time = time
        self.wattr = wattr
        self.time_format = time_format
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
            raise self.no_time(ev, pos)
        if isinstance(v, (_dt.date, _dt.datetime)):
            return self.row_timestamp(v, pos)
        if isinstance(v, (int, float)) and v - v == 0:  # not NaN, not ±inf
            return v, self.decide(False, pos)
        return self.row_time_slow(ev, v, pos)

    def row_timestamp(self, v: _dt.date, pos: int) -> tuple[int, bool]:
        """The time key of a ``datetime``/``date``, and whether it decided the kind of times."""
        if self.is_ts is None:
            self.as_date = not isinstance(v, _dt.datetime)
            self.tz = v.tzinfo if isinstance(v, _dt.datetime) else None
        return to_micros(v), self.decide(True, pos)

    def row_time_slow(self, ev: Mapping[str, Any], v: Any, pos: int) -> tuple[Any, bool]:
        """:meth:`row_time` for a string (with a ``time_format``), a NumPy or ``Decimal``
        value, or an error."""
        fmt = self.time_format
        if isinstance(v, str) and fmt is not None:
            try:
                t = _dt.datetime.strptime(v, fmt)
            except ValueError as exc:
                raise CeqlInputError(
                    f"Event {pos} has time {v!r} in attribute {self.time!r}, which does not "
                    f"match time_format {fmt!r} ({exc}); the event: {show_event(ev)}.") from None
            return self.row_timestamp(t, pos)
        n = norm_slow(v) if not isinstance(v, str) else v
        if isinstance(n, (_dt.date, _dt.datetime)):
            return self.row_timestamp(n, pos)
        if n is None or (isinstance(n, (int, float)) and not isinstance(n, bool)):
            if n is not None and n - n == 0:
                return n, self.decide(False, pos)
            raise CeqlInputError(  # NaN (which the value model reads as NULL), ±inf
                f"Event {pos} has time {v} in attribute {self.time!r}: a time must be a finite "
                f"number (NaN and ±inf order nothing); drop or fix the event: {show_event(ev)}.")
        if isinstance(v, str):
            hint = (", or pass time_format (the strptime format of these strings, e.g. "
                    "time_format='%Y-%m-%d %H:%M:%S')")
        else:
            hint = ""
        raise CeqlInputError(
            f"Event {pos} has time {_short.repr(v)} ({type(v).__name__}) in attribute "
            f"{self.time!r}: use a number (seconds, or the time_unit given) or a datetime"
            f"{hint}; the event: {show_event(ev)}."
        )

    def no_time(self, ev: Mapping[str, Any], pos: int) -> CeqlInputError:
        """The error for an event whose time attribute is missing, NULL or a boolean."""
        t = self.time
        try:
            has = t in ev
        except TypeError:
            has = False
        v = ev.get(t) if has and t is not None else None
        what = ("missing from" if not has else "NULL (None) in" if v is None
                else f"{v!r}, a boolean, in")
        return CeqlInputError(
            f"Event {pos} has no usable time: attribute {t!r} is {what} the event "
            f"{show_event(ev)}; every event needs a number or a timestamp there."
        )

    def row_wattr(self, ev: Mapping[str, Any], pos: int) -> Any:
        """The ``WITHIN n [attr]`` key of one event, checked for order."""
        wkey = ev.get(self.wattr) if self.wattr is not None else None
        if (wkey is None or isinstance(wkey, bool) or not isinstance(wkey, (int, float))
                or wkey - wkey != 0):  # NaN, ±inf
            n = norm_slow(wkey)
            if isinstance(n, bool) or not isinstance(n, (int, float)) or n - n != 0:
                raise CeqlInputError(
                    f"Event {pos} has no number in attribute {self.wattr!r}, which WITHIN "
                    f"measures the window on (got {_short.repr(wkey)}); the event: "
                    f"{show_event(ev)}."
                )
            wkey = n
        if self.last_wattr is not None and wkey < self.last_wattr:
            raise self.out_of_order(pos, self.last_wattr, wkey, "attr", show_event(ev))
        self.last_wattr = wkey
        return wkey

    def check_row_time(self, tkey: Any, pos: int, ev: Mapping[str, Any]) -> None:
        """Refuse a time key below the previous one."""
        if self.last_time is not None and tkey < self.last_time:
            raise self.out_of_order(pos, self.last_time, tkey, "time", show_event(ev))
        self.last_time = tkey

    def value(self, key: Any) -> Any:
        """A time key as the user gave it (a datetime/date for timestamps)."""
        if self.is_ts:
            return from_micros(key, self.tz, self.as_date)
        return key

    def form(self) -> tuple[_dt.tzinfo | None, bool] | None:
        """How :class:`~ceql.Match` turns start keys back into times (None: as given)."""
        return (self.tz, self.as_date) if self.is_ts else None

    def out_of_order(self, pos: int, prev: Any, now: Any, what: str,
                     event: str) -> CeqlInputError:
        """The error for event ``pos`` (``event`` shows it) whose time (``what="time"``) or
        window attribute goes back."""
        if self.is_ts and what == "time":
            prev, now = self.value(prev), self.value(now)
        name = self.time if what == "time" else self.wattr
        return CeqlInputError(
            f"Event {pos} is out of order: {name!r} goes back from {iso(prev)} to {iso(now)} "
            f"(the event: {event}). Sort the events by time first (Query.run(..., sort=True) "
            "does it), or fix the data."
        )

    def check_order(self, arr: np.ndarray, idx: np.ndarray, base: int, what: str,
                    rb: pa.RecordBatch) -> None:
        """Refuse a batch of keys (rows ``idx`` of ``rb``, at ``base``) that goes back."""
        last = self.last_time if what == "time" else self.last_wattr
        if last is not None and arr[0] < last:
            i = int(idx[0])
            raise self.out_of_order(i + base, last, arr[0].item(), what, _batch_event(rb, i))
        if arr.size > 1:
            d = np.flatnonzero(arr[1:] < arr[:-1])
            if d.size:
                k = int(d[0]) + 1
                i = int(idx[k])
                raise self.out_of_order(i + base, arr[k - 1].item(), arr[k].item(), what,
                                        _batch_event(rb, i))
        v = arr[-1].item()
        if what == "time":
            self.last_time = v
        else:
            self.last_wattr = v

    def arrow_times(self, rb: pa.RecordBatch, idx: np.ndarray,
                    base: int) -> tuple[np.ndarray, bool]:
        """The time keys of rows ``idx`` of ``rb`` (the batch at ``base``), and whether this
        batch decided their kind."""
        col = column(rb, self.time, "the time")
        if col is None:
            raise CeqlInputError(
                f"Event {base} has no usable time: there is no column {self.time!r}; "
                f"columns are {', '.join(rb.schema.names)}."
            )
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        sel = col.take(pa.array(idx))
        if _is_text(col.type):
            if self.time_format is None:
                raise self.text_times(sel, idx, base, rb)
            sel = self.parse_times(sel, idx, base, rb)
        t = sel.type
        temporal = pa.types.is_timestamp(t) or pa.types.is_date(t)
        original = sel
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
                raise self.out_of_range(original, idx, base) from None
            sel = sel.cast(pa.int64())
        elif pa.types.is_integer(t) or pa.types.is_floating(t):
            decided = self.decide(False, base)
        else:
            raise CeqlInputError(
                f"Column {self.time!r}, the time, has type {t} (events {base} to "
                f"{base + rb.num_rows - 1}): use a number (seconds, or the time_unit given) or a "
                "timestamp/date column."
            )
        if sel.null_count:
            i = int(idx[np.flatnonzero(np.asarray(pc.is_null(sel)))[0]])
            raise CeqlInputError(
                f"Event {i + base} has no usable time: attribute {self.time!r} is NULL in the "
                f"event {_batch_event(rb, i)}; every event needs a number or a timestamp there."
            )
        arr = sel.to_numpy(zero_copy_only=False)
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            i = int(idx[np.flatnonzero(~np.isfinite(arr))[0]])
            raise CeqlInputError(
                f"Event {i + base} has time {arr[np.flatnonzero(~np.isfinite(arr))[0]]} in "
                f"attribute {self.time!r}: a time must be a finite number (NaN and ±inf order "
                f"nothing); drop or fix the event: {_batch_event(rb, i)}.")
        self.check_order(arr, idx, base, "time", rb)
        if temporal and (arr[0] < _MIN_US or arr[-1] > _MAX_US):  # in order: ends are extremes
            raise self.out_of_range(original, idx, base)
        return np.asarray(arr), decided

    def text_times(self, strings: pa.Array, idx: np.ndarray, base: int,
                   rb: pa.RecordBatch) -> CeqlInputError:
        """The error for a time column of strings without a ``time_format``, naming the first
        value that is not a number (a reader makes a whole column text for one such value)."""
        numeric = pc.match_substring_regex(strings, _NUMBER)
        bad = np.flatnonzero(np.asarray(
            pc.invert(numeric).fill_null(False).to_numpy(zero_copy_only=False), dtype=bool))
        fix = ("pass time_format, the strptime format of these strings (e.g. "
               "time_format='%Y-%m-%d %H:%M:%S'), or give the reader a schema that reads "
               "the column as numbers or timestamps")
        if bad.size:
            k = int(bad[0])
            i = int(idx[k])
            return CeqlInputError(
                f"Event {i + base} has time {strings[k].as_py()!r} in column {self.time!r}, "
                f"which holds strings ({strings.type}): {fix}; the event: "
                f"{_batch_event(rb, i)}.")
        return CeqlInputError(
            f"Column {self.time!r}, the time, holds numbers as strings ({strings.type}, events "
            f"{base} to {base + rb.num_rows - 1}): cast it to numbers (e.g. "
            "pyarrow.compute.cast(column, pyarrow.float64())) or give the reader a schema.")

    def parse_times(self, strings: pa.Array, idx: np.ndarray, base: int,
                    rb: pa.RecordBatch) -> pa.Array:
        """Strings of rows ``idx`` read with ``time_format`` (microsecond timestamps)."""
        fmt = self.time_format
        assert fmt is not None
        if any(d in fmt for d in _PYTHON_ONLY):
            parsed = _strptime_column(strings, fmt)
        else:
            try:
                parsed = pc.strptime(strings, format=fmt, unit="us", error_is_null=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise CeqlInputError(
                    f"Cannot read times with time_format {fmt!r}: {exc}.") from None
        failed = np.flatnonzero(np.asarray(
            pc.and_(pc.is_null(parsed), pc.is_valid(strings)).to_numpy(zero_copy_only=False)))
        if failed.size:
            k = int(failed[0])
            i = int(idx[k])
            raise CeqlInputError(
                f"Event {i + base} has time {strings[k].as_py()!r} in column {self.time!r}, "
                f"which does not match time_format {fmt!r}; the event: "
                f"{_batch_event(rb, i)}.")
        return parsed

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

    def arrow_wattr(self, rb: pa.RecordBatch, idx: np.ndarray, base: int) -> np.ndarray:
        """The ``WITHIN n [attr]`` keys of rows ``idx`` of ``rb``, checked for order."""
        col = column(rb, self.wattr, "WITHIN")
        if col is not None and pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        if col is None or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            kind = "there is no such column" if col is None else f"the column has type {col.type}"
            raise CeqlInputError(
                f"Event {base} has no number in attribute {self.wattr!r}, which WITHIN "
                f"measures the window on: {kind}."
            )
        sel = col.take(pa.array(idx))
        arr = np.asarray(sel.to_numpy(zero_copy_only=False))
        bad = np.asarray(pc.is_null(sel).to_numpy(zero_copy_only=False), dtype=bool)
        if arr.dtype.kind == "f":
            bad |= ~np.isfinite(arr)  # NaN, ±inf
        if bad.any():
            i = int(idx[np.flatnonzero(bad)[0]])
            raise CeqlInputError(
                f"Event {i + base} has no number in attribute {self.wattr!r}, which WITHIN "
                f"measures the window on; the event: {_batch_event(rb, i)}."
            )
        self.check_order(arr, idx, base, "attr", rb)
        return arr


# Directives Arrow's strptime lacks: such formats are read value by value with Python's.
_PYTHON_ONLY = ("%f",)


def _strptime_column(strings: pa.Array, fmt: str) -> pa.Array:
    """``strings`` read with ``datetime.strptime`` (None where a value does not match), as
    microsecond timestamps like Arrow's strptime gives (UTC when the format reads a zone)."""
    aware = "%z" in fmt
    out: list[_dt.datetime | None] = []
    for v in strings.to_pylist():
        try:
            t = _dt.datetime.strptime(v, fmt) if v is not None else None
        except ValueError:
            t = None
        if t is not None and t.tzinfo is not None:
            t = t.astimezone(_dt.UTC).replace(tzinfo=None)
        out.append(t)
    return pa.array(out, type=pa.timestamp("us", tz="UTC" if aware else None))
