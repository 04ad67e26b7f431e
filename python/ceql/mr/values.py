"""SQL values as docs/match_recognize.md defines them for the Python engine: three-valued logic,
numbers (integers, exact decimals, doubles; Spark's ``/`` and ``%``; NULL on division by zero),
time arithmetic, text, LIKE, the scalar functions and casts of the Python subset, and the
running accumulators of the aggregates."""

from __future__ import annotations

import datetime
import math
import operator
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from ..frontends.mr.errors import UnsupportedFunctionError
from .errors import MrValueError

__all__ = [
    "CAST_TYPES",
    "FUNCTIONS",
    "Accumulator",
    "arith",
    "cast",
    "comparator",
    "compare",
    "comparison",
    "like",
    "negate",
    "sql_and",
    "sql_not",
    "sql_or",
    "text",
    "truth",
]

_DT = datetime.datetime
_TD = datetime.timedelta


def _num(v: object) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def _promote(a: object, b: object) -> tuple[object, object]:
    """Two numbers in their common kind: double over decimal over integer."""
    if isinstance(a, float) or isinstance(b, float):
        return float(a), float(b)  # type: ignore[arg-type]
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a), Decimal(b)  # type: ignore[arg-type]
    return a, b


def arith(op: str, a: object, b: object) -> object:
    """``a op b`` for ``+ - * / %``: NULL in, NULL out; NULL on a division by zero."""
    if a is None or b is None:
        return None
    if _num(a) and _num(b):
        x, y = _promote(a, b)
        if op == "+":
            return x + y  # type: ignore[operator]
        if op == "-":
            return x - y  # type: ignore[operator]
        if op == "*":
            return x * y  # type: ignore[operator]
        if y == 0:
            return None
        if op == "/":
            return x / y  # type: ignore[operator]
        if isinstance(x, int):  # the sign of the dividend (SQL, Java), not Python's
            r = abs(x) % abs(y)  # type: ignore[arg-type]
            return r if x >= 0 else -r
        if isinstance(x, float):
            return math.fmod(x, y)  # type: ignore[arg-type]
        return x % y  # type: ignore[operator]  # Decimal's % keeps the dividend's sign
    if op == "+":
        if isinstance(a, _DT) and isinstance(b, _TD):
            return a + b
        if isinstance(a, _TD) and isinstance(b, _DT):
            return b + a
        if isinstance(a, _TD) and isinstance(b, _TD):
            return a + b
    if op == "-" and isinstance(a, (_DT, _TD)) and isinstance(b, (_DT, _TD)):
        if isinstance(a, _DT) and isinstance(b, _DT):
            _same_zoning(a, b, "subtract")
        if isinstance(a, _DT) or isinstance(b, _TD):
            return a - b  # type: ignore[operator]
    raise MrValueError(f"Cannot compute {a!r} {op} {b!r}: these kinds of values do not "
                       "combine (numbers with numbers; times with intervals)")


def _same_zoning(a: datetime.datetime, b: datetime.datetime, what: str) -> None:
    if (a.tzinfo is None) != (b.tzinfo is None):
        raise MrValueError(f"Cannot {what} {a!r} and {b!r}: one time has a zone and the "
                           "other has none; give every time a zone, or none")


def negate(v: object) -> object:
    """Unary minus."""
    if v is None:
        return None
    if _num(v) or isinstance(v, _TD):
        return -v  # type: ignore[operator]
    raise MrValueError(f"Cannot negate {v!r}: only numbers and intervals have a minus")


def compare(op: str, a: object, b: object) -> bool | None:
    """``a op b`` for ``= <> < <= > >=``; NULL when either side is."""
    if a is None or b is None:
        return None
    if _num(a) and _num(b):
        x, y = _promote(a, b)
    elif type(a) is type(b) and isinstance(a, (str, bool, _DT, _TD)):
        if isinstance(a, _DT):
            _same_zoning(a, b, "compare")  # type: ignore[arg-type]
        x, y = a, b
    else:
        raise MrValueError(f"Cannot compare {a!r} with {b!r}: values of these kinds never "
                           "compare (an interval compares with intervals, text with text)")
    if op == "=":
        return bool(x == y)
    if op == "<>":
        return bool(x != y)
    if op == "<":
        return bool(x < y)  # type: ignore[operator]
    if op == "<=":
        return bool(x <= y)  # type: ignore[operator]
    if op == ">":
        return bool(x > y)  # type: ignore[operator]
    return bool(x >= y)  # type: ignore[operator]


_SAME_KIND = frozenset({int, float, Decimal, str, bool, _DT, _TD})
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


def comparator(op: str) -> Callable[[object, object], bool | None]:
    """:func:`compare` for one operator, quicker for two values of one kind."""
    fast = _OPS[op]

    def cmp(a: object, b: object) -> bool | None:
        if a is None or b is None:
            return None
        kind = type(a)
        if kind is type(b) and kind in _SAME_KIND and kind is not _DT:
            return bool(fast(a, b))
        return compare(op, a, b)
    return cmp


