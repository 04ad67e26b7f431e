"""The value model shared by the row and column paths: kinds, normalization, 3-valued results.

A normalized value is ``None`` (NULL) or a Python value of one *kind*; values compare only
within one kind. Results of atoms are codes: :data:`UNKNOWN`, :data:`TRUE`, :data:`FALSE`.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir import nodes as _ast

__all__ = [
    "FALSE",
    "K_BOOL",
    "K_DATE",
    "K_DT",
    "K_DTZ",
    "K_DUR",
    "K_NUM",
    "K_OTHER",
    "K_STR",
    "K_TIME",
    "K_TIMETZ",
    "NOT3",
    "PY_ARITH",
    "PY_CMP",
    "TEMPORAL",
    "TIMES",
    "TRUE",
    "UNKNOWN",
    "InSetSpec",
    "and3",
    "arith",
    "clash",
    "cmp3",
    "is_num",
    "kind",
    "neg",
    "norm",
    "norm_slow",
    "seconds",
    "time_arith",
    "time_of_text",
]

# Per-atom result codes; ``code << 2k`` sets atom k's bits of a class.
UNKNOWN, TRUE, FALSE = 0, 1, 2
#: 3-valued NOT, indexed by code.
NOT3 = (UNKNOWN, FALSE, TRUE)

K_OTHER, K_NUM, K_STR, K_BOOL = 0, 1, 2, 3
K_DT, K_DTZ, K_DATE, K_TIME, K_TIMETZ, K_DUR = 4, 5, 6, 7, 8, 9
TEMPORAL = frozenset({K_DT, K_DTZ, K_DATE, K_TIME, K_TIMETZ, K_DUR})
#: Kinds of points in time: they subtract to durations (K_DUR).
TIMES = frozenset({K_DT, K_DTZ, K_DATE})

_KIND_BY_TYPE: dict[type, int] = {
    int: K_NUM, float: K_NUM, str: K_STR, bool: K_BOOL,
    _dt.date: K_DATE, _dt.timedelta: K_DUR,
}


def kind(v: Any) -> int:
    """Kind of a normalized, non-NULL value."""
    k = _KIND_BY_TYPE.get(type(v))
    if k is not None:
        return k
    if isinstance(v, bool):
        return K_BOOL
    if isinstance(v, (int, float)):
        return K_NUM
    if isinstance(v, str):
        return K_STR
    if isinstance(v, _dt.datetime):  # before date: datetime subclasses date
        return K_DTZ if v.utcoffset() is not None else K_DT
    if isinstance(v, _dt.date):
        return K_DATE
    if isinstance(v, _dt.time):
        return K_TIMETZ if v.utcoffset() is not None else K_TIME
    if isinstance(v, _dt.timedelta):
        return K_DUR
    return K_OTHER


def norm(v: Any) -> Any:
    """Map a raw attribute value into the value model (``None`` = NULL)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is float:
        return None if v != v else v
    return norm_slow(v)


def norm_slow(v: Any) -> Any:
    """:func:`norm` for values that are not a plain ``str``/``int``/``bool``/``float``/``None``."""
    if isinstance(v, (np.datetime64, np.timedelta64)):
        item = v.item()
        return item if isinstance(item, (_dt.date, _dt.timedelta)) else v
    if isinstance(v, np.generic):
        return norm(v.item())
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return None if v != v else float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            return None if v.is_nan() else float(v)
        exp = v.as_tuple().exponent
        return int(v) if isinstance(exp, int) and exp >= 0 else float(v)
    return v


def is_num(v: Any) -> bool:
    """Whether a normalized value is a number."""
    t = type(v)
    return t is int or t is float


PY_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}

PY_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "/": operator.truediv, "%": operator.mod,
}


