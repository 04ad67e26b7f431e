"""DEFINE and MEASURES of a pattern of one labelling as Arrow compute over whole columns (the
columnar engine's expressions, :mod:`ceql.mr.columnar`; docs/match_recognize.md, "Engines").

With one labelling every row an expression reads is a fixed offset from the match's first
row: ``B.price`` in the DEFINE of ``B`` in ``A B`` is offset 1, ``A.price`` offset 0,
``PREV(price)`` offset 0, ``FIRST(B.x)`` in MEASURES offset 1. So an expression is evaluated
for every candidate start at once: each column read is the column shifted by its offset (NULL
where the row is outside the partition), and the operators are Arrow's. The subset lowered
here is the one whose Arrow meaning is exactly the Python engine's (:mod:`ceql.mr.values`):
comparisons of numbers, of text, of booleans and of times of one kind, three-valued AND, OR
and NOT, IS [NOT] NULL, BETWEEN, IN, arithmetic of doubles, navigation, CLASSIFIER(). Anything
else — integer arithmetic (Python's integers do not overflow), functions, CASE, casts,
aggregates, MATCH_NUMBER() in DEFINE, comparisons of kinds that never compare (the Python
engine raises on the row) — is :class:`NotColumnar`, and the query runs on the row engines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..frontends.mr import ast as A
from .expressions import var_of

__all__ = ["Frame", "NotColumnar", "Vec", "kind_of", "lower"]

#: comparison operators and Arrow's function for each
_COMPARE = {"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal",
            ">": "greater", ">=": "greater_equal"}
_ARITH = {"+": "add", "-": "subtract", "*": "multiply"}

#: what an expression evaluates to: a column of values, or one value for every row
Value = Any


class NotColumnar(Exception):
    """An expression (or query) outside the columnar subset: a row engine runs it."""


class Frame:
    """Columns of a table whose rows are grouped by partition, read at offsets from base rows:
    ``base[i]`` is the i-th start's row, ``lo[i]``/``hi[i]`` its partition's first row and the
    row after its last."""

    def __init__(self, columns: Mapping[str, pa.Array], base: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray) -> None:
        self.columns = columns
        self.base = base
        self.lo = lo
        self.hi = hi
        self.size = len(base)
        self._cache: dict[tuple[str, int], pa.Array] = {}

    def at(self, column: str, offset: int) -> pa.Array:
        """Column ``column`` at ``offset`` rows from each base row (NULL outside the
        partition)."""
        key = (column, offset)
        got = self._cache.get(key)
        if got is None:
            idx = self.base + offset
            valid = (idx >= self.lo) & (idx < self.hi)
            if valid.all():
                indices = pa.array(idx)
            else:
                indices = pa.array(np.where(valid, idx, 0), mask=~valid)
            got = self._cache[key] = self.columns[column].take(indices)
        return got


@dataclass(frozen=True)
class Vec:
    """A lowered expression: its kind (``int``, ``float``, ``str``, ``bool``, ``ts``,
    ``null``), its Arrow type when it is a time, and how to evaluate it over a frame."""

    kind: str
    run: Callable[[Frame], Value]
    type: pa.DataType | None = None
    literal: bool = False


def kind_of(t: pa.DataType) -> str:
    """The kind of Arrow type ``t`` (:class:`NotColumnar` for a type outside the subset)."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_timestamp(t) and t.unit != "ns":
        return "ts"
    if pa.types.is_null(t):
        return "null"
    raise NotColumnar(f"a column of type {t}")


def _literal(value: object) -> Vec:
    if value is None:
        return Vec("null", lambda f: pa.scalar(None, pa.bool_()), literal=True)
    if isinstance(value, bool):
        s: pa.Scalar = pa.scalar(value)
        return Vec("bool", lambda f: s, literal=True)
    if isinstance(value, int):
        if not -(2 ** 63) <= value < 2 ** 63:
            raise NotColumnar("an integer beyond 64 bits")
        s = pa.scalar(value, pa.int64())
        return Vec("int", lambda f: s, literal=True)
    if isinstance(value, float):
        s = pa.scalar(value, pa.float64())
        return Vec("float", lambda f: s, literal=True)
    if isinstance(value, Decimal):
        if value == value.to_integral_value():
            return _literal(int(value))
        # compared with a double only (float(Decimal) is the Python engine's promotion)
        s = pa.scalar(float(value), pa.float64())
        return Vec("decimal", lambda f: s, literal=True)
    if isinstance(value, str):
        s = pa.scalar(value, pa.string())
        return Vec("str", lambda f: s, literal=True)
    raise NotColumnar(f"a literal {value!r}")


