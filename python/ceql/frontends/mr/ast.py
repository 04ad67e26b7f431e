"""The syntax tree of a MATCH_RECOGNIZE clause: frozen dataclasses for expressions, row
patterns and clauses (docs/match_recognize.md gives their meaning).

Spans (:class:`ceql.ir.nodes.Span`) say where a node stands in the text; they take no part in
equality or ``repr``, so a query and the parse of its formatted text compare equal.
Pattern variables are kept in their canonical spelling (unquoted names upper-cased, as SQL
folds identifiers); column names as written.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal as Lit
from typing import Union

from ...ir.nodes import NO_SPAN, Span

__all__ = [
    "AGGREGATES",
    "NAVIGATIONS",
    "Aggregate",
    "AllRows",
    "Alternation",
    "Anchor",
    "Between",
    "Binary",
    "Call",
    "Case",
    "Cast",
    "Classifier",
    "Column",
    "Concatenation",
    "Define",
    "EmptyMode",
    "EmptyPattern",
    "Exclusion",
    "Expr",
    "InList",
    "IsNull",
    "Like",
    "Literal",
    "MatchNumber",
    "MatchRecognize",
    "Measure",
    "NavKind",
    "Navigation",
    "Negate",
    "Not",
    "Pattern",
    "PatternVar",
    "Permute",
    "Quantified",
    "Query",
    "RowsPerMatch",
    "SelectItem",
    "Semantics",
    "Skip",
    "SortKey",
    "Subset",
    "Value",
    "children",
    "walk",
    "walk_pattern",
]


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)  # type: ignore[no-any-return, unused-ignore]


#: A literal's value: SQL NULL is ``None``; numbers written with a decimal point are exact
#: (``Decimal``), with an exponent ``float``; ``timedelta`` is an INTERVAL, ``datetime`` a
#: TIMESTAMP literal.
Value = Union[None, bool, int, Decimal, float, str, datetime.datetime, datetime.timedelta]

#: RUNNING or FINAL.
Semantics = Lit["RUNNING", "FINAL"]
#: PREV, NEXT, FIRST or LAST.
NavKind = Lit["PREV", "NEXT", "FIRST", "LAST"]
#: What ALL ROWS PER MATCH does with empty matches and unmatched rows.
EmptyMode = Lit["SHOW EMPTY MATCHES", "OMIT EMPTY MATCHES", "WITH UNMATCHED ROWS"]

#: The navigation functions: physical (PREV, NEXT) and logical (FIRST, LAST).
NAVIGATIONS = ("PREV", "NEXT", "FIRST", "LAST")
#: The aggregate functions of row pattern recognition.
AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX")


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True)
class Literal:
    """A constant (``1``, ``1.5``, ``'x'``, ``TRUE``, ``NULL``, ``INTERVAL '10' SECOND``,
    ``TIMESTAMP '2024-01-01 00:00:00'``)."""

    value: Value
    span: Span = _span()


@dataclass(frozen=True)
class Column:
    """A column of the input: ``price`` (the universal row pattern variable: ``var`` None) or
    ``A.price`` (a pattern or subset variable)."""

    var: str | None
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class Negate:
    """Unary minus."""

    operand: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Binary:
    """``left op right``: ``+ - * / % ||``, comparisons ``= <> < <= > >=`` (``!=`` is ``<>``,
    ``==`` is ``=``), ``AND``, ``OR``."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Not:
    """``NOT operand``."""

    operand: Expr
    span: Span = _span()


@dataclass(frozen=True)
class IsNull:
    """``operand IS [NOT] NULL``."""

    operand: Expr
    negated: bool
    span: Span = _span()


