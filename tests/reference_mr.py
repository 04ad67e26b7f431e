"""A brute-force evaluator of MATCH_RECOGNIZE, written from docs/match_recognize.md alone.

It shares nothing with ceql's engine but the syntax tree (``ceql.frontends.mr.ast``): the
pattern's matches from a start row are enumerated *in preferment order* by a backtracking
generator (alternatives left to right, greedy quantifiers trying one more iteration first,
reluctant ones one fewer, PERMUTE's orders lexicographically), DEFINE is evaluated on the
match so far (running semantics), the first match in that order that satisfies WITHIN is the
match, and AFTER MATCH SKIP says where to look next. Exponential in the worst case, which is
fine for the few rows tests give it.
"""

from __future__ import annotations

import datetime
import itertools
import math
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from ceql.errors import CeqlInputError
from ceql.frontends.mr import ast as A
from ceql.frontends.mr.errors import ClauseError, MatchSkipError, UnsupportedFunctionError

__all__ = ["MrEvalError", "evaluate"]

Row = Mapping[str, object]
Labels = tuple[tuple[str, bool], ...]  # per row of the match: (variable, excluded)


class MrEvalError(CeqlInputError):
    """Values the reference cannot combine (a string compared with a number, …)."""


# ---------------------------------------------------------------- values
# Written from "Values, NULL and time" of docs/match_recognize.md, as kinds and tables: every
# value has one kind, and what an operator does is looked up by the kinds of its operands.

_NULL, _BOOL, _INT, _DEC, _DBL, _STR, _TS, _IV = "null bool int dec dbl str ts iv".split()
_NUMERIC_RANK = {_INT: 0, _DEC: 1, _DBL: 2}  # a double wins over a decimal over an integer


def _kind(v: object) -> str:
    if v is None:
        return _NULL
    for cls, k in ((bool, _BOOL), (int, _INT), (Decimal, _DEC), (float, _DBL), (str, _STR),
                   (datetime.datetime, _TS), (datetime.timedelta, _IV)):
        if isinstance(v, cls):
            return k
    raise MrEvalError(f"the reference has no kind for {v!r}")


def _is_num(v: object) -> bool:
    return _kind(v) in _NUMERIC_RANK


def _widen(a: Any, b: Any) -> tuple[str, Any, Any]:
    """Two numbers as the kind of the wider one."""
    k = max(_kind(a), _kind(b), key=_NUMERIC_RANK.__getitem__)
    converters: dict[str, Callable[[Any], Any]] = {_INT: int, _DEC: _to_decimal, _DBL: float}
    to = converters[k]
    return k, to(a), to(b)


def _to_decimal(v: Any) -> Decimal:
    return v if isinstance(v, Decimal) else Decimal(v)


def _remainder(x: Any, y: Any) -> Any:
    """``x % y`` with the sign of the dividend, computed exactly (floats: C's fmod)."""
    if isinstance(x, float):
        return math.fmod(x, y)
    q = Fraction(x) / Fraction(y)
    whole = math.trunc(q)  # toward zero
    return x - y * whole


def _quotient(kind: str, x: Any, y: Any) -> Any:
    if kind == _INT:  # integers divide exactly, into a double
        return float(Fraction(x, y))
    return x / y


_NUMBER_OPS: dict[str, Callable[[str, Any, Any], Any]] = {
    "+": lambda k, x, y: x + y,
    "-": lambda k, x, y: x - y,
    "*": lambda k, x, y: x * y,
    "/": _quotient,
    "%": lambda k, x, y: _remainder(x, y),
}
# time arithmetic, by (operator, kind of left, kind of right)
_TIME_OPS: dict[tuple[str, str, str], Callable[[Any, Any], Any]] = {
    ("+", _TS, _IV): lambda a, b: a + b,
    ("+", _IV, _TS): lambda a, b: b + a,
    ("-", _TS, _IV): lambda a, b: a - b,
    ("-", _TS, _TS): lambda a, b: a - b,
    ("+", _IV, _IV): lambda a, b: a + b,
    ("-", _IV, _IV): lambda a, b: a - b,
}


def _arith(op: str, a: Any, b: Any) -> Any:
    ka, kb = _kind(a), _kind(b)
    if _NULL in (ka, kb):
        return None
    if ka in _NUMERIC_RANK and kb in _NUMERIC_RANK:
        k, x, y = _widen(a, b)
        if op in "/%" and y == 0:
            return None  # a division by zero is NULL
        return _NUMBER_OPS[op](k, x, y)
    fn = _TIME_OPS.get((op, ka, kb))
    if fn is None:
        raise MrEvalError(f"cannot compute {a!r} {op} {b!r}")
    return fn(a, b)