def _as_float(v: Vec) -> Callable[[Frame], Value]:
    run = v.run
    if v.kind == "float" or v.kind == "decimal":
        return run
    # float(int) as Python rounds it (a safe cast would refuse integers past 2**53)
    return lambda f: pc.cast(run(f), pa.float64(), safe=False)


def _compare(op: str, a: Vec, b: Vec) -> Vec:
    name = _COMPARE[op]
    if a.kind == "null" or b.kind == "null":
        return _literal(None)
    nums = {"int", "float", "decimal"}
    if a.kind in nums and b.kind in nums:
        if "decimal" in (a.kind, b.kind) and "float" not in (a.kind, b.kind):
            raise NotColumnar("a decimal compared with an integer or a decimal")
        if a.kind == "int" and b.kind == "int":
            left, right = a.run, b.run
        else:
            left, right = _as_float(a), _as_float(b)
    elif a.kind == b.kind and a.kind in ("str", "bool"):
        left, right = a.run, b.run
    elif a.kind == b.kind == "ts" and not a.literal and not b.literal:
        assert a.type is not None and b.type is not None
        if (a.type.tz is None) != (b.type.tz is None):
            raise NotColumnar("a zoned time compared with a time without zone")
        left = a.run
        if a.type != b.type:
            target, run_b = a.type, b.run
            right = lambda f: pc.cast(run_b(f), target)  # noqa: E731
        else:
            right = b.run
    else:
        raise NotColumnar(f"{a.kind} compared with {b.kind}")
    fn = getattr(pc, name)
    return Vec("bool", lambda f: fn(left(f), right(f)))


def _logical(op: str, a: Vec, b: Vec) -> Vec:
    for v in (a, b):
        if v.kind not in ("bool", "null"):
            raise NotColumnar(f"{op} of a {v.kind}")
    fn = pc.and_kleene if op == "AND" else pc.or_kleene
    left, right = a.run, b.run
    return Vec("bool", lambda f: fn(_bool(left(f)), _bool(right(f))))


def _bool(v: Value) -> Value:
    return v if v.type == pa.bool_() else v.cast(pa.bool_())


