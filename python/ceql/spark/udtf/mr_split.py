"""MATCH_RECOGNIZE's expressions split between Spark and ceql's engine (issue 30, item 3).

Every maximal *row-local* subexpression of DEFINE and MEASURES — one that reads the columns of
one row only, with no navigation, aggregate, ``CLASSIFIER()`` or ``MATCH_NUMBER()`` in it — is
written as Spark SQL and computed by Spark as a hidden input column (``AnalyzeResult.select``),
with Spark's functions, types and NULL rules; the body the engine runs reads that column in its
place. Which row a subexpression reads decides whether it is row-local:

- in DEFINE of ``v``, a bare column and ``v.col`` (or a SUBSET holding ``v``) are the current
  row; ``w.col`` the last row labelled ``w``;
- in MEASURES, a bare column is the current row, ``w.col`` the last row labelled ``w``;
- inside a navigation's or an aggregate's argument, every column reads the row navigated to
  (all of one variable, as the front end checks), so any part of the argument without
  CLASSIFIER is row-local: ``PREV(upper(name))`` reads ``PREV(<upper(name)>)``.

Outside navigation the row may not exist (``w.col`` before any ``w`` row; an empty match's
measures): the original then evaluates with that row's columns NULL, which is not NULL for
every expression (``COALESCE(w.x, 0)``). Such a column therefore comes with a *default*: the
same expression over typed NULLs, a constant Spark computes too, which a task reads from its
first row and puts in the body (:func:`bind`). Constant subexpressions holding a function call,
a cast or a timestamp are Spark's constants the same way.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ceql.constants import INTERNAL_PREFIX
from ceql.frontends.mr import ast as A
from ceql.frontends.mr.formatter import ExprWriter
from ceql.mr.expressions import var_of
from ceql.spark.udtf.call import quote_identifier, sql_string

__all__ = ["ROW_COLUMN", "Hidden", "Split", "bind", "spark_sql", "split_body"]

#: The hidden column that is TRUE on every row: a variable's row exists when it is not NULL.
ROW_COLUMN = INTERNAL_PREFIX + "row"
_PREFIX = INTERNAL_PREFIX + "mr_"


@dataclass(frozen=True)
class Hidden:
    """A column Spark computes before the pattern: its alias and its Spark SQL; ``constant``:
    the same value on every row (put in the body as a literal); ``default``: the alias of the
    constant that stands for this column when its row does not exist."""

    alias: str
    sql: str
    constant: bool = False
    default: str | None = None


@dataclass(frozen=True)
class Split:
    """A body whose row-local parts read hidden columns, and those columns in order."""

    body: A.MatchRecognize
    hidden: tuple[Hidden, ...]

    @property
    def select(self) -> tuple[tuple[str, str], ...]:
        """The hidden columns as (Spark SQL, alias) pairs, defaults and ROW_COLUMN included."""
        out = [(h.sql, h.alias) for h in self.hidden]
        if any(h.default is not None for h in self.hidden):
            out.append(("TRUE", ROW_COLUMN))
        return tuple(out)


# ---------------------------------------------------------------- Spark SQL text

def _interval(d: datetime.timedelta) -> str:
    us = (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds
    sign = "-" if us < 0 else ""
    days, rest = divmod(abs(us), 86_400_000_000)
    hours, rest = divmod(rest, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, micros = divmod(rest, 1_000_000)
    return (f"INTERVAL '{sign}{days} {hours:02d}:{minutes:02d}:{seconds:02d}.{micros:06d}' "
            "DAY TO SECOND")


def _literal(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v) if abs(v) < 2**63 else f"CAST('{v}' AS DECIMAL(38, 0))"
    if isinstance(v, Decimal):
        return f"{v:f}BD"
    if isinstance(v, float):
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return f"CAST('{'-' if v < 0 else ''}Infinity' AS DOUBLE)"
        return f"{v!r}D"
    if isinstance(v, str):
        return sql_string(v)
    if isinstance(v, datetime.timedelta):
        return _interval(v)
    if isinstance(v, datetime.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    raise TypeError(f"no Spark SQL literal for {v!r}")  # pragma: no cover - parser's values


class _SparkWriter(ExprWriter):
    """Spark SQL: Spark's literals, columns as the caller writes them, function names as
    written, and every compound operand in parentheses (Spark's precedences are not the
    standard's: ``||`` binds as ``+`` there)."""

    def __init__(self, column: Callable[[A.Column], str]) -> None:
        self._column = column

    def literal(self, value: A.Value) -> str:
        return _literal(value)

    def column(self, expr: A.Column) -> str:
        return self._column(expr)

    def function(self, name: str) -> str:
        return name

    def wrap(self, expr: A.Expr, least: int) -> str:
        text = self.write(expr)
        simple = isinstance(expr, (A.Column, A.Call, A.Cast, A.Case)) or (
            isinstance(expr, A.Literal) and not text.startswith("-"))
        return text if simple else f"({text})"

    def relating(self, expr: A.Expr) -> str:  # pragma: no cover - the split's job
        raise TypeError(f"{type(expr).__name__} is not row-local")


def spark_sql(e: A.Expr, column: Callable[[A.Column], str]) -> str:
    """Row-local ``e`` as Spark SQL; ``column`` writes a column reference."""
    return _SparkWriter(column).wrap(e, 0)


# ---------------------------------------------------------------- the split

def _rebuilt(e: A.Expr, kids: Sequence[A.Expr]) -> A.Expr:
    """``e`` with its children (:func:`ceql.frontends.mr.ast.children`'s order) replaced."""
    k = list(kids)
    if isinstance(e, (A.Negate, A.Not, A.IsNull, A.Cast)):
        return dataclasses.replace(e, operand=k[0])
    if isinstance(e, A.Binary):
        return dataclasses.replace(e, left=k[0], right=k[1])
    if isinstance(e, A.Between):
        return dataclasses.replace(e, operand=k[0], low=k[1], high=k[2])
    if isinstance(e, A.InList):
        return dataclasses.replace(e, operand=k[0], items=tuple(k[1:]))
    if isinstance(e, A.Like):
        return dataclasses.replace(e, operand=k[0], pattern=k[1])
    if isinstance(e, A.Case):
        operand = None if e.operand is None else k.pop(0)
        whens = tuple((k[2 * i], k[2 * i + 1]) for i in range(len(e.whens)))
        default = None if e.default is None else k[2 * len(e.whens)]
        return dataclasses.replace(e, operand=operand, whens=whens, default=default)
    if isinstance(e, A.Call):
        return dataclasses.replace(e, args=tuple(k))
    if isinstance(e, A.Navigation):
        return dataclasses.replace(e, arg=k[0])
    if isinstance(e, A.Aggregate):
        return dataclasses.replace(e, arg=k[0]) if k else e
    return e


#: What a subexpression reads: ``None`` nothing of any row (a constant), ``"cur"`` the current
#: row, ``"nav"`` the row navigated to, else a variable's last row; ``_MIXED``: not row-local.
_MIXED = "\x00mixed"


@dataclass
class _Lifted:
    expr: A.Expr
    ref: str | None
    worth: bool  # computed by Spark if it is a maximal row-local part


class _Splitter:
    def __init__(self, body: A.MatchRecognize, resolve: Callable[[str], str],
                 null_of: Callable[[str], str]) -> None:
        self.subsets = {s.name: s.members for s in body.subsets}
        self.resolve = resolve
        self.null_of = null_of
        self.hidden: dict[tuple[str, bool, bool], Hidden] = {}

    def _column_ref(self, c: A.Column, own: str | None, nav: bool) -> str:
        if nav:
            return "nav"
        if c.var is None:
            return "cur"
        if own is not None and own in self.subsets.get(c.var, (c.var,)):
            return "cur"
        return c.var

    def _sql(self, e: A.Expr, nulls: bool) -> str:
        def column(c: A.Column) -> str:
            name = self.resolve(c.name)
            return f"CAST(NULL AS {self.null_of(name)})" if nulls else quote_identifier(name)
        return spark_sql(e, column)

    def _hide(self, sql: str, constant: bool, default: str | None) -> str:
        key = (sql, constant, default is not None)
        got = self.hidden.get(key)
        if got is None:
            got = Hidden(f"{_PREFIX}{len(self.hidden)}", sql, constant, default)
            self.hidden[key] = got
        return got.alias

    def _extract(self, lifted: _Lifted, own: str | None, nav_var: str | None) -> A.Expr:
        """``lifted.expr`` (row-local) replaced by a hidden column, when worth it."""
        e, ref = lifted.expr, lifted.ref
        if not lifted.worth or ref == _MIXED:
            return e
        if ref is None:
            return A.Column(None, self._hide(self._sql(e, False), True, None))
        if ref == "nav":
            return A.Column(nav_var, self._hide(self._sql(e, False), False, None))
        default = None
        if not (ref == "cur" and own is not None):  # that row may not exist
            default = self._hide(self._sql(e, True), True, None)
        var = None if ref == "cur" else ref
        return A.Column(var, self._hide(self._sql(e, False), False, default))

    def lift(self, e: A.Expr, own: str | None, nav: bool, nav_var: str | None) -> _Lifted:
        """``e`` with its maximal row-local parts below it hidden; its own reference."""
        if isinstance(e, A.Literal):
            return _Lifted(e, None, isinstance(e.value, datetime.datetime))
        if isinstance(e, A.Column):
            return _Lifted(e, self._column_ref(e, own, nav), False)
        if isinstance(e, (A.Classifier, A.MatchNumber)):
            return _Lifted(e, _MIXED, False)
        if isinstance(e, (A.Navigation, A.Aggregate)):
            args = A.children(e)
            if not args:
                return _Lifted(e, _MIXED, False)
            arg = args[0]
            var = var_of(arg)
            inner = (self.lift(arg, own, nav, nav_var) if isinstance(arg, A.Navigation)
                     else self.lift(arg, own, True, var))
            new_arg = (inner.expr if isinstance(arg, A.Navigation)
                       else self._extract(inner, own, var))
            return _Lifted(_rebuilt(e, [new_arg]), _MIXED, False)
        lifted = [self.lift(c, own, nav, nav_var) for c in A.children(e)]
        refs = {x.ref for x in lifted} - {None}
        if _MIXED in refs or len(refs) > 1:
            return _Lifted(_rebuilt(e, [self._extract(x, own, nav_var) for x in lifted]),
                           _MIXED, False)
        worth = bool(refs) or isinstance(e, (A.Call, A.Cast)) or any(x.worth for x in lifted)
        return _Lifted(_rebuilt(e, [x.expr for x in lifted]), next(iter(refs), None), worth)

    def top(self, e: A.Expr, own: str | None) -> A.Expr:
        return self._extract(self.lift(e, own, False, None), own, None)


def split_body(body: A.MatchRecognize, resolve: Callable[[str], str],
               null_of: Callable[[str], str]) -> Split:
    """``body`` with its row-local parts computed by Spark. ``resolve`` gives a column's name
    as the input spells it (raising for an unknown one); ``null_of`` its Spark type, for a
    typed NULL."""
    s = _Splitter(body, resolve, null_of)
    defines = tuple(dataclasses.replace(d, condition=s.top(d.condition, d.var))
                    for d in body.defines)
    measures = tuple(dataclasses.replace(m, expr=s.top(m.expr, None)) for m in body.measures)
    new = dataclasses.replace(body, defines=defines, measures=measures)
    return Split(new, tuple(s.hidden.values()))


def _bound(e: A.Expr, literal: Mapping[str, object],
           default: Mapping[str, tuple[str, object]]) -> A.Expr:
    if isinstance(e, A.Column):
        if e.name in literal:
            return A.Literal(literal[e.name])  # type: ignore[arg-type]
        got = default.get(e.name)
        if got is not None:
            return A.Case(None, ((A.IsNull(A.Column(e.var, ROW_COLUMN), False),
                                  A.Literal(got[1])),), e)  # type: ignore[arg-type]
        return e
    return _rebuilt(e, [_bound(k, literal, default) for k in A.children(e)])


def bind(split: Split, first: Mapping[str, Any]) -> A.MatchRecognize:
    """The body a task runs: constants and non-NULL defaults read from a row of its input
    (``first``: the same on every row) put in as literals."""
    literal = {h.alias: first.get(h.alias) for h in split.hidden if h.constant}
    default = {h.alias: (h.default, literal[h.default]) for h in split.hidden
               if h.default is not None and literal.get(h.default) is not None}
    body = split.body
    if not literal:
        return body
    return dataclasses.replace(
        body,
        defines=tuple(dataclasses.replace(d, condition=_bound(d.condition, literal, default))
                      for d in body.defines),
        measures=tuple(dataclasses.replace(m, expr=_bound(m.expr, literal, default))
                       for m in body.measures))
