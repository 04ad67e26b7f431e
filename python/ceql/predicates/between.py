"""Conditions between events: a correlated FILTER leaf compiled to a function of the values it
reads from several events.

A leaf is ``X[P]`` with qualified attributes (``Y.attr``), ``PREV(attr)`` or aggregates, or a
match condition ``[P]``. It is universal: ``P`` must hold for every choice of one event from
each variable it quantifies over (``X`` first, then the qualified variables in name order).
:func:`compile_condition` fixes what each event contributes — a *record*, the tuple of the
attributes ``P`` reads of that variable (for ``X`` followed by its previous event's ``PREV``
attributes) — and gives ``check(records, aggregates, listener)``: the code of ``P`` for one
choice; the evaluation passes its :data:`Listener` while it listens (else None).
Aggregates are values of the whole valuation (:func:`aggregate`), folded from the events'
values as they come (:func:`agg_start`, :func:`agg_step`).

Values follow the model of :mod:`.values` (the row path's): NULL, kinds, 3-valued results.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ir import expr_nodes
from ..ir import nodes as N
from .atoms import norm_op
from .mixing import mixes
from .row import like_matcher
from .values import (
    FALSE,
    NOT3,
    PY_CMP,
    TRUE,
    UNKNOWN,
    InSetSpec,
    and3,
    arith,
    cmp3,
    is_num,
    kind,
    neg,
    norm,
)

__all__ = [
    "AggSpec",
    "Condition",
    "Listener",
    "agg_spec",
    "agg_start",
    "agg_step",
    "aggregate",
    "compile_condition",
]

#: ``(func, var, attr)`` of one aggregate (``attr`` None for COUNT; ``func`` ends with
#: `` DISTINCT`` for ``COUNT|SUM|AVG(DISTINCT y.attr)``).
AggSpec = tuple[str, str, str | None]
#: Hears of one comparison ``node`` of a condition that meets the values ``a`` and ``b`` of
#: kinds that never compare, or two strings in order (``<``, ``>``...): ``(node, a, b)``.
Listener = Callable[[Any, Any, Any], None]
_Recs = tuple[tuple[Any, ...], ...]
_Val = Callable[[_Recs, tuple[Any, ...]], Any]
_Code = Callable[[_Recs, tuple[Any, ...], Listener | None], int]


@dataclass(frozen=True)
class Condition:
    """One correlated FILTER leaf, compiled.

    ``quantified`` are the variables a choice takes one event from (``var`` first when the
    leaf is ``X[P]``); ``attrs[i]`` the attributes read of ``quantified[i]``'s event (its
    record); ``prev`` the ``PREV`` attributes (appended to ``X``'s record, which exists only
    for an event with a previous one); ``aggs`` the aggregates, whose values
    ``check`` takes in this order. ``deferred`` leaves (with aggregates) are decided once the
    valuation is complete; the others as soon as each choice's last event is read.
    """

    leaf: N.FilterAtom | N.FilterMatch
    var: str | None
    quantified: tuple[str, ...]
    attrs: tuple[tuple[str, ...], ...]
    prev: tuple[str, ...]
    aggs: tuple[AggSpec, ...]
    check: _Code

    @property
    def deferred(self) -> bool:
        return bool(self.aggs)


def agg_spec(e: N.Agg) -> AggSpec:
    """The :data:`AggSpec` of an aggregate node."""
    return (f"{e.func} DISTINCT" if e.distinct else e.func, e.var, e.attr)


def compile_condition(leaf: N.FilterAtom | N.FilterMatch) -> Condition:
    """Compile one correlated leaf."""
    var = leaf.var if isinstance(leaf, N.FilterAtom) else None
    others: set[str] = set()
    own: dict[str, None] = {}
    prev: dict[str, None] = {}
    qual: dict[str, dict[str, None]] = {}
    aggs: dict[AggSpec, None] = {}
    for e in expr_nodes(leaf.pred):
        if isinstance(e, N.Attr):
            if e.var is None or e.var == var:
                own.setdefault(e.name)
            else:
                others.add(e.var)
                qual.setdefault(e.var, {}).setdefault(e.name)
        elif isinstance(e, N.Prev):
            prev.setdefault(e.name)
        elif isinstance(e, N.Agg):
            aggs.setdefault(agg_spec(e))
    quantified = ((var,) if var is not None else ()) + tuple(sorted(others))
    attrs = tuple((tuple(own) if v == var else tuple(qual[v])) for v in quantified)
    agg_list = tuple(aggs)
    index = {v: i for i, v in enumerate(quantified)}
    slots = {v: {a: k for k, a in enumerate(attrs[i])} for i, v in enumerate(quantified)}
    prev_at = {a: len(attrs[0]) + k for k, a in enumerate(prev)} if var is not None else {}
    agg_at = {s: k for k, s in enumerate(agg_list)}

    def leaf_value(e: N.Expr) -> _Val:
        if isinstance(e, N.Literal):
            c = norm(e.value)
            return lambda recs, av: c
        if isinstance(e, N.Attr):
            v = var if e.var is None else e.var
            i, k = index[v], slots[v][e.name]  # type: ignore[index]
            return lambda recs, av: recs[i][k]
        if isinstance(e, N.Prev):
            k = prev_at[e.name]
            return lambda recs, av: recs[0][k]
        if isinstance(e, N.Agg):
            k = agg_at[agg_spec(e)]
            return lambda recs, av: av[k]
        if isinstance(e, N.Neg):
            f = leaf_value(e.operand)
            return lambda recs, av: neg(f(recs, av))
        if isinstance(e, N.Arith):
            fl, fr, op = leaf_value(e.left), leaf_value(e.right), e.op
            return lambda recs, av: arith(op, fl(recs, av), fr(recs, av))
        raise TypeError(f"not an expression: {e!r}")

    def code(p: N.Pred) -> _Code:
        if isinstance(p, N.Compare):
            fl, fr, op = leaf_value(p.left), leaf_value(p.right), norm_op(p.op)
            pyop = PY_CMP[op]
            ordered = op not in ("=", "!=")
            node = p

            def compare(recs: _Recs, av: tuple[Any, ...], hear: Listener | None) -> int:
                a, b = fl(recs, av), fr(recs, av)
                t = type(a)
                if t is type(b) and (t is int or t is float or t is str):
                    if t is str and ordered and hear is not None:
                        hear(node, a, b)  # text order: numbers held as text?
                    return TRUE if pyop(a, b) else FALSE
                if type(b) is not t and hear is not None and mixes(a, b):
                    hear(node, a, b)
                return cmp3(op, a, b)
            return compare
        if isinstance(p, N.InRange):
            fx, flo, fhi = leaf_value(p.expr), leaf_value(p.lo), leaf_value(p.hi)

            def in_range(recs: _Recs, av: tuple[Any, ...], hear: Listener | None) -> int:
                x = fx(recs, av)
                return and3(cmp3(">=", x, flo(recs, av)), cmp3("<=", x, fhi(recs, av)))
            return in_range
        if isinstance(p, N.InSet):
            fx, spec, negated = leaf_value(p.expr), InSetSpec(p.values), p.negated

            def in_set(recs: _Recs, av: tuple[Any, ...], hear: Listener | None) -> int:
                c = spec.row_code(fx(recs, av))
                return NOT3[c] if negated else c
            return in_set
        if isinstance(p, N.Like):
            fx, matcher = leaf_value(p.expr), like_matcher(p.pattern)

            def like(recs: _Recs, av: tuple[Any, ...], hear: Listener | None) -> int:
                x = fx(recs, av)
                return matcher(x) if isinstance(x, str) else UNKNOWN
            return like
        if isinstance(p, N.PAnd):
            cl, cr = code(p.left), code(p.right)
            return lambda recs, av, hear: and3(cl(recs, av, hear), cr(recs, av, hear))
        if isinstance(p, N.POr):
            cl, cr = code(p.left), code(p.right)

            def or3(recs: _Recs, av: tuple[Any, ...], hear: Listener | None) -> int:
                a, b = cl(recs, av, hear), cr(recs, av, hear)
                if a == TRUE or b == TRUE:
                    return TRUE
                return FALSE if a == FALSE and b == FALSE else UNKNOWN
            return or3
        if isinstance(p, N.PNot):
            c = code(p.operand)
            return lambda recs, av, hear: NOT3[c(recs, av, hear)]
        raise TypeError(f"not a predicate: {p!r}")

    return Condition(leaf, var, quantified, attrs, tuple(prev), agg_list, code(leaf.pred))


# ---------------------------------------------------------------- aggregates, folded

# An accumulator per aggregate, a small tuple (hashable, so runs with equal ones merge):
# COUNT (n,); SUM (total or None when a value is not a number,); AVG (total, n);
# MIN/MAX (value, state) with state 0 nothing yet, 1 values of one kind, 2 mixed kinds;
# FIRST (seen, value); LAST (value,); COUNT|SUM|AVG DISTINCT (the frozenset of the distinct
# non-NULL values, each as (kind, value) so that TRUE and 1 stay two values).

def agg_start(func: str) -> tuple[Any, ...]:
    """The accumulator of ``func`` over no event."""
    if func.endswith(" DISTINCT"):
        return (frozenset(),)
    if func == "COUNT":
        return (0,)
    if func == "SUM":
        return (0, 0)
    if func == "AVG":
        return (0, 0)
    if func in ("MIN", "MAX"):
        return (None, 0)
    if func == "FIRST":
        return (False, None)
    return (None,)


def agg_step(func: str, acc: tuple[Any, ...], value: Any) -> tuple[Any, ...]:
    """``acc`` after one more event whose (normalized) attribute value is ``value``."""
    if func.endswith(" DISTINCT"):
        if value is None:
            return acc
        try:
            item = (kind(value), value)
            hash(item)
        except TypeError:  # an unhashable value (a list): told apart by its text
            item = (kind(value), repr(value))
        return acc if item in acc[0] else (acc[0] | {item},)
    if func == "COUNT":
        return (acc[0] + 1,)
    if func == "FIRST":
        return acc if acc[0] else (True, value)
    if func == "LAST":
        return (value,)
    if value is None:
        return acc
    if func in ("SUM", "AVG"):
        total, n = acc
        if total is None or not is_num(value):
            return (None, n + 1)
        return (total + value, n + 1)
    best, state = acc
    if state == 2:
        return acc
    if state == 0:
        return (value, 1)
    if kind(value) != kind(best):
        return (None, 2)
    try:
        better = value < best if func == "MIN" else value > best
    except TypeError:  # values of one kind that do not compare (e.g. K_OTHER)
        return (None, 2)
    return (value, 1) if better else acc


def aggregate(func: str, acc: tuple[Any, ...]) -> Any:
    """The value of an aggregate from its accumulator (None = NULL)."""
    if func.endswith(" DISTINCT"):
        values = [v for _, v in acc[0]]
        if func == "COUNT DISTINCT":
            return len(values)
        if not values or not all(is_num(v) for v in values):
            return None
        # a set has no order: fsum's correctly rounded total does not depend on one
        total = sum(values) if all(type(v) is int for v in values) else math.fsum(values)
        return total if func == "SUM DISTINCT" else arith("/", total, len(values))
    if func == "COUNT":
        return acc[0]
    if func == "SUM":
        return acc[0] if acc[1] else None
    if func == "AVG":
        total, n = acc
        return arith("/", total, n) if n and total is not None else None
    if func in ("MIN", "MAX"):
        return acc[0] if acc[1] == 1 else None
    if func == "FIRST":
        return acc[1]
    return acc[0]
