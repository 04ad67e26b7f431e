"""The IR: frozen dataclasses for formulas, FILTER conditions, predicates, expressions and
the query with its clauses, with source positions.

Front ends (:mod:`ceql.frontends`) produce it; analysis, automata and runtime read it. Spans take
no part in equality (nor in ``repr``), so two parses of equivalent text compare equal and the
``repr`` of a query is a canonical description of it (snapshots fingerprint it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from fractions import Fraction
from typing import Union

from ..constants import CONSUME_NONE, CONSUME_POLICIES, STRATEGIES

__all__ = [
    "AGGREGATES",
    "CONSUME_POLICIES",
    "DISTINCT_AGGREGATES",
    "NO_SPAN",
    "STRATEGIES",
    "Agg",
    "Arith",
    "As",
    "AtomPred",
    "Attr",
    "Compare",
    "EventType",
    "Expr",
    "Filter",
    "FilterAnd",
    "FilterAtom",
    "FilterExpr",
    "FilterMatch",
    "FilterOr",
    "Formula",
    "InRange",
    "InSet",
    "Like",
    "Literal",
    "Neg",
    "Or",
    "PAnd",
    "PNot",
    "POr",
    "Plus",
    "Pred",
    "Prev",
    "Query",
    "Seq",
    "Span",
    "Within",
]


@dataclass(frozen=True)
class Span:
    """Where a node stands in the query text (1-based line/column, 0-based offsets)."""

    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    start: int = 0
    end: int = 0


NO_SPAN = Span()


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)  # type: ignore[no-any-return, unused-ignore]


# ---------------------------------------------------------------- expressions inside X[...]

@dataclass(frozen=True)
class Attr:
    """An attribute of an event: ``var`` None is the event being tested (the variable of the
    enclosing ``X[...]``); a variable name qualifies it (``Y.attr``, a condition between
    events: every event of ``Y`` in the valuation)."""

    name: str
    span: Span = _span()
    var: str | None = None


@dataclass(frozen=True)
class Literal:
    """A number, single-quoted string, boolean or duration (an INTERVAL literal)."""

    value: int | float | str | bool | timedelta
    span: Span = _span()


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Arith:
    """Binary arithmetic: ``op`` is one of ``+ - * / %``."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Prev:
    """``PREV(attr)``: ``attr`` of the previous event of the filtered variable in the
    valuation (not the previous row)."""

    name: str
    span: Span = _span()


#: The aggregate functions, as written (upper case).
AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "FIRST", "LAST")
#: the aggregates that take ``DISTINCT`` (``COUNT(DISTINCT b.country)``)
DISTINCT_AGGREGATES = ("COUNT", "SUM", "AVG")


@dataclass(frozen=True)
class Agg:
    """An aggregate over the events of ``var`` in the valuation: ``COUNT(Y)`` (``attr``
    None) or ``SUM|AVG|MIN|MAX|FIRST|LAST(Y.attr)``; ``distinct``: over the distinct non-NULL
    values of ``attr`` (``COUNT|SUM|AVG(DISTINCT Y.attr)``, see ``DISTINCT_AGGREGATES``)."""

    func: str
    var: str
    attr: str | None = None
    span: Span = _span()
    distinct: bool = False


Expr = Union[Attr, Literal, Neg, Arith, Prev, Agg]


# ---------------------------------------------------------------- predicates inside X[...]