def comparison(op: str, left: Callable[[Any, Any], object],
               right: Callable[[Any, Any], object]) -> Callable[[Any, Any], bool | None]:
    """The closure ``(v, at) → left(v, at) op right(v, at)`` of :func:`comparator`, its
    quick case (two values of one kind) inlined."""
    fast = _OPS[op]
    same = _SAME_KIND

    def cmp(v: Any, at: Any) -> bool | None:
        a = left(v, at)
        b = right(v, at)
        if a is None or b is None:
            return None
        kind = type(a)
        if kind is type(b) and kind in same:
            try:
                return bool(fast(a, b))
            except TypeError:  # two times, one with a zone and one without
                pass
        return compare(op, a, b)
    return cmp


def truth(v: object) -> bool | None:
    """A condition's value: TRUE, FALSE or NULL (anything else is an error)."""
    if v is None or v is True or v is False:
        return v
    raise MrValueError(f"A condition gave {v!r}, not TRUE, FALSE or NULL")


def sql_and(a: bool | None, b: bool | None) -> bool | None:
    """Three-valued AND."""
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def sql_or(a: bool | None, b: bool | None) -> bool | None:
    """Three-valued OR."""
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def sql_not(a: bool | None) -> bool | None:
    """Three-valued NOT."""
    return None if a is None else not a


def text(v: object) -> str:
    """A value as ``||`` and CAST … AS STRING write it."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, _DT):
        return v.isoformat(sep=" ")
    return str(v)


@lru_cache(maxsize=256)
def _like_regex(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    chars = iter(pattern)
    for c in chars:
        if c == "\\":
            nxt = next(chars, None)
            parts.append(re.escape("\\" if nxt is None else nxt))
        elif c == "%":
            parts.append(".*")
        elif c == "_":
            parts.append(".")
        else:
            parts.append(re.escape(c))
    return re.compile("".join(parts), re.S)


def like(value: object, pattern: object) -> bool | None:
    """SQL's LIKE: ``%`` any text, ``_`` one character, ``\\`` escapes; the whole text."""
    if value is None or pattern is None:
        return None
    if not isinstance(value, str) or not isinstance(pattern, str):
        raise MrValueError(f"LIKE compares text with a text pattern, not {value!r} with "
                           f"{pattern!r}")
    return _like_regex(pattern).fullmatch(value) is not None


# ---------------------------------------------------------------- functions and casts

def _round(args: list[object]) -> object:
    v = args[0]
    digits = args[1] if len(args) > 1 else 0
    if v is None or digits is None:
        return None
    if not _num(v) or not _num(digits):
        raise MrValueError(f"ROUND takes numbers, not {v!r} and {digits!r}")
    d = int(digits)  # type: ignore[call-overload]
    if isinstance(v, int) and d >= 0:
        return v
    exact = Decimal(repr(v)) if isinstance(v, float) else Decimal(v)  # type: ignore[arg-type]
    r = exact.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)  # halves away from 0
    if not r:
        r = r.copy_abs()  # a zero has no sign (Spark rounds through BigDecimal: -0.4 → 0.0)
    if isinstance(v, float):
        return float(r)
    return int(r) if isinstance(v, int) else r


def _abs(args: list[object]) -> object:
    v = args[0]
    if v is None:
        return None
    if _num(v) or isinstance(v, _TD):
        return abs(v)  # type: ignore[arg-type]
    raise MrValueError(f"ABS takes a number or an interval, not {v!r}")


def _case(upper: bool) -> Callable[[list[object]], object]:
    def f(args: list[object]) -> object:
        v = args[0]
        if v is None:
            return None
        return text(v).upper() if upper else text(v).lower()
    return f


def _coalesce(args: list[object]) -> object:
    return next((a for a in args if a is not None), None)


#: The scalar functions of the Python subset: name → function of the argument values.
FUNCTIONS: dict[str, Callable[[list[object]], object]] = {
    "ABS": _abs, "ROUND": _round, "UPPER": _case(True), "LOWER": _case(False),
    "COALESCE": _coalesce,
}

_INTS = ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "LONG")
_DOUBLES = ("DOUBLE", "FLOAT", "REAL")
_DECIMALS = ("DECIMAL", "NUMERIC", "DEC")
_STRINGS = ("STRING", "VARCHAR", "CHAR", "TEXT")
#: The type names CAST takes in the Python subset (before any parameters).
CAST_TYPES = (*_INTS, *_DOUBLES, *_DECIMALS, *_STRINGS, "BOOLEAN", "TIMESTAMP")


def _unsupported_cast(v: object, type_name: str) -> UnsupportedFunctionError:
    return UnsupportedFunctionError(f"CAST of {v!r} to {type_name} is not in the Python subset")


