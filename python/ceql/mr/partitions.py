"""PARTITION BY and ORDER BY as docs/match_recognize.md says: partitions in the order of their
first row (NULL one group, NaN equal to NaN, numbers equal across kinds), each sorted stably by
its keys (NULLs first when ascending, last when descending, unless said)."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

from ..frontends.mr import ast as A
from .values import comparator, compare

__all__ = ["order_check", "out_of_order", "partition", "partition_key", "sort"]

Row = Mapping[str, object]


def _group_key(v: object) -> object:
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float, Decimal)):
        if isinstance(v, float) and math.isnan(v):
            return ("nan",)
        return ("num", v)  # 1, 1.0 and Decimal(1) are one group (they hash alike)
    return (type(v), v)


def partition_key(values: Sequence[object]) -> tuple[object, ...]:
    """The key of the partition whose PARTITION BY values are ``values`` (equal for values
    PARTITION BY puts together: NULLs, NaNs, 1 and 1.0)."""
    return tuple(_group_key(v) for v in values)


def partition(rows: Sequence[Row], keys: Sequence[str]
              ) -> list[tuple[tuple[object, ...], list[Row]]]:
    """The partitions of ``rows`` by the columns ``keys`` (the input's spelling): the first
    row's values of each key, and its rows in input order."""
    if not keys:
        return [((), list(rows))] if rows else []
    groups: dict[tuple[object, ...], tuple[tuple[object, ...], list[Row]]] = {}
    for row in rows:
        values = tuple(row.get(k) for k in keys)
        key = partition_key(values)
        got = groups.get(key)
        if got is None:
            groups[key] = (values, [row])
        else:
            got[1].append(row)
    return list(groups.values())


class _Less:
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __lt__(self, other: _Less) -> bool:
        return compare("<", self.value, other.value) is True


def sort(rows: list[Row], keys: Sequence[tuple[str, A.SortKey]]) -> list[Row]:
    """``rows`` sorted by ``keys`` ((input column, key) pairs), equal rows in input order."""
    out = rows
    for column, key in reversed(keys):  # stable sorts, the last key first
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        present = [r for r in out if r.get(column) is not None]
        absent = [r for r in out if r.get(column) is None]
        present.sort(key=lambda r: _Less(r.get(column)), reverse=key.descending)
        out = absent + present if nulls_first else present + absent
    return out


_less = comparator("<")  # compare's answer, quicker for two values of one kind


def out_of_order(before: Sequence[object], after: Sequence[object],
                 keys: Sequence[A.SortKey]) -> bool:
    """Whether a row whose ORDER BY values are ``after`` sorts strictly before one whose
    values are ``before`` (so cannot follow it), by :func:`sort`'s order."""
    for a, b, key in zip(before, after, keys, strict=True):
        if a is None and b is None:
            continue
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        if a is None or b is None:
            return (b is None) == nulls_first
        if _less(b, a) is True:
            return not key.descending
        if _less(a, b) is True:
            return key.descending
    return False


#: kinds whose Python order is :func:`compare`'s between two values of the kind
_ORDERED = frozenset({int, float, Decimal, str, bool, _dt.datetime, _dt.timedelta})


def order_check(keys: Sequence[A.SortKey]) -> Callable[[Sequence[object], Sequence[object]],
                                                          bool]:
    """:func:`out_of_order` for ``keys``: quicker when every key ascends and each pair of
    values is of one of the kinds Python orders as :func:`compare` does (no NULL)."""
    keys = tuple(keys)
    ordered = _ORDERED
    if any(k.descending for k in keys):
        return lambda before, after: out_of_order(before, after, keys)

    def check(before: Sequence[object], after: Sequence[object]) -> bool:
        for a, b in zip(before, after, strict=True):
            kind = type(a)
            if kind is not type(b) or kind not in ordered:
                return out_of_order(before, after, keys)
            try:
                if b < a:  # type: ignore[operator]
                    return True
                if a < b:  # type: ignore[operator]
                    return False
            except TypeError:  # two times, one with a zone: compare's error says so
                return out_of_order(before, after, keys)
        return False
    return check
