"""DEFINE and MEASURES expressions compiled once to closures over a :class:`~.views.View`.

Compiling for a DEFINE condition (``own``: its variable) also records what the condition reads
of the match so far (:attr:`Compiler.needs`), from which :mod:`ceql.mr.registers` derives a
thread's registers; reads that the current row answers (``own.x``, ``PREV(x)``,
``CLASSIFIER()``) record nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..frontends.mr import ast as A
from ..frontends.mr.errors import UnsupportedFunctionError
from .errors import UnknownColumnError
from .values import (
    CAST_TYPES,
    FUNCTIONS,
    Accumulator,
    arith,
    cast,
    compare,
    comparison,
    like,
    negate,
    sql_and,
    sql_not,
    sql_or,
    text,
    truth,
)
from .views import AggSpec, Compiled, RowSet, View

__all__ = ["Compiler", "Need", "var_of"]

#: What a DEFINE condition reads of the match so far: ``("last", rows, k)`` the last k+1 rows
#: labelled in ``rows``, ``("first", rows, k)`` the first k+1, ``("count", rows)``,
#: ``("start",)`` the match's first row, ``("agg", spec)`` a running aggregate, ``("labels",)``
#: the variable of any row (navigation around CLASSIFIER()).
Need = tuple[object, ...]


def var_of(expr: A.Expr) -> str | None:
    """The variable a navigation's or aggregate's argument reads (None: the universal one)."""
    for node in A.walk(expr):
        if isinstance(node, (A.Column, A.Classifier)):
            return node.var
    return None


class Compiler:
    """Compiles expressions against the input's columns (``columns``: None when there are no
    rows, names then stay as written) and the query's SUBSETs."""

    def __init__(self, columns: Sequence[str] | None, subsets: Mapping[str, tuple[str, ...]],
                 own: str | None = None) -> None:
        self.columns = columns
        self._lower = {} if columns is None else {c.lower(): c for c in reversed(columns)}
        self.subsets = subsets
        self.own = own
        self.needs: set[Need] = set()

    # ............................................................ names
    def column(self, name: str) -> str:
        """The input's spelling of column ``name`` (an exact spelling first)."""
        if self.columns is None or name in self.columns:
            return name
        got = self._lower.get(name.lower())
        if got is None:
            raise UnknownColumnError(f"No column {name!r} in the input (columns: "
                                     f"{', '.join(self.columns)}): name one of these")
        return got

    def rowset(self, var: str | None) -> RowSet:
        """The primary variables ``var`` stands for (None: every row)."""
        if var is None:
            return None
        return frozenset(self.subsets.get(var, (var,)))

    def _is_own(self, rows: RowSet) -> bool:
        """Whether the last row of ``rows`` so far is the row being decided (DEFINE)."""
        return self.own is not None and rows is not None and self.own in rows

    # ............................................................ navigation
    def _row_of(self, nav: A.Navigation) -> Compiled:
        """The row FIRST/LAST chooses, as a compiled expression (an int or None); in DEFINE
        its need is recorded (none when it is the current row)."""
        rows = self.rowset(var_of(nav.arg))
        k = nav.offset
        final = nav.semantics == "FINAL"
        first = nav.kind == "FIRST"
        if self.own is not None:
            if not first and k == 0 and (rows is None or self._is_own(rows)):
                return lambda v, at: v.cur
            self.needs.add(("start",) if rows is None else
                           ("first" if first else "last", rows, k))
        if first:
            return lambda v, at: v.first(rows, k, final)
        return lambda v, at: v.last(rows, k, final)

    def _base(self, var: str | None) -> Compiled:
        """The row a column of ``var`` reads: the current one, or the last labelled ``var``."""
        rows = self.rowset(var)
        if rows is None or self._is_own(rows):
            return lambda v, at: v.cur
        if self.own is not None:
            self.needs.add(("last", rows, 0))
        return lambda v, at: v.last(rows, 0, False)

    def _navigation(self, e: A.Navigation) -> Compiled:
        if e.kind in ("FIRST", "LAST"):
            row = self._row_of(e)
            arg = self.compile(e.arg, inside=True)
            if isinstance(e.arg, A.Column):
                key = self.column(e.arg.name)  # arg reads this column of the row given

                def logical_column(v: View, at: int | None) -> object:
                    r: Any = row(v, None)
                    return None if r is None else v.rows[r].get(key)
                return logical_column

            def logical(v: View, at: int | None) -> object:
                r: Any = row(v, None)
                return None if r is None else arg(v, r)
            return logical
        if isinstance(e.arg, A.Navigation):
            base = self._row_of(e.arg)
            arg = self.compile(e.arg.arg, inside=True)
        else:
            base = self._base(var_of(e.arg))
            arg = self.compile(e.arg, inside=True)
        step = -e.offset if e.kind == "PREV" else e.offset

        def physical(v: View, at: int | None) -> object:
            r: Any = base(v, None)
            if r is None:
                return None
            t: int = r + step
            return arg(v, t) if 0 <= t < len(v.rows) else None
        return physical

    # ............................................................ the rest
    def compile(self, e: A.Expr, *, inside: bool = False) -> Compiled:
        """``e`` as a closure; ``inside``: the argument of navigation or an aggregate (its
        columns and CLASSIFIER() read the row given)."""
        if isinstance(e, A.Literal):
            value = e.value
            return lambda v, at: value
        if isinstance(e, A.Column):
            key = self.column(e.name)
            if inside:
                return lambda v, at: v.rows[at].get(key)  # type: ignore[index]
            rows = self.rowset(e.var)
            if rows is None or self._is_own(rows):
                def own_column(v: View, at: int | None) -> object:
                    r = v.cur  # the current row (as _base reads it), one call fewer
                    return None if r is None else v.rows[r].get(key)
                return own_column
            base = self._base(e.var)

            def column(v: View, at: int | None) -> object:
                r: Any = base(v, None)
                return None if r is None else v.rows[r].get(key)
            return column
        if isinstance(e, A.Classifier):
            if inside:
                if self.own is not None:
                    self.needs.add(("labels",))
                return lambda v, at: v.label(at)  # type: ignore[arg-type]
            rows = self.rowset(e.var)
            final = e.semantics == "FINAL"
            if self.own is not None and (rows is None or self._is_own(rows)):
                own = self.own
                return lambda v, at: own
            if self.own is not None:
                self.needs.add(("last", rows, 0))
            return lambda v, at: v.classifier(rows, final)
        if isinstance(e, A.MatchNumber):
            return lambda v, at: v.number
        if isinstance(e, A.Navigation):
            return self._navigation(e)
        if isinstance(e, A.Aggregate):
            return self._aggregate(e)
        if isinstance(e, A.Negate):
            operand = self.compile(e.operand, inside=inside)
            return lambda v, at: negate(operand(v, at))
        if isinstance(e, A.Binary):
            return self._binary(e, inside)
        if isinstance(e, A.Not):
            operand = self.compile(e.operand, inside=inside)
            return lambda v, at: sql_not(truth(operand(v, at)))
        if isinstance(e, A.IsNull):
            operand = self.compile(e.operand, inside=inside)
            if e.negated:
                return lambda v, at: operand(v, at) is not None
            return lambda v, at: operand(v, at) is None
        if isinstance(e, A.Between):
            return self._between(e, inside)
        if isinstance(e, A.InList):
            return self._in(e, inside)
        if isinstance(e, A.Like):
            operand = self.compile(e.operand, inside=inside)
            pattern = self.compile(e.pattern, inside=inside)
            neg = e.negated
            return lambda v, at: sql_not(like(operand(v, at), pattern(v, at))) if neg else \
                like(operand(v, at), pattern(v, at))
        if isinstance(e, A.Case):
            return self._case(e, inside)
        if isinstance(e, A.Cast):
            base_type = e.type_name.split("(")[0].strip()
            if base_type not in CAST_TYPES:
                raise UnsupportedFunctionError(
                    f"CAST to {e.type_name} is not in the Python subset (it has "
                    f"{', '.join(CAST_TYPES)}); Spark evaluates every type")
            operand = self.compile(e.operand, inside=inside)
            type_name = e.type_name
            return lambda v, at: cast(operand(v, at), type_name)
        assert isinstance(e, A.Call)
        fn = FUNCTIONS.get(e.name)
        if fn is None:
            raise UnsupportedFunctionError(
                f"{e.name} is not among the functions the Python evaluation has (ABS, ROUND, "
                "UPPER, LOWER, COALESCE)")
        args = [self.compile(a, inside=inside) for a in e.args]
        return lambda v, at: fn([a(v, at) for a in args])

    def _aggregate(self, e: A.Aggregate) -> Compiled:
        final = e.semantics == "FINAL"
        if e.arg is None:
            rows = self.rowset(e.star_var)
            if self.own is not None:
                self.needs.add(("start",) if rows is None else ("count", rows))
            return lambda v, at: v.count(rows, final)
        # the argument reads the row it is given, whatever else this compiler records
        spec = AggSpec(Accumulator(e.name, e.distinct), self.rowset(var_of(e.arg)),
                       Compiler(self.columns, self.subsets).compile(e.arg, inside=True))
        if self.own is not None:
            self.needs.add(("agg", spec))
        return lambda v, at: v.aggregate(spec, final)

    def _binary(self, e: A.Binary, inside: bool) -> Compiled:
        left = self.compile(e.left, inside=inside)
        right = self.compile(e.right, inside=inside)
        op = e.op
        if op in ("AND", "OR"):
            # sql_and / sql_or of truth(left), truth(right), inlined: both sides read, in
            # order; ``wins`` (FALSE for AND, TRUE for OR) decides alone
            wins = op == "OR"

            def logical(v: View, at: int | None) -> object:
                a = left(v, at)
                if a is not None and a is not True and a is not False:
                    truth(a)  # raises
                b = right(v, at)
                if b is not None and b is not True and b is not False:
                    truth(b)
                if a is wins or b is wins:
                    return wins
                return None if a is None or b is None else not wins
            return logical
        if op == "||":
            def concat(v: View, at: int | None) -> object:
                a, b = left(v, at), right(v, at)
                return None if a is None or b is None else text(a) + text(b)
            return concat
        if op in ("+", "-", "*", "/", "%"):
            return lambda v, at: arith(op, left(v, at), right(v, at))
        return comparison(op, left, right)

    def _between(self, e: A.Between, inside: bool) -> Compiled:
        operand = self.compile(e.operand, inside=inside)
        low = self.compile(e.low, inside=inside)
        high = self.compile(e.high, inside=inside)
        neg = e.negated

        def between(v: View, at: int | None) -> object:
            x = operand(v, at)
            out = sql_and(compare(">=", x, low(v, at)), compare("<=", x, high(v, at)))
            return sql_not(out) if neg else out
        return between

    def _in(self, e: A.InList, inside: bool) -> Compiled:
        operand = self.compile(e.operand, inside=inside)
        items = [self.compile(i, inside=inside) for i in e.items]
        neg = e.negated

        def in_list(v: View, at: int | None) -> object:
            x = operand(v, at)
            out: bool | None = False
            for item in items:
                out = sql_or(out, compare("=", x, item(v, at)))
            return sql_not(out) if neg else out
        return in_list

    def _case(self, e: A.Case, inside: bool) -> Compiled:
        subject = None if e.operand is None else self.compile(e.operand, inside=inside)
        whens = [(self.compile(c, inside=inside), self.compile(r, inside=inside))
                 for c, r in e.whens]
        default = None if e.default is None else self.compile(e.default, inside=inside)

        def case(v: View, at: int | None) -> object:
            s = None if subject is None else subject(v, at)
            for cond, result in whens:
                hit = (truth(cond(v, at)) is True if subject is None else
                       compare("=", s, cond(v, at)) is True)
                if hit:
                    return result(v, at)
            return None if default is None else default(v, at)
        return case
