"""The row filter MATCH_CEQL pushes below its shuffle: relevance (ceql.analysis) as Spark SQL.

The engine says which events can move a run (:func:`ceql.analysis.relevance`); this module
writes that condition as a Spark SQL boolean expression over the input columns, so that Spark
drops the other rows while scanning, before they are shuffled, sorted and sent to Python.

The expression only ever keeps *more* rows than the engine would use: an atom is written out
only where Spark's three-valued result is exactly the engine's (column and literal of the same
kind, NaN read as NULL, binary string order); any other atom — LIKE, arithmetic, two
attributes, mixed kinds — counts as TRUE wherever the formula needs it TRUE (and FALSE where it
stands under NOT, through De Morgan). Filtering is therefore safe however much is written out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from datetime import timedelta

from pyspark.sql.types import (
    ByteType,
    CharType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NullType,
    ShortType,
    StringType,
    StructType,
)

import ceql
from ceql.analysis import relevance
from ceql.constants import INTERNAL_STREAM_COLUMN
from ceql.ir import Attr, Compare, Expr, InRange, InSet, Literal, Neg
from ceql.predicates import (
    FLIP,
    Atom,
    GAnd,
    GAtom,
    GNot,
    GOr,
    GTrue,
    GuardTree,
    GUnless,
    StreamIs,
    TypeIs,
)
from ceql.spark.udtf.call import quote_identifier, sql_string
from ceql.spark.udtf.ceql_plan import MatchSpec

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "prefilter"]

#: Deeper guards or longer expressions are not pushed down (Spark's parser recurses too).
MAX_DEPTH = 200
MAX_LENGTH = 100_000

_TRUE, _FALSE = "TRUE", "FALSE"
_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_FLOATING = (FloatType, DoubleType)
_EXACT_DOUBLE = 2 ** 53
_LONG = 2 ** 63
#: Where Spark notes, in a column's metadata, the CHAR/VARCHAR type it reads as STRING.
_CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"


class _TooDeep(Exception):
    pass


def prefilter(query: ceql.Query, schema: StructType, spec: MatchSpec) -> str | None:
    """A Spark SQL condition keeping every row the query can use, or ``None`` to keep all.

    Rows with a NULL (or NaN) time, or a time the option ``time_format`` cannot read, are
    kept as well, so that the task still reports them.
    """
    rel = relevance(query, type_key=spec.type_key, stream_key=spec.stream_key)
    if rel is None:
        return None
    types = _column_types(schema)
    writer = _Writer(rel.atoms, types, spec)
    try:
        cond = writer.write(rel.guard, True, 0)
    except _TooDeep:
        return None
    if cond == _TRUE or len(cond) > MAX_LENGTH:
        return None
    time = quote_identifier(spec.time)
    if spec.time_pattern is not None:
        unread = f"try_to_timestamp({time}, {sql_string(spec.time_pattern)}) IS NULL"
        return f"({cond}) OR {unread}"
    if isinstance(types.get(spec.time), _FLOATING):
        return f"({cond}) OR {time} IS NULL OR isnan({time})"
    return f"({cond}) OR {time} IS NULL"


def _column_types(schema: StructType) -> dict[str, DataType]:
    """Each column's type as the condition may compare it.

    A CHAR(n) column arrives as a string, but Spark pads the shorter side of its comparisons
    (``'ab ' = 'ab'``) where the engine does not: it becomes a ``CharType``, for which no atom
    is written. So do names that differ only in case (``NullType``): Spark may call them
    ambiguous.
    """
    folded = Counter(f.name.lower() for f in schema.fields)
    out: dict[str, DataType] = {}
    for f in schema.fields:
        char = re.fullmatch(r"\s*char\s*\(\s*(\d+)\s*\)\s*",
                            str(f.metadata.get(_CHAR_VARCHAR_KEY, "")), re.IGNORECASE)
        if folded[f.name.lower()] > 1:
            out[f.name] = NullType()
        elif char is not None:
            out[f.name] = CharType(int(char.group(1)))
        else:
            out[f.name] = f.dataType
    return out


class _Writer:
    def __init__(self, atoms: tuple[Atom, ...], types: Mapping[str, DataType],
                 spec: MatchSpec) -> None:
        self.atoms, self.types, self.spec = atoms, types, spec

    def write(self, g: GuardTree, positive: bool, depth: int) -> str:
        """SQL that is TRUE wherever ``g`` is TRUE (``positive``) or FALSE (not ``positive``)."""
        if depth > MAX_DEPTH:
            raise _TooDeep
        if isinstance(g, GTrue):
            return _TRUE if positive else _FALSE
        if isinstance(g, GNot):
            return self.write(g.item, not positive, depth + 1)
        if isinstance(g, GUnless):  # TRUE where the item is not TRUE: wider, never narrower
            return _TRUE if positive else self.write(g.item, True, depth + 1)
        if isinstance(g, (GAnd, GOr)):
            parts = [self.write(x, positive, depth + 1) for x in g.items]
            conj = isinstance(g, GAnd) == positive
            return _join(parts, "AND" if conj else "OR")
        assert isinstance(g, GAtom)
        exact = self.atom(self.atoms[g.k])
        if exact is None:
            return _TRUE
        return exact if positive else f"NOT {exact}"

    # -- atoms: an exact three-valued SQL form, or None -------------------------------------
    def atom(self, a: Atom) -> str | None:
        if isinstance(a, TypeIs):
            return self.type_is(a.name)
        if isinstance(a, StreamIs):
            col = self.spec.stream_key
            if col not in self.types:
                return _TRUE
            if not _binary_string(self.types[col]):
                return None
            c = quote_identifier(col)
            return f"({c} IS NULL OR {c} = {_string(a.name)})"
        if isinstance(a, Compare):
            return self.compare(a.op, a.left, a.right)
        if isinstance(a, InRange):
            lo, hi = self.compare(">=", a.expr, a.lo), self.compare("<=", a.expr, a.hi)
            return None if lo is None or hi is None else f"({lo} AND {hi})"
        if isinstance(a, InSet):
            return self.in_set(a)
        return None  # LIKE: Spark's regular expressions are not RE2

    def type_is(self, name: str) -> str | None:
        spec = self.spec
        if spec.type_fill == "table":
            return _TRUE if spec.table_name == name else _FALSE
        if not _binary_string(self.types.get(spec.type_key, StringType())):
            return None
        col = quote_identifier(spec.type_key)
        if spec.type_fill == "stream":
            col = f"coalesce({col}, {quote_identifier(INTERNAL_STREAM_COLUMN)})"
        return f"coalesce({col} = {_string(name)}, FALSE)"

    def compare(self, op: str, left: Expr, right: Expr) -> str | None:
        if isinstance(left, Attr) and _literal(right) is not None:
            return self.column_vs(left.name, op, _literal(right))
        if isinstance(right, Attr) and _literal(left) is not None:
            return self.column_vs(right.name, FLIP[op], _literal(left))
        return None

    def column_vs(self, name: str, op: str, v: int | float | str | bool | None) -> str | None:
        t = self.types.get(name)
        if t is None or v is None or isinstance(v, bool):
            return None
        c = quote_identifier(name)
        if isinstance(v, str):
            return f"{c} {op} {_string(v)}" if _binary_string(t) else None
        if isinstance(t, _INTEGRAL):
            k = _integral_bound(op, v)
            if k is None:
                return None
            op, bound = k
            return f"{c} {op} {bound}"
        if isinstance(t, _FLOATING):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, int) and abs(v) > _EXACT_DOUBLE:
                return None
            # the engine reads NaN as NULL; Spark orders NaN above every number
            return f"nanvl(CAST({c} AS DOUBLE), CAST(NULL AS DOUBLE)) {op} {_double(v)}"
        return None

    def in_set(self, a: InSet) -> str | None:
        if not isinstance(a.expr, Attr) or not a.values:
            return None
        t = self.types.get(a.expr.name)
        vals = [v.value for v in a.values if not isinstance(v.value, timedelta)]
        if len(vals) != len(a.values):
            return None
        c = quote_identifier(a.expr.name)
        if all(type(v) is str for v in vals) and t is not None and _binary_string(t):
            items = ", ".join(_string(str(v)) for v in vals)
        elif (all(type(v) is int for v in vals) and isinstance(t, _INTEGRAL)
              and all(-_LONG <= int(v) < _LONG for v in vals)):
            items = ", ".join(str(v) for v in vals)
        else:
            return None
        return f"{c} {'NOT IN' if a.negated else 'IN'} ({items})"


def _join(parts: list[str], op: str) -> str:
    absorbing, neutral = (_FALSE, _TRUE) if op == "AND" else (_TRUE, _FALSE)
    if absorbing in parts:
        return absorbing
    kept = list(dict.fromkeys(p for p in parts if p != neutral))
    if not kept:
        return neutral
    return kept[0] if len(kept) == 1 else "(" + f" {op} ".join(kept) + ")"


def _literal(e: Expr) -> int | float | str | bool | None:
    if isinstance(e, Literal):
        return None if isinstance(e.value, timedelta) else e.value  # an INTERVAL: not pushed
    if isinstance(e, Neg) and isinstance(e.operand, Literal):
        v = e.operand.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    return None


def _integral_bound(op: str, v: int | float) -> tuple[str, int] | None:
    """``col op v`` for an integer column, as ``col op' k`` with an integer ``k`` in range."""
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        if not v.is_integer():
            if op in ("=", "!="):
                return None
            # no integer lies between floor(v) and v: c < v <=> c <= floor(v), and so on
            op, v = {"<": ("<=", math.floor(v)), "<=": ("<=", math.floor(v)),
                     ">": (">=", math.ceil(v)), ">=": (">=", math.ceil(v))}[op]
    k = int(v)
    return (op, k) if -_LONG <= k < _LONG else None


def _binary_string(t: DataType) -> bool:
    return isinstance(t, StringType) and getattr(t, "collation", "UTF8_BINARY") == "UTF8_BINARY"


def _string(s: str) -> str:
    """A Spark SQL string literal for ``s``, the same under ``escapedStringLiterals``.

    A quote or a backslash needs an escape, which that setting reads differently: such a
    string is written as the cast of its UTF-8 bytes.
    """
    if "'" in s or "\\" in s:
        return f"CAST(X'{s.encode('utf-8', 'surrogatepass').hex().upper()}' AS STRING)"
    return f"'{s}'"


def _double(v: int | float) -> str:
    return f"CAST({int(v)} AS DOUBLE)" if isinstance(v, int) else f"CAST('{float(v)!r}' AS DOUBLE)"