def cast(v: object, type_name: str) -> object:
    """``CAST(v AS type_name)``; a string that writes no such value gives NULL."""
    if v is None:
        return None
    base = type_name.split("(")[0].strip()
    try:
        if base in _INTS:
            if isinstance(v, str):
                return int(v.strip())
            if isinstance(v, (bool, int, float, Decimal)):
                return int(v)
        elif base in _DOUBLES:
            if isinstance(v, (str, int, float, Decimal)):
                return float(v)
        elif base in _DECIMALS:
            if isinstance(v, (str, int, float, Decimal)):
                scale = int(type_name.split(",")[1].rstrip(") ")) if "," in type_name else 0
                exact = (Decimal(v.strip()) if isinstance(v, str) else
                         Decimal(repr(v)) if isinstance(v, float) else Decimal(v))
                return exact.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
        elif base in _STRINGS:
            return text(v)
        elif base == "BOOLEAN":
            if isinstance(v, str):
                return {"true": True, "false": False}.get(v.strip().lower())
            if isinstance(v, bool):
                return v
            if _num(v):
                return v != 0
        elif base == "TIMESTAMP":
            if isinstance(v, str):
                return _DT.fromisoformat(v.strip())
            if isinstance(v, _DT):
                return v
    except (ValueError, InvalidOperation):
        return None  # Spark without ANSI mode
    raise _unsupported_cast(v, type_name)


# ---------------------------------------------------------------- aggregates

def _fingerprint(v: object) -> tuple[object, ...]:
    """What tells two values apart for every later use (``1``, ``1.0`` and ``True`` are equal
    in Python but print differently): registers holding values compare by this."""
    return (type(v), repr(v), v)


class Accumulator:
    """A running aggregate (``COUNT``, ``SUM``, ``AVG``, ``MIN``, ``MAX``, DISTINCT or not)
    as a hashable state: :meth:`add` a value of a row, :meth:`result` at any point."""

    def __init__(self, name: str, distinct: bool) -> None:
        self.name = name
        # DISTINCT changes nothing for MIN and MAX (the first of equal values is kept)
        self.distinct = distinct and name in ("COUNT", "SUM", "AVG")
        self.initial: object = () if self.distinct else (0 if name == "COUNT" else None)

    def add(self, state: object, v: object) -> object:
        """The state after a row whose argument is ``v`` (NULLs are skipped)."""
        if v is None:
            return state
        if self.distinct:
            seen: tuple[tuple[object, ...], ...] = state  # type: ignore[assignment]
            if any(w == v for *_, w in seen):
                return state
            return (*seen, _fingerprint(v))
        name = self.name
        if name == "COUNT":
            return state + 1  # type: ignore[operator]
        if state is None:
            return (_fingerprint(v), 1) if name in ("SUM", "AVG") else _fingerprint(v)
        if name in ("SUM", "AVG"):
            pair: tuple[tuple[object, ...], int] = state  # type: ignore[assignment]
            return (_fingerprint(arith("+", pair[0][2], v)), pair[1] + 1)
        cur = state[2]  # type: ignore[index]
        if (v < cur) if name == "MIN" else (v > cur):
            return _fingerprint(v)
        return state

    def plain(self, state: object) -> object:
        """``state`` as plain data for a snapshot (the values, without their fingerprints)."""
        if self.distinct:
            return [w for *_, w in state]  # type: ignore[attr-defined]
        if self.name == "COUNT" or state is None:
            return state
        if self.name in ("SUM", "AVG"):
            pair: tuple[tuple[object, ...], int] = state  # type: ignore[assignment]
            return [pair[0][2], pair[1]]
        return [state[2]]  # type: ignore[index]

    def from_plain(self, data: object) -> object:
        """The state :meth:`plain` gave ``data`` for (ValueError: not one)."""
        if self.distinct:
            if not isinstance(data, list) or None in data:
                raise ValueError("the values of a DISTINCT aggregate")
            return tuple(_fingerprint(w) for w in data)
        if self.name == "COUNT":
            if type(data) is not int or data < 0:
                raise ValueError("a count")
            return data
        if data is None:
            return None
        if self.name in ("SUM", "AVG"):
            if (not isinstance(data, list) or len(data) != 2 or data[0] is None
                    or type(data[1]) is not int or data[1] < 1):
                raise ValueError("a running sum")
            return (_fingerprint(data[0]), data[1])
        if not isinstance(data, list) or len(data) != 1 or data[0] is None:
            raise ValueError(f"a running {self.name}")
        return _fingerprint(data[0])

    def result(self, state: object) -> object:
        """The aggregate's value over the values added so far."""
        name = self.name
        if self.distinct:
            values = [w for *_, w in state]  # type: ignore[attr-defined]
            if name == "COUNT":
                return len(values)
            if not values:
                return None
            total = values[0]
            for w in values[1:]:
                total = arith("+", total, w)
            return total if name == "SUM" else _average(total, len(values))
        if name == "COUNT":
            return state
        if state is None:
            return None
        if name in ("SUM", "AVG"):
            pair: tuple[tuple[object, ...], int] = state  # type: ignore[assignment]
            total = pair[0][2]
            return total if name == "SUM" else _average(total, pair[1])
        return state[2]  # type: ignore[index]


def _average(total: object, count: int) -> object:
    if isinstance(total, int) and not isinstance(total, bool):
        return total / count  # AVG of integers is a double
    return arith("/", total, count)