def _text(v: object) -> str:
    """As ``||`` writes a value: booleans in lower case, times as ``str`` writes them."""
    return str(v).lower() if _kind(v) == _BOOL else str(v)


_ORDER = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
          ">": operator.gt, ">=": operator.ge}


def _compare(op: str, a: Any, b: Any) -> bool | None:
    ka, kb = _kind(a), _kind(b)
    if _NULL in (ka, kb):
        return None
    if ka in _NUMERIC_RANK and kb in _NUMERIC_RANK:
        _, a, b = _widen(a, b)
    elif ka != kb:  # a kind compares with its own kind only (numbers among numbers)
        raise MrEvalError(f"cannot compare {a!r} with {b!r}")
    return bool(_ORDER[op](a, b))


def _truth(v: object) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    raise MrEvalError(f"a condition gave {v!r}, not TRUE, FALSE or NULL")


# three-valued logic as truth tables over (False, None, True)
_AND = {(x, y): (False if False in (x, y) else None if None in (x, y) else True)
        for x in (False, None, True) for y in (False, None, True)}
_OR = {(x, y): (True if True in (x, y) else None if None in (x, y) else False)
       for x in (False, None, True) for y in (False, None, True)}


def _and(a: bool | None, b: bool | None) -> bool | None:
    return _AND[a, b]


def _or(a: bool | None, b: bool | None) -> bool | None:
    return _OR[a, b]


def _not(a: bool | None) -> bool | None:
    return {False: True, None: None, True: False}[a]


def _like(value: str, pattern: str, i: int = 0, j: int = 0) -> bool:
    """Whether ``value[i:]`` matches ``pattern[j:]`` (recursive, no regular expressions)."""
    while j < len(pattern):
        c = pattern[j]
        if c == "%":
            return any(_like(value, pattern, k, j + 1) for k in range(i, len(value) + 1))
        if c == "\\" and j + 1 < len(pattern):
            j += 1
            c = pattern[j]
        elif c == "_":
            if i == len(value):
                return False
            i, j = i + 1, j + 1
            continue
        if i == len(value) or value[i] != c:
            return False
        i, j = i + 1, j + 1
    return i == len(value)


def _half_away(q: Fraction, digits: int) -> Fraction:
    """``q`` rounded to ``digits`` decimal places, halves away from zero."""
    scale = Fraction(10) ** digits
    whole = math.floor(abs(q) * scale + Fraction(1, 2))
    return (whole if q >= 0 else -whole) / scale


def _decimal(q: Fraction, digits: int) -> Decimal:
    """A fraction with a power-of-ten denominator as a decimal of ``digits`` places."""
    return (Decimal(q.numerator) / Decimal(q.denominator)).quantize(
        Decimal(1).scaleb(-max(digits, 0)))


def _round(v: Any, digits: int) -> Any:
    """Halves away from zero, in the kind of ``v``."""
    if v is None:
        return None
    k = _kind(v)
    if k == _INT and digits >= 0:
        return v
    r = _half_away(Fraction(str(v)) if k == _DBL else Fraction(v), digits)
    return float(r) if k == _DBL else int(r) if k == _INT else _decimal(r, digits)