def cmp3(op: str, a: Any, b: Any) -> int:
    """3-valued comparison of two normalized values, as a code.

    Values compare within one kind, and across two: a duration with a number of seconds, a
    time with a string that writes one in ISO 8601 (:func:`time_of_text`).
    """
    if a is None or b is None:
        return UNKNOWN
    ka, kb = kind(a), kind(b)
    if ka != kb:
        return _cmp_across(op, a, ka, b, kb)
    if ka == K_OTHER:
        return UNKNOWN
    if ka in TEMPORAL:
        try:
            r = PY_CMP[op](a, b)
        except TypeError:
            return UNKNOWN
    else:
        r = PY_CMP[op](a, b)
    return TRUE if r else FALSE


def _cmp_across(op: str, a: Any, ka: int, b: Any, kb: int) -> int:
    if ka == K_DUR and kb == K_NUM:
        a = seconds(a)
    elif ka == K_NUM and kb == K_DUR:
        b = seconds(b)
    elif ka in TIMES and kb == K_STR:
        b = time_of_text(b, ka)
    elif ka == K_STR and kb in TIMES:
        a = time_of_text(a, kb)
    else:
        return UNKNOWN
    if a is None or b is None:
        return UNKNOWN
    try:
        return TRUE if PY_CMP[op](a, b) else FALSE
    except TypeError:
        return UNKNOWN


def seconds(d: _dt.timedelta) -> Fraction:
    """A duration in seconds, exactly (nanoseconds too, for pandas' Timedelta)."""
    whole = Fraction(d.days * 86400 + d.seconds) + Fraction(d.microseconds, 10**6)
    ns = getattr(d, "nanoseconds", 0)
    return whole + Fraction(ns, 10**9) if ns else whole


@functools.lru_cache(maxsize=4096)
def time_of_text(text: str, k: int) -> Any:
    """The time of kind ``k`` (a date, naive or aware datetime) written ``text`` in ISO 8601,
    ``None`` if it writes none of that kind. Against a time with a zone, a text without an
    offset is in UTC; against one without, a text with an offset writes none."""
    try:
        if k == K_DATE:
            return _dt.date.fromisoformat(text)
        t = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if t.utcoffset() is None:
        return t.replace(tzinfo=_dt.UTC) if k == K_DTZ else t
    return t if k == K_DTZ else None


def clash(a: Any, b: Any) -> bool:
    """Whether two non-NULL normalized values are of kinds that never compare (a string and a
    number, a time and a number, a time and a string that writes no time, ...): a comparison
    of them is unknown, which the caller may want to say. Booleans and other values are not
    counted (they are never meant as numbers or times)."""
    ka, kb = kind(a), kind(b)
    if ka == kb or ka in (K_BOOL, K_OTHER) or kb in (K_BOOL, K_OTHER):
        return False
    if {ka, kb} == {K_DUR, K_NUM}:
        return False
    if ka in TIMES and kb == K_STR:
        return time_of_text(b, ka) is None
    if kb in TIMES and ka == K_STR:
        return time_of_text(a, kb) is None
    return True


def arith(op: str, a: Any, b: Any) -> Any:
    """``a op b`` on normalized values; NULL unless both are numbers and the result is one, or
    times and durations (:func:`time_arith`)."""
    if not (is_num(a) and is_num(b)):
        return None if a is None or b is None else time_arith(op, a, b)
    try:
        r = PY_ARITH[op](a, b)
    except (ZeroDivisionError, OverflowError):
        return None
    if type(r) is float and r != r:
        return None
    return r


def _as_datetime(v: Any) -> Any:
    # a date is its midnight: it adds and subtracts as that datetime
    if type(v) is _dt.date:
        return _dt.datetime(v.year, v.month, v.day)
    return v


