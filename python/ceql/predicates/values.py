"""The value model shared by the row and column paths: kinds, normalization, 3-valued results.

A normalized value is ``None`` (NULL) or a Python value of one *kind*; values compare only
within one kind. Results of atoms are codes: :data:`UNKNOWN`, :data:`TRUE`, :data:`FALSE`.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import operator
from collections.abc import Callable
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
    "TRUE",
    "UNKNOWN",
    "InSetSpec",
    "and3",
    "arith",
    "cmp3",
    "is_num",
    "kind",
    "neg",
    "norm",
    "norm_slow",
]

# Per-atom result codes; ``code << 2k`` sets atom k's bits of a class.
UNKNOWN, TRUE, FALSE = 0, 1, 2
#: 3-valued NOT, indexed by code.
NOT3 = (UNKNOWN, FALSE, TRUE)

K_OTHER, K_NUM, K_STR, K_BOOL = 0, 1, 2, 3
K_DT, K_DTZ, K_DATE, K_TIME, K_TIMETZ, K_DUR = 4, 5, 6, 7, 8, 9
TEMPORAL = frozenset({K_DT, K_DTZ, K_DATE, K_TIME, K_TIMETZ, K_DUR})

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
    """3-valued comparison of two normalized values, as a code."""
    if a is None or b is None:
        return UNKNOWN
    ka = kind(a)
    if ka != kind(b) or ka == K_OTHER:
        return UNKNOWN
    if ka in TEMPORAL:
        try:
            r = PY_CMP[op](a, b)
        except TypeError:
            return UNKNOWN
    else:
        r = PY_CMP[op](a, b)
    return TRUE if r else FALSE


def arith(op: str, a: Any, b: Any) -> Any:
    """``a op b`` on normalized values; NULL unless both are numbers and the result is one."""
    if not (is_num(a) and is_num(b)):
        return None
    try:
        r = PY_ARITH[op](a, b)
    except (ZeroDivisionError, OverflowError):
        return None
    if type(r) is float and r != r:
        return None
    return r


def neg(a: Any) -> Any:
    """``-a`` on a normalized value (NULL unless a number)."""
    return -a if is_num(a) else None


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
        s = self.nums if k == K_NUM else self.strs if k == K_STR else (
            self.bools if k == K_BOOL else None)
        if s and x in s:
            return TRUE
        return FALSE if self.only == k else UNKNOWN