@dataclass(frozen=True)
class Compare:
    """Comparison; ``op`` is normalized to one of ``= != < <= > >=``."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Like:
    """``expr LIKE 'regex'``: regular-expression partial match (RE2 syntax)."""

    expr: Expr
    pattern: str
    span: Span = _span()


@dataclass(frozen=True)
class InSet:
    """``expr IN {v, ...}`` or, with ``negated``, ``expr NOT IN {...}``."""

    expr: Expr
    values: tuple[Literal, ...]
    negated: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class InRange:
    """``expr IN RANGE(lo, hi)``, inclusive at both ends."""

    expr: Expr
    lo: Expr
    hi: Expr
    span: Span = _span()


@dataclass(frozen=True)
class PAnd:
    left: Pred
    right: Pred
    span: Span = _span()


@dataclass(frozen=True)
class POr:
    left: Pred
    right: Pred
    span: Span = _span()


@dataclass(frozen=True)
class PNot:
    operand: Pred
    span: Span = _span()


AtomPred = Union[Compare, Like, InSet, InRange]
Pred = Union[Compare, Like, InSet, InRange, PAnd, POr, PNot]


# ---------------------------------------------------------------- FILTER conditions

@dataclass(frozen=True)
class FilterAtom:
    """``X[P]``: every event bound to ``var`` satisfies ``pred``."""

    var: str
    pred: Pred
    span: Span = _span()


@dataclass(frozen=True)
class FilterAnd:
    left: FilterExpr
    right: FilterExpr
    span: Span = _span()


@dataclass(frozen=True)
class FilterOr:
    left: FilterExpr
    right: FilterExpr
    span: Span = _span()


@dataclass(frozen=True)
class FilterMatch:
    """``[P]``: a match condition, checked once per valuation (aggregates and qualified
    attributes only)."""

    pred: Pred
    span: Span = _span()


FilterExpr = Union[FilterAtom, FilterMatch, FilterAnd, FilterOr]


# ---------------------------------------------------------------- formulas (WHERE)

@dataclass(frozen=True)
class EventType:
    """An event type, optionally qualified by a stream: ``S>SELL``."""

    name: str
    stream: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class As:
    formula: Formula
    var: str
    span: Span = _span()


@dataclass(frozen=True)
class Filter:
    formula: Formula
    cond: FilterExpr
    span: Span = _span()


@dataclass(frozen=True)
class Or:
    left: Formula
    right: Formula
    span: Span = _span()


@dataclass(frozen=True)
class Seq:
    """``left ; right`` or, with ``contiguous``, ``left : right``."""

    left: Formula
    right: Formula
    contiguous: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class Plus:
    """``formula+`` or, with ``contiguous``, ``formula:+``."""

    formula: Formula
    contiguous: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class And:
    """``left AND right`` (conjunction): a valuation of each, on disjoint events, in any
    order; the interval spans both."""

    left: Formula
    right: Formula
    span: Span = _span()


@dataclass(frozen=True)
class Not:
    """``NOT formula`` (negation): no event matching ``formula`` in the gap where it stands.
    ``formula`` is a single-event formula — an event type, ``S>T``, an OR of those — maybe
    named (``NOT (B AS n)``, ``NOT B AS n``: ``As(EventType('B'), 'n')``). Valid only as an
    element of a ``;`` sequence (between two elements, or first/last at the top level with
    WITHIN); a ``;`` chain holding it is a left-nested ``Seq`` like any other, so
    ``A ; NOT B ; C`` is ``Seq(Seq(A, Not(B)), C)`` (see ``walks.seq_elements``)."""

    formula: Formula
    span: Span = _span()


Formula = Union[EventType, As, Filter, Or, Seq, Plus, And, Not]


# ---------------------------------------------------------------- clauses



@dataclass(frozen=True)
class Within:
    """The time bound. ``kind`` is ``events``, ``time`` (``amount`` in seconds) or ``attr``."""

    kind: str
    amount: Fraction
    attr: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Query:
    """A whole CEQL query.

    ``select`` is ``None`` for ``*`` and ``()`` for ``NONE``; ``partition_by`` lists the
    attributes of the one composite key (``[a, b]`` and ``[a], [b]`` both give ``("a", "b")``).
    ``select_spans``, ``stream_spans`` and ``partition_spans`` give the source position of each
    entry of ``select``, ``streams`` and ``partition_by`` (empty when the query was not parsed
    from text); ``limit_span`` that of the LIMIT number. Like every span they take no part in
    equality.
    """

    strategy: str
    select: tuple[str, ...] | None
    streams: tuple[str, ...]
    where: Formula
    partition_by: tuple[str, ...] = ()
    within: Within | None = None
    consume: str = CONSUME_NONE
    limit: int | None = None
    span: Span = _span()
    select_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)
    stream_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)
    partition_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)
    limit_span: Span = _span()
