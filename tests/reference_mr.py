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
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from ceql.errors import CeqlInputError
from ceql.frontends.mr import ast as A
from ceql.frontends.mr.errors import ClauseError, MatchSkipError, UnsupportedFunctionError

__all__ = ["MrEvalError", "evaluate"]

Row = Mapping[str, object]
Labels = tuple[tuple[str, bool], ...]  # per row of the match: (variable, excluded)


class MrEvalError(CeqlInputError):
    """Values the reference cannot combine (a string compared with a number, …)."""


# ---------------------------------------------------------------- values

def _is_num(v: object) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def _num_pair(a: object, b: object) -> tuple[object, object]:
    if isinstance(a, float) or isinstance(b, float):
        return float(a), float(b)  # type: ignore[arg-type]
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a), Decimal(b)  # type: ignore[arg-type]
    return a, b


def _arith(op: str, a: object, b: object) -> object:
    if a is None or b is None:
        return None
    if _is_num(a) and _is_num(b):
        x, y = _num_pair(a, b)
        if op == "+":
            return x + y  # type: ignore[operator]
        if op == "-":
            return x - y  # type: ignore[operator]
        if op == "*":
            return x * y  # type: ignore[operator]
        if y == 0:
            return None
        if op == "/":
            if isinstance(x, int) and isinstance(y, int):
                return x / y
            return x / y  # type: ignore[operator]
        # %: the sign of the dividend, as SQL (and Java) take it
        if isinstance(x, int) and isinstance(y, int):
            r = abs(x) % abs(y)
            return r if x >= 0 else -r
        if isinstance(x, float):
            return math.fmod(x, y)  # type: ignore[arg-type]
        return x - y * (x / y).to_integral_value(rounding="ROUND_DOWN")  # type: ignore[operator]
    dt, td = datetime.datetime, datetime.timedelta
    if op == "+" and isinstance(a, dt) and isinstance(b, td):
        return a + b
    if op == "+" and isinstance(a, td) and isinstance(b, dt):
        return b + a
    if op == "-" and isinstance(a, dt) and isinstance(b, (td, dt)):
        return a - b
    if op in "+-" and isinstance(a, td) and isinstance(b, td):
        return a + b if op == "+" else a - b
    raise MrEvalError(f"cannot compute {a!r} {op} {b!r}")


def _text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    return str(v)


def _compare(op: str, a: object, b: object) -> bool | None:
    if a is None or b is None:
        return None
    if _is_num(a) and _is_num(b):
        x, y = _num_pair(a, b)
    elif type(a) is type(b) and isinstance(a, (str, bool, datetime.datetime,
                                                 datetime.timedelta)):
        x, y = a, b
    else:
        raise MrEvalError(f"cannot compare {a!r} with {b!r}")
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


def _truth(v: object) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    raise MrEvalError(f"a condition gave {v!r}, not TRUE, FALSE or NULL")


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _not(a: bool | None) -> bool | None:
    return None if a is None else not a


def _like(value: str, pattern: str) -> bool:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.fullmatch("".join(out), value, re.S) is not None


def _round(v: object, digits: int) -> object:
    if v is None:
        return None
    if isinstance(v, int) and digits >= 0:
        return v
    d = Decimal(repr(v)) if isinstance(v, float) else Decimal(v)  # type: ignore[arg-type]
    r = d.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    if isinstance(v, float):
        return float(r)
    if isinstance(v, int):
        return int(r)
    return r


def _cast(v: object, type_name: str) -> object:
    if v is None:
        return None
    base = type_name.split("(")[0]
    try:
        if base in ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "LONG"):
            if isinstance(v, str):
                return int(v.strip())
            if isinstance(v, bool):
                return int(v)
            if _is_num(v):
                return int(v)  # type: ignore[call-overload]
        if base in ("DOUBLE", "FLOAT", "REAL"):
            if isinstance(v, (str, int, float, Decimal)):
                return float(v)
        if base in ("DECIMAL", "NUMERIC", "DEC"):
            scale = int(type_name.split(",")[1].rstrip(")")) if "," in type_name else 0
            d = Decimal(v.strip()) if isinstance(v, str) else (
                Decimal(repr(v)) if isinstance(v, float) else Decimal(v))  # type: ignore[arg-type]
            return d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
        if base in ("STRING", "VARCHAR", "CHAR", "TEXT"):
            return _text(v)
        if base == "BOOLEAN":
            if isinstance(v, str):
                return {"true": True, "false": False}.get(v.strip().lower())
            if isinstance(v, bool):
                return v
            if _is_num(v):
                return v != 0
        if base == "TIMESTAMP":
            if isinstance(v, str):
                return datetime.datetime.fromisoformat(v.strip())
            if isinstance(v, datetime.datetime):
                return v
    except (ValueError, InvalidOperation):
        return None  # a string that writes no such value: NULL (Spark without ANSI mode)
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