@dataclass(frozen=True)
class Between:
    """``operand [NOT] BETWEEN low AND high`` (both ends inclusive)."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool
    span: Span = _span()


@dataclass(frozen=True)
class InList:
    """``operand [NOT] IN (item, …)``."""

    operand: Expr
    items: tuple[Expr, ...]
    negated: bool
    span: Span = _span()


@dataclass(frozen=True)
class Like:
    """``operand [NOT] LIKE pattern`` (SQL's ``%`` and ``_``, ``\\`` escapes)."""

    operand: Expr
    pattern: Expr
    negated: bool
    span: Span = _span()


@dataclass(frozen=True)
class Case:
    """``CASE [operand] WHEN … THEN … [ELSE …] END`` (``operand`` None: searched CASE)."""

    operand: Expr | None
    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None
    span: Span = _span()


@dataclass(frozen=True)
class Cast:
    """``CAST(operand AS type)``; ``type_name`` upper-cased, with its parameters
    (``DECIMAL(10,2)``)."""

    operand: Expr
    type_name: str
    span: Span = _span()


@dataclass(frozen=True)
class Call:
    """A scalar function (``ABS(x)``, ``COALESCE(a, b)``); ``name`` upper-cased."""

    name: str
    args: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Navigation:
    """``PREV``/``NEXT`` (physical: rows of the partition) or ``FIRST``/``LAST`` (logical: rows
    of the match) of ``arg``, ``offset`` rows away; ``semantics`` ``RUNNING``/``FINAL`` when
    written (``None``: running)."""

    kind: NavKind
    arg: Expr
    offset: int
    semantics: Semantics | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Aggregate:
    """``COUNT``/``SUM``/``AVG``/``MIN``/``MAX`` over the rows of the match (up to the current
    one, or all of them under FINAL). ``arg`` None: ``COUNT(*)`` (``star_var`` None) or
    ``COUNT(A.*)`` (``star_var`` ``'A'``)."""

    name: str
    arg: Expr | None
    distinct: bool = False
    star_var: str | None = None
    semantics: Semantics | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Classifier:
    """``CLASSIFIER()`` (the variable of the current row) or ``CLASSIFIER(v)`` (that of the
    last row mapped to ``v``, a subset)."""

    var: str | None = None
    semantics: Semantics | None = None
    span: Span = _span()


@dataclass(frozen=True)
class MatchNumber:
    """``MATCH_NUMBER()``: the match's number in its partition, from 1."""

    span: Span = _span()


Expr = Union[Literal, Column, Negate, Binary, Not, IsNull, Between, InList, Like, Case, Cast,
             Call, Navigation, Aggregate, Classifier, MatchNumber]


# ---------------------------------------------------------------- row patterns

@dataclass(frozen=True)
class PatternVar:
    """A primary row pattern variable (one row whose DEFINE condition holds)."""

    name: str
    span: Span = _span()


@dataclass(frozen=True)
class EmptyPattern:
    """``()``: the empty sequence."""

    span: Span = _span()


@dataclass(frozen=True)
class Anchor:
    """``^`` (the partition's start) or ``$`` (its end)."""

    kind: Lit["^", "$"]
    span: Span = _span()


@dataclass(frozen=True)
class Concatenation:
    """Items one after the other (two or more)."""

    items: tuple[Pattern, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Alternation:
    """``a | b | …`` (two or more), preferred left to right."""

    items: tuple[Pattern, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Quantified:
    """``item`` repeated ``low`` to ``high`` times (``high`` None: no bound); ``greedy``
    prefers more repetitions, reluctant (``*?``) fewer."""

    item: Pattern
    low: int
    high: int | None
    greedy: bool = True
    span: Span = _span()


@dataclass(frozen=True)
class Permute:
    """``PERMUTE(a, b, …)``: every order of the items, preferred in lexicographic order of
    their positions in the list."""

    items: tuple[Pattern, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Exclusion:
    """``{- item -}``: rows that match but are left out of ALL ROWS PER MATCH's output."""

    item: Pattern
    span: Span = _span()


Pattern = Union[PatternVar, EmptyPattern, Anchor, Concatenation, Alternation, Quantified,
                Permute, Exclusion]


# ---------------------------------------------------------------- clauses

@dataclass(frozen=True)
class SortKey:
    """An ORDER BY key; ``nulls_first`` None: SQL's default (first when ascending, last when
    descending)."""

    column: str
    descending: bool = False
    nulls_first: bool | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Measure:
    """``expr AS name`` in MEASURES."""

    expr: Expr
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class Subset:
    """``SUBSET name = (v, …)``: a union row pattern variable."""

    name: str
    members: tuple[str, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Define:
    """``var AS condition`` in DEFINE."""

    var: str
    condition: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Skip:
    """AFTER MATCH SKIP: ``PAST LAST ROW``, ``TO NEXT ROW``, ``TO FIRST`` ``var``, ``TO LAST``
    ``var`` (``TO var`` is ``TO LAST var``)."""

    kind: Lit["PAST LAST ROW", "TO NEXT ROW", "TO FIRST", "TO LAST"] = "PAST LAST ROW"
    var: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class AllRows:
    """ALL ROWS PER MATCH and what it does with empty matches and unmatched rows."""

    mode: EmptyMode = "SHOW EMPTY MATCHES"
    span: Span = _span()


#: ``"ONE"`` (ONE ROW PER MATCH, the default) or :class:`AllRows`.
RowsPerMatch = Union[Lit["ONE"], AllRows]


@dataclass(frozen=True)
class MatchRecognize:
    """The body of ``MATCH_RECOGNIZE ( … )``."""

    pattern: Pattern
    partition_by: tuple[str, ...] = ()
    order_by: tuple[SortKey, ...] = ()
    measures: tuple[Measure, ...] = ()
    rows_per_match: RowsPerMatch = "ONE"
    skip: Skip = Skip()
    within: datetime.timedelta | None = None
    subsets: tuple[Subset, ...] = ()
    defines: tuple[Define, ...] = ()
    text: str = field(default="", compare=False, repr=False)
    span: Span = _span()

    def variables(self) -> tuple[str, ...]:
        """The primary pattern variables, in the order the pattern first names them."""
        out: list[str] = []
        todo: list[Pattern] = [self.pattern]
        while todo:
            node = todo.pop()
            if isinstance(node, PatternVar):
                if node.name not in out:
                    out.append(node.name)
            elif isinstance(node, (Concatenation, Alternation, Permute)):
                todo.extend(reversed(node.items))
            elif isinstance(node, (Quantified, Exclusion)):
                todo.append(node.item)
        return tuple(out)

    def subset(self, name: str) -> tuple[str, ...] | None:
        """The members of subset ``name``, or None when no SUBSET defines it."""
        for s in self.subsets:
            if s.name == name:
                return s.members
        return None

    def condition(self, var: str) -> Expr | None:
        """The DEFINE condition of ``var`` (None: undefined, true for every row)."""
        for d in self.defines:
            if d.var == var:
                return d.condition
        return None


@dataclass(frozen=True)
class SelectItem:
    """An item of the surrounding SELECT list: ``expr [AS alias]`` or ``qualifier.*``."""

    expr: Expr | None
    alias: str | None = None
    star_qualifier: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Query:
    """``SELECT … FROM source MATCH_RECOGNIZE ( … ) [AS alias]``; ``select`` empty for
    ``SELECT *``."""

    body: MatchRecognize
    source: tuple[str, ...]
    select: tuple[SelectItem, ...] = ()
    alias: str | None = None
    span: Span = _span()


def children(expr: Expr) -> tuple[Expr, ...]:
    """The sub-expressions of ``expr``, left to right."""
    if isinstance(expr, (Negate, Not, IsNull, Cast)):
        return (expr.operand,)
    if isinstance(expr, Binary):
        return (expr.left, expr.right)
    if isinstance(expr, Between):
        return (expr.operand, expr.low, expr.high)
    if isinstance(expr, InList):
        return (expr.operand, *expr.items)
    if isinstance(expr, Like):
        return (expr.operand, expr.pattern)
    if isinstance(expr, Case):
        out: list[Expr] = [] if expr.operand is None else [expr.operand]
        for cond, value in expr.whens:
            out += [cond, value]
        return (*out, *([] if expr.default is None else [expr.default]))
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, Navigation):
        return (expr.arg,)
    if isinstance(expr, Aggregate):
        return () if expr.arg is None else (expr.arg,)
    return ()


def walk(expr: Expr) -> list[Expr]:
    """``expr`` and every sub-expression, pre-order, without recursion."""
    out: list[Expr] = []
    todo = [expr]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(reversed(children(node)))
    return out


def walk_pattern(pattern: Pattern) -> list[Pattern]:
    """``pattern`` and every sub-pattern, pre-order, without recursion."""
    out: list[Pattern] = []
    todo = [pattern]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, Concatenation | Alternation | Permute):
            todo.extend(reversed(node.items))
        elif isinstance(node, Quantified | Exclusion):
            todo.append(node.item)
    return out