def time_arith(op: str, a: Any, b: Any) -> Any:
    """``a op b`` where ``a`` and ``b`` are not both numbers (``None`` = NULL).

    time - time is a duration; time ± duration and time ± number (seconds) a time; duration ±
    duration or number (seconds) a duration; duration * or / number a duration; duration /
    duration a number. Results round to the microsecond as Python's ``datetime`` does.
    """
    ka, kb = kind(a), kind(b)
    try:
        if ka in TIMES:
            a = _as_datetime(a)
            if kb in TIMES and op == "-":
                return a - _as_datetime(b)
            if op in ("+", "-") and kb in (K_DUR, K_NUM):
                d = b if kb == K_DUR else _dt.timedelta(seconds=b)
                return a + d if op == "+" else a - d
            return None
        if ka == K_DUR:
            if kb in (K_DUR, K_NUM) and op in ("+", "-"):
                d = b if kb == K_DUR else _dt.timedelta(seconds=b)
                return a + d if op == "+" else a - d
            if kb in TIMES and op == "+":
                return _as_datetime(b) + a
            if op == "*" and kb == K_NUM:
                return a * b
            if op == "/" and kb in (K_NUM, K_DUR):
                r = a / b
                return None if type(r) is float and r != r else r
            return None
        if ka == K_NUM:
            if kb in TIMES and op == "+":
                return _as_datetime(b) + _dt.timedelta(seconds=a)
            if kb == K_DUR and op in ("+", "-"):
                d = _dt.timedelta(seconds=a)
                return d + b if op == "+" else d - b
            if kb == K_DUR and op == "*":
                return b * a
        return None
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        return None


def neg(a: Any) -> Any:
    """``-a`` on a normalized value (NULL unless a number or a duration)."""
    if is_num(a):
        return -a
    if isinstance(a, _dt.timedelta):
        try:
            return -a
        except OverflowError:
            return None
    return None


def and3(a: int, b: int) -> int:
    """3-valued AND of two codes."""
    if a == FALSE or b == FALSE:
        return FALSE
    return TRUE if a == TRUE and b == TRUE else UNKNOWN


class InSetSpec:
    """The literals of an IN list, split by kind.

    ``x IN {v1, ..}`` is ``x = v1 OR ..`` in 3-valued logic: FALSE needs every literal to be
    non-NULL and of ``x``'s kind; an empty list is FALSE even for a NULL ``x``.
    """

    def __init__(self, values: tuple[_ast.Literal, ...]) -> None:
        vals = [norm(v.value) for v in values]
        self.empty = not values
        self.nums = frozenset(v for v in vals if is_num(v))
        self.strs = frozenset(v for v in vals if type(v) is str)
        self.bools = frozenset(v for v in vals if type(v) is bool)
        kinds = {None if v is None else kind(v) for v in vals}
        self.only: int | None = kinds.pop() if len(kinds) == 1 else None

    def row_code(self, x: Any) -> int:
        """The code of ``x IN values`` for one normalized value."""
        if type(x) is str and not self.empty:
            return TRUE if x in self.strs else FALSE if self.only == K_STR else UNKNOWN
        if self.empty:
            return FALSE
        if x is None:
            return UNKNOWN
        k = kind(x)
        if k in TIMES and self.strs:
            return self.time_code(x, k)
        s = self.nums if k == K_NUM else self.strs if k == K_STR else (
            self.bools if k == K_BOOL else None)
        if s and x in s:
            return TRUE
        return FALSE if self.only == k else UNKNOWN

    def times_of(self, x: Any) -> bool:
        """Whether some string of the list writes a time of ``x``'s kind."""
        k = kind(x)
        return any(time_of_text(v, k) is not None for v in self.strs)

    def time_code(self, x: Any, k: int) -> int:
        """The code of ``x IN values`` for a time ``x`` (of kind ``k``): the strings that
        write a time of its kind in ISO 8601 are those times."""
        times = [time_of_text(v, k) for v in self.strs]
        try:
            if any(t is not None and t == x for t in times):
                return TRUE
        except TypeError:
            return UNKNOWN
        every = self.only == K_STR and all(t is not None for t in times)
        return FALSE if every else UNKNOWN