_CAST_TARGETS = {
    **dict.fromkeys(("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "LONG"), _INT),
    **dict.fromkeys(("DOUBLE", "FLOAT", "REAL"), _DBL),
    **dict.fromkeys(("DECIMAL", "NUMERIC", "DEC"), _DEC),
    **dict.fromkeys(("STRING", "VARCHAR", "CHAR", "TEXT"), _STR),
    "BOOLEAN": _BOOL,
    "TIMESTAMP": _TS,
}


def _cast(v: Any, type_name: str) -> Any:
    if v is None:
        return None
    target = _CAST_TARGETS.get(type_name.split("(")[0])
    k = _kind(v)
    try:
        if target == _STR:
            return _text(v)
        if target == _INT and k in (_STR, _BOOL, _INT, _DEC, _DBL):
            return int(v.strip()) if k == _STR else int(v)
        if target == _DBL and k in (_STR, _INT, _DEC, _DBL):
            return float(v)
        if target == _DEC and k in (_STR, _INT, _DEC, _DBL):
            inner = type_name[type_name.find("(") + 1:-1] if "(" in type_name else ""
            scale = int(inner.split(",")[1]) if "," in inner else 0
            text = v.strip() if k == _STR else str(v)
            return _decimal(_half_away(Fraction(text), scale), scale)
        if target == _BOOL and k in (_STR, _BOOL, _INT, _DEC, _DBL):
            if k == _STR:
                return {"true": True, "false": False}.get(v.strip().lower())
            return v if k == _BOOL else v != 0
        if target == _TS and k in (_STR, _TS):
            return v if k == _TS else datetime.datetime.fromisoformat(v.strip())
    except (ValueError, InvalidOperation, ZeroDivisionError):
        return None  # text that writes no such value: NULL (Spark without ANSI mode)
    raise UnsupportedFunctionError(f"CAST of {v!r} to {type_name} is not in the Python subset")


# ---------------------------------------------------------------- one match being evaluated

@dataclass
class _Frame:
    """What an expression sees: the partition's rows, the match's start and labels (so far),
    the current row (None: an empty match), the match number."""

    rows: Sequence[Row]
    start: int
    labels: Labels      # the whole match (FINAL) — or as far as it is known (DEFINE)
    current: int | None
    subsets: Mapping[str, tuple[str, ...]]
    number: int | None

    def value(self, r: int, name: str) -> object:
        row = self.rows[r]
        if name in row:
            return row[name]
        low = name.lower()
        for k, v in row.items():
            if k.lower() == low:
                return v
        raise MrEvalError(f"no column {name!r} in the input (columns: {', '.join(row)})")

    def mapped(self, var: str | None, final: bool) -> list[int]:
        """Rows of the match mapped to ``var`` (None: every row), up to the current one unless
        ``final``."""
        end = len(self.labels) if final or self.current is None else (
            self.current - self.start + 1)
        members = None if var is None else self.subsets.get(var, (var,))
        return [self.start + i for i, (v, _) in enumerate(self.labels[:end])
                if members is None or v in members]

    def label(self, r: int) -> str | None:
        """Row ``r``'s variable: NULL outside the match, and in DEFINE past the current row
        (not labelled yet); MEASURES see the whole match."""
        i = r - self.start
        return self.labels[i][0] if 0 <= i < len(self.labels) else None


def _var_of(expr: A.Expr) -> str | None:
    """The row pattern variable an argument of navigation or aggregation reads (None: the
    universal one)."""
    for node in A.walk(expr):
        if isinstance(node, (A.Column, A.Classifier)):
            return node.var
    return None


def _logical_row(nav: A.Navigation, f: _Frame) -> int | None:
    rows = f.mapped(_var_of(nav.arg), nav.semantics == "FINAL")
    if nav.offset >= len(rows):
        return None
    return rows[nav.offset] if nav.kind == "FIRST" else rows[-1 - nav.offset]


def _ev(e: A.Expr, f: _Frame, at: int | None = None) -> object:
    """``e``'s value; ``at``: the row navigation chose (None: resolve columns by variable)."""
    if isinstance(e, A.Literal):
        return e.value
    if isinstance(e, A.Column):
        if at is not None:
            return f.value(at, e.name)
        if e.var is None:
            return None if f.current is None else f.value(f.current, e.name)
        rows = f.mapped(e.var, False)
        return f.value(rows[-1], e.name) if rows else None
    if isinstance(e, A.Classifier):
        if at is not None:
            return f.label(at)
        final = e.semantics == "FINAL"
        if e.var is None:
            if f.current is None:
                return None
            if final:
                return f.labels[-1][0] if f.labels else None
            return f.label(f.current)
        rows = f.mapped(e.var, final)
        return f.label(rows[-1]) if rows else None
    if isinstance(e, A.MatchNumber):
        return f.number
    if isinstance(e, A.Navigation):
        if e.kind in ("FIRST", "LAST"):
            r = _logical_row(e, f)
            return None if r is None else _ev(e.arg, f, r)
        if isinstance(e.arg, A.Navigation):
            base = _logical_row(e.arg, f)
            inner = e.arg.arg
        else:
            var = _var_of(e.arg)
            inner = e.arg
            if var is None:
                base = f.current
            else:
                rows = f.mapped(var, False)
                base = rows[-1] if rows else None
        if base is None:
            return None
        target = base - e.offset if e.kind == "PREV" else base + e.offset
        if not 0 <= target < len(f.rows):
            return None
        return _ev(inner, f, target)
    if isinstance(e, A.Aggregate):
        final = e.semantics == "FINAL"
        if e.arg is None:
            return len(f.mapped(e.star_var, final))
        rows = f.mapped(_var_of(e.arg), final)
        values = [v for v in (_ev(e.arg, f, r) for r in rows) if v is not None]
        if e.distinct:
            values = list(dict.fromkeys(values))
        if e.name == "COUNT":
            return len(values)
        if not values:
            return None
        if e.name == "MIN":
            return min(values)  # type: ignore[type-var]
        if e.name == "MAX":
            return max(values)  # type: ignore[type-var]
        total: object = values[0]
        for v in values[1:]:
            total = _arith("+", total, v)
        if e.name == "SUM":
            return total
        if isinstance(total, int):
            return total / len(values)
        return _arith("/", total, len(values))
    if isinstance(e, A.Negate):
        v = _ev(e.operand, f, at)
        if v is None:
            return None
        if _is_num(v) or isinstance(v, datetime.timedelta):
            return -v  # type: ignore[operator]
        raise MrEvalError(f"cannot negate {v!r}")
    if isinstance(e, A.Binary):
        if e.op == "AND":
            return _and(_truth(_ev(e.left, f, at)), _truth(_ev(e.right, f, at)))
        if e.op == "OR":
            return _or(_truth(_ev(e.left, f, at)), _truth(_ev(e.right, f, at)))
        a, b = _ev(e.left, f, at), _ev(e.right, f, at)
        if e.op == "||":
            return None if a is None or b is None else _text(a) + _text(b)
        if e.op in ("+", "-", "*", "/", "%"):
            return _arith(e.op, a, b)
        return _compare(e.op, a, b)
    if isinstance(e, A.Not):
        return _not(_truth(_ev(e.operand, f, at)))
    if isinstance(e, A.IsNull):
        v = _ev(e.operand, f, at)
        return (v is not None) if e.negated else (v is None)
    if isinstance(e, A.Between):
        v = _ev(e.operand, f, at)
        out = _and(_compare(">=", v, _ev(e.low, f, at)), _compare("<=", v, _ev(e.high, f, at)))
        return _not(out) if e.negated else out
    if isinstance(e, A.InList):
        v = _ev(e.operand, f, at)
        result: bool | None = False
        for item in e.items:
            result = _or(result, _compare("=", v, _ev(item, f, at)))
        return _not(result) if e.negated else result
    if isinstance(e, A.Like):
        v, p = _ev(e.operand, f, at), _ev(e.pattern, f, at)
        if v is None or p is None:
            return None
        if not isinstance(v, str) or not isinstance(p, str):
            raise MrEvalError(f"LIKE needs strings, not {v!r} and {p!r}")
        return _like(v, p) != e.negated
    if isinstance(e, A.Case):
        if e.operand is None:
            for cond, value in e.whens:
                if _truth(_ev(cond, f, at)) is True:
                    return _ev(value, f, at)
        else:
            subject = _ev(e.operand, f, at)
            for cond, value in e.whens:
                if _compare("=", subject, _ev(cond, f, at)) is True:
                    return _ev(value, f, at)
        return None if e.default is None else _ev(e.default, f, at)
    if isinstance(e, A.Cast):
        return _cast(_ev(e.operand, f, at), e.type_name)
    assert isinstance(e, A.Call)
    args = [_ev(a, f, at) for a in e.args]
    if e.name == "COALESCE":
        return next((a for a in args if a is not None), None)
    if e.name == "ABS":
        return None if args[0] is None else abs(args[0])  # type: ignore[arg-type]
    if e.name == "ROUND":
        digits = args[1] if len(args) > 1 else 0
        return None if digits is None else _round(args[0], int(digits))  # type: ignore[call-overload]
    if e.name in ("UPPER", "LOWER"):
        v = args[0]
        if v is None:
            return None
        return _text(v).upper() if e.name == "UPPER" else _text(v).lower()
    raise UnsupportedFunctionError(f"{e.name} is not among the functions the Python "
                                   "evaluation has (ABS, ROUND, UPPER, LOWER, COALESCE)")


# ---------------------------------------------------------------- the matcher

class _Matcher:
    def __init__(self, mr: A.MatchRecognize, rows: Sequence[Row]) -> None:
        self.mr = mr
        self.rows = rows
        self.n = len(rows)
        self.subsets = {s.name: s.members for s in mr.subsets}
        self.conditions = {d.var: d.condition for d in mr.defines}
        self.start = 0

    def holds(self, var: str, r: int, labels: Labels) -> bool:
        cond = self.conditions.get(var)
        if cond is None:
            return True
        frame = _Frame(self.rows, self.start, labels, r, self.subsets, None)
        return _truth(_ev(cond, frame)) is True

    def gen(self, node: A.Pattern, pos: int, labels: Labels, excl: bool
            ) -> Iterator[tuple[int, Labels]]:
        if isinstance(node, A.PatternVar):
            if pos < self.n:
                new = (*labels, (node.name, excl))
                if self.holds(node.name, pos, new):
                    yield pos + 1, new
        elif isinstance(node, A.EmptyPattern):
            yield pos, labels
        elif isinstance(node, A.Anchor):
            if (node.kind == "^" and pos == 0) or (node.kind == "$" and pos == self.n):
                yield pos, labels
        elif isinstance(node, A.Concatenation):
            yield from self.seq(node.items, 0, pos, labels, excl)
        elif isinstance(node, A.Alternation):
            for item in node.items:
                yield from self.gen(item, pos, labels, excl)
        elif isinstance(node, A.Permute):
            for order in itertools.permutations(range(len(node.items))):
                yield from self.seq(tuple(node.items[i] for i in order), 0, pos, labels, excl)
        elif isinstance(node, A.Exclusion):
            yield from self.gen(node.item, pos, labels, True)
        else:
            yield from self.rep(node, 0, pos, labels, excl)

    def seq(self, items: tuple[A.Pattern, ...], i: int, pos: int, labels: Labels, excl: bool
            ) -> Iterator[tuple[int, Labels]]:
        if i == len(items):
            yield pos, labels
            return
        for p, lab in self.gen(items[i], pos, labels, excl):
            yield from self.seq(items, i + 1, p, lab, excl)

    def rep(self, q: A.Quantified, count: int, pos: int, labels: Labels, excl: bool
            ) -> Iterator[tuple[int, Labels]]:
        can_stop = count >= q.low
        can_go = q.high is None or count < q.high
        if can_stop and not q.greedy:
            yield pos, labels
        if can_go:
            for p, lab in self.gen(q.item, pos, labels, excl):
                if p == pos and can_stop:
                    continue  # an empty iteration once the minimum is met changes nothing
                yield from self.rep(q, count + 1, p, lab, excl)
        if can_stop and q.greedy:
            yield pos, labels

    def within(self, start: int, end: int) -> bool:
        if self.mr.within is None or end == start:
            return True
        key = self.mr.order_by[0].column
        frame = _Frame(self.rows, start, (), None, self.subsets, None)
        t0, t1 = frame.value(start, key), frame.value(end - 1, key)
        if t0 is None or t1 is None:
            return False
        span = _arith("-", t1, t0)
        return bool(_compare("<=", span, self.mr.within))

    def find(self, start: int) -> Labels | None:
        """The preferred match from ``start`` (its labels), or None."""
        self.start = start
        for end, labels in self.gen(self.mr.pattern, start, (), False):
            if self.within(start, end):
                return labels
        return None


# ---------------------------------------------------------------- output

def _sort(rows: list[Row], keys: tuple[A.SortKey, ...]) -> list[Row]:
    def get(row: Row, name: str) -> object:
        return _Frame([row], 0, (), None, {}, None).value(0, name)

    out = list(rows)
    for key in reversed(keys):  # stable sorts, last key first
        nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
        present = [r for r in out if get(r, key.column) is not None]
        absent = [r for r in out if get(r, key.column) is None]
        present.sort(key=lambda r: _SortValue(get(r, key.column)), reverse=key.descending)
        out = absent + present if nulls_first else present + absent
    return out


@dataclass(frozen=True)
class _SortValue:
    value: object

    def __lt__(self, other: _SortValue) -> bool:
        return bool(_compare("<", self.value, other.value))


def _partitions(mr: A.MatchRecognize, rows: Sequence[Row]) -> list[tuple[tuple[object, ...],
                                                                          list[Row]]]:
    groups: dict[tuple[object, ...], list[Row]] = {}
    for row in rows:
        frame = _Frame([row], 0, (), None, {}, None)
        key = tuple(_Hashable(frame.value(0, c)) for c in mr.partition_by)
        groups.setdefault(key, []).append(row)
    return [(tuple(k.value for k in key), _sort(part, mr.order_by))  # type: ignore[attr-defined]
            for key, part in groups.items()]


@dataclass(frozen=True)
class _Hashable:
    """A partition value as SQL groups it: NaN equals NaN, NULL is one group."""

    value: object

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Hashable):
            return NotImplemented
        a, b = self.value, other.value
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return (bool(a == b) and type(a) is type(b)) or (_is_num(a) and _is_num(b) and a == b)

    def __hash__(self) -> int:
        a = self.value
        if isinstance(a, float) and math.isnan(a):
            return 0
        return hash(a)


def evaluate(mr: A.MatchRecognize, rows: Sequence[Row]) -> list[dict[str, object]]:
    """The output rows of ``mr`` over ``rows`` (mappings of column → value), exactly as
    docs/match_recognize.md says: partitions in the order their first row comes, each
    partition's output in the order its matches are found."""
    out: list[dict[str, object]] = []
    one_row = mr.rows_per_match == "ONE"
    mode = None if isinstance(mr.rows_per_match, str) else mr.rows_per_match.mode
    subsets = {s.name: s.members for s in mr.subsets}
    for key, part in _partitions(mr, rows):
        if not one_row and part:
            clash = {m.name.lower() for m in mr.measures} & {c.lower() for c in part[0]}
            if clash:
                raise ClauseError(f"Measure {sorted(clash)[0]!r} has the name of an input "
                                  "column: ALL ROWS PER MATCH outputs both")
        matcher = _Matcher(mr, part)
        pos = 0
        number = 0
        covered = -1  # the last row of a non-empty match so far
        while pos < len(part):
            labels = matcher.find(pos)
            if labels is None:
                if mode == "WITH UNMATCHED ROWS" and pos > covered:
                    out.append(_row(mr, part[pos], {m.name: None for m in mr.measures}))
                pos += 1
                continue
            number += 1
            if not labels:  # an empty match
                frame = _Frame(part, pos, (), None, subsets, number)
                if one_row:
                    out.append(_summary(mr, key, frame))
                elif mode != "OMIT EMPTY MATCHES":
                    out.append(_row(mr, part[pos], _measures(mr, frame)))
                pos += 1
                continue
            last = pos + len(labels) - 1
            if one_row:
                out.append(_summary(mr, key, _Frame(part, pos, labels, last, subsets, number)))
            else:
                for i, (_, excluded) in enumerate(labels):
                    if not excluded:
                        frame = _Frame(part, pos, labels, pos + i, subsets, number)
                        out.append(_row(mr, part[pos + i], _measures(mr, frame)))
            covered = max(covered, last)
            pos = _next_start(mr, part, pos, labels, number, subsets)
    return out


def _row(mr: A.MatchRecognize, row: Row, measures: dict[str, object]) -> dict[str, object]:
    """An output row of ALL ROWS PER MATCH: the PARTITION BY columns, the ORDER BY columns,
    the measures, then the other input columns in their order."""
    lead = [*mr.partition_by, *(k.column for k in mr.order_by)]
    first = {k.lower() for k in lead}
    out: dict[str, object] = {}
    for name in lead:
        key = next((k for k in row if k == name), None) or next(
            (k for k in row if k.lower() == name.lower()), name)
        out[key] = row.get(key)
    out.update(measures)
    out.update({k: v for k, v in row.items() if k.lower() not in first})
    return out


def _measures(mr: A.MatchRecognize, frame: _Frame) -> dict[str, object]:
    return {m.name: _ev(m.expr, frame) for m in mr.measures}


def _summary(mr: A.MatchRecognize, key: tuple[object, ...], frame: _Frame
             ) -> dict[str, object]:
    return {**dict(zip(mr.partition_by, key, strict=True)), **_measures(mr, frame)}


def _next_start(mr: A.MatchRecognize, part: Sequence[Row], start: int, labels: Labels,
                number: int, subsets: Mapping[str, tuple[str, ...]]) -> int:
    skip = mr.skip
    if skip.kind == "PAST LAST ROW":
        return start + len(labels)
    if skip.kind == "TO NEXT ROW":
        return start + 1
    assert skip.var is not None
    frame = _Frame(part, start, labels, None, subsets, number)
    rows = frame.mapped(skip.var, True)
    if not rows:
        raise MatchSkipError(f"AFTER MATCH SKIP {skip.kind} {skip.var}: match {number} "
                             f"(rows {start}–{start + len(labels) - 1} of its partition) maps "
                             f"no row to {skip.var}")
    target = rows[0] if skip.kind == "TO FIRST" else rows[-1]
    if target == start:
        raise MatchSkipError(f"AFTER MATCH SKIP {skip.kind} {skip.var}: match {number} would "
                             f"restart at its own first row (row {start} of its partition), "
                             "so matching would never end")
    return target