class _Lowering:
    """Lowers expressions for one place of the labelling: ``labels`` the match's labels so far,
    ``cur`` the current row's position, ``own`` the DEFINE's variable (None: MEASURES)."""

    def __init__(self, labels: Sequence[str], cur: int, own: str | None,
                 types: Mapping[str, pa.DataType], resolve: Callable[[str], str],
                 subsets: Mapping[str, tuple[str, ...]]) -> None:
        self.labels = tuple(labels)
        self.cur = cur
        self.own = own
        self.types = types
        self.resolve = resolve
        self.subsets = subsets

    def _rows(self, var: str | None) -> list[int]:
        """The positions labelled ``var`` so far (every position for None)."""
        members = None if var is None else set(self.subsets.get(var, (var,)))
        return [j for j, v in enumerate(self.labels[:self.cur + 1])
                if members is None or v in members]

    def _base(self, var: str | None) -> int | None:
        if var is None:
            return self.cur
        rows = self._rows(var)
        return rows[-1] if rows else None

    def _read(self, name: str, offset: int | None) -> Vec:
        column = self.resolve(name)
        t = self.types.get(column)
        if t is None:
            raise NotColumnar(f"column {column} is not in the input")
        kind = kind_of(t)
        if offset is None:
            return Vec(kind, lambda f: pa.nulls(f.size, t), t)
        return Vec(kind, lambda f: f.at(column, offset), t)

    def _row_of(self, nav: A.Navigation) -> int | None:
        if nav.semantics == "FINAL" and self.own is not None:
            raise NotColumnar("FINAL in DEFINE")
        rows = self._rows(var_of(nav.arg))
        k = nav.offset
        if k >= len(rows):
            return None
        return rows[k] if nav.kind == "FIRST" else rows[-1 - k]

    def lower(self, e: A.Expr, at: int | None = None, inside: bool = False) -> Vec:
        """``e`` lowered; ``inside``: the argument of navigation, reading row ``at``."""
        if isinstance(e, A.Literal):
            return _literal(e.value)
        if isinstance(e, A.Column):
            return self._read(e.name, at if inside else self._base(e.var))
        if isinstance(e, A.Classifier):
            if e.semantics == "FINAL" and self.own is not None:
                raise NotColumnar("FINAL in DEFINE")
            if inside:
                row = at
            else:
                row = self._base(e.var)
            label = (self.labels[row] if row is not None and 0 <= row <= self.cur
                     else None)
            return Vec("str", lambda f: pa.scalar(label, pa.string()), literal=True)
        if isinstance(e, A.Navigation):
            return self._navigation(e, at, inside)
        if isinstance(e, A.Binary):
            if e.op in ("AND", "OR"):
                return _logical(e.op, self.lower(e.left, at, inside),
                                self.lower(e.right, at, inside))
            if e.op in _COMPARE:
                return _compare(e.op, self.lower(e.left, at, inside),
                                self.lower(e.right, at, inside))
            if e.op in _ARITH:
                return self._arith(e.op, self.lower(e.left, at, inside),
                                   self.lower(e.right, at, inside))
            raise NotColumnar(f"operator {e.op}")
        if isinstance(e, A.Not):
            v = self.lower(e.operand, at, inside)
            if v.kind not in ("bool", "null"):
                raise NotColumnar("NOT of a non-condition")
            run = v.run
            return Vec("bool", lambda f: pc.invert(_bool(run(f))))
        if isinstance(e, A.IsNull):
            v = self.lower(e.operand, at, inside)
            run = v.run
            fn = pc.is_valid if e.negated else pc.is_null
            return Vec("bool", lambda f: fn(run(f)))
        if isinstance(e, A.Negate):
            v = self.lower(e.operand, at, inside)
            if v.kind not in ("float", "null"):
                raise NotColumnar(f"minus of a {v.kind}")
            run = v.run
            return Vec(v.kind, lambda f: pc.negate(run(f)))
        if isinstance(e, A.Between):
            x = self.lower(e.operand, at, inside)
            both = _logical("AND", _compare(">=", x, self.lower(e.low, at, inside)),
                            _compare("<=", x, self.lower(e.high, at, inside)))
            if not e.negated:
                return both
            run = both.run
            return Vec("bool", lambda f: pc.invert(run(f)))
        if isinstance(e, A.InList):
            x = self.lower(e.operand, at, inside)
            out = _literal(False)
            for item in e.items:
                out = _logical("OR", out, _compare("=", x, self.lower(item, at, inside)))
            if not e.negated:
                return out
            run = out.run
            return Vec("bool", lambda f: pc.invert(_bool(run(f))))
        raise NotColumnar(type(e).__name__)

    def _arith(self, op: str, a: Vec, b: Vec) -> Vec:
        if a.kind == "null" or b.kind == "null":
            return Vec("null", lambda f: pa.scalar(None, pa.float64()), literal=True)
        nums = {"int", "float", "decimal"}
        if a.kind not in nums or b.kind not in nums or "float" not in (a.kind, b.kind):
            raise NotColumnar(f"arithmetic of {a.kind} and {b.kind}")
        left, right = _as_float(a), _as_float(b)
        fn = getattr(pc, _ARITH[op])
        return Vec("float", lambda f: fn(left(f), right(f)))

    def _navigation(self, e: A.Navigation, at: int | None, inside: bool) -> Vec:
        if inside:
            raise NotColumnar("navigation inside navigation's argument")
        if e.kind in ("FIRST", "LAST"):
            return self.lower(e.arg, self._row_of(e), inside=True)
        if isinstance(e.arg, A.Navigation):
            if e.arg.kind not in ("FIRST", "LAST"):
                raise NotColumnar("PREV/NEXT of PREV/NEXT")
            base = self._row_of(e.arg)
            arg = e.arg.arg
        else:
            base = self._base(var_of(e.arg))
            arg = e.arg
        if any(isinstance(n, A.Classifier) for n in A.walk(arg)):
            raise NotColumnar("CLASSIFIER() read by PREV/NEXT")
        step = -e.offset if e.kind == "PREV" else e.offset
        return self.lower(arg, None if base is None else base + step, inside=True)


def lower(e: A.Expr, labels: Sequence[str], cur: int, own: str | None,
          types: Mapping[str, pa.DataType], resolve: Callable[[str], str],
          subsets: Mapping[str, tuple[str, ...]]) -> Vec:
    """Expression ``e`` of a match labelled ``labels`` read at position ``cur`` (a DEFINE
    of ``own``, or MEASURES with ``own`` None and ``cur`` the last position), over columns of
    Arrow ``types``; :class:`NotColumnar` when it is outside the subset."""
    return _Lowering(labels, cur, own, types, resolve, subsets).lower(e)

