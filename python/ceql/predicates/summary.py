"""Which records of a variable a universal condition between events needs.

A condition between events holds when ``P`` holds for *every* choice of one event per variable
it quantifies over, so a variable that binds several events (``(cart AS c)+``) contributes
its records as a set. When ``P`` is a conjunction of comparisons, each comparison mentioning
the variable ``v`` on one side only, the set can be cut to a few records without changing the
answer for any partner: for ``f(v) > g(…)`` every record passes iff the one with the smallest
``f`` does; for ``<`` the largest; for ``=`` one value, or two different values (then no
partner can equal both). A record whose ``f`` is NULL (or a value nothing compares with)
fails every partner on its own, so it alone is kept.

:func:`record_reducer` gives, per quantified variable of a compiled condition, a function
``reduce(kept, new) → kept'`` (or None when no such cut is exact). ``kept'`` depends only on
``kept`` and ``new`` and keeps the earliest record among equals, so two runs whose sets have the
same summary hold equal registers and merge (they are indistinguishable for the future); the
number of distinct summaries grows with the number of events, not the number of subsets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir import chain_operands, expr_nodes
from ..ir import nodes as N
from .atoms import norm_op
from .between import Condition
from .values import (
    K_BOOL,
    K_DATE,
    K_DT,
    K_DTZ,
    K_DUR,
    K_NUM,
    K_OTHER,
    K_STR,
    arith,
    kind,
    neg,
    norm,
)

__all__ = ["Reducer", "record_reducer"]

#: ``reduce(kept records, new record) → kept records`` of one variable of one condition.
Reducer = Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]]
_Rec = tuple[Any, ...]
_Fn = Callable[[_Rec], Any]

#: kinds whose values of one kind are totally ordered (a smallest and a largest exist)
_ORDERED = frozenset({K_NUM, K_STR, K_BOOL, K_DT, K_DTZ, K_DATE, K_DUR})
#: the extreme a comparison with the variable's side on the left needs: ``f > g`` for every
#: record iff the smallest ``f`` passes
_RULE = {">": "min", ">=": "min", "<": "max", "<=": "max", "=": "eq"}
_FLIPPED = {"min": "max", "max": "min", "eq": "eq"}


def _reads(e: N.Expr, own: str | None) -> set[str | None] | None:
    """The variables expression ``e`` reads (None: ``own``'s unqualified attributes), or None
    when it reads something other than attributes and literals (PREV, an aggregate)."""
    found: set[str | None] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, N.Attr):
            found.add(own if x.var is None else x.var)
        elif isinstance(x, N.Neg):
            todo.append(x.operand)
        elif isinstance(x, N.Arith):
            todo += [x.left, x.right]
        elif not isinstance(x, N.Literal):
            return None  # PREV, an aggregate
    return found


def _value(e: N.Expr, slots: dict[str, int]) -> _Fn:
    """``e`` (reading only one variable's attributes, at ``slots`` of its record) as a
    function of that record, with the value model of :mod:`.between`."""
    if isinstance(e, N.Literal):
        c = norm(e.value)
        return lambda r: c
    if isinstance(e, N.Attr):
        k = slots[e.name]
        return lambda r: r[k]
    if isinstance(e, N.Neg):
        f = _value(e.operand, slots)
        return lambda r: neg(f(r))
    if isinstance(e, N.Arith):
        fl, fr, op = _value(e.left, slots), _value(e.right, slots), e.op
        return lambda r: arith(op, fl(r), fr(r))
    raise TypeError(f"not a summarizable expression: {e!r}")


def _conjuncts(p: N.Pred) -> list[N.Pred]:
    return chain_operands(p, N.PAnd)


def _parts(c: Condition, v: str) -> list[tuple[str, _Fn]] | None:
    """Per conjunct of ``c`` that mentions ``v``: the extreme it needs and ``v``'s side as a
    function of ``v``'s record; None when a conjunct is not such a comparison."""
    own = c.var
    slots = {a: k for k, a in enumerate(c.attrs[c.quantified.index(v)])}
    parts: list[tuple[str, _Fn]] = []
    for p in _conjuncts(c.leaf.pred):
        if isinstance(p, N.Compare):
            try:
                op = norm_op(p.op)
            except ValueError:
                return None
            left, right = _reads(p.left, own), _reads(p.right, own)
            if left is None or right is None:
                return None
            if v not in left and v not in right:
                continue
            rule = _RULE.get(op)
            if rule is None:
                return None
            if left == {v} and v not in right:
                parts.append((rule, _value(p.left, slots)))
            elif right == {v} and v not in left:
                parts.append((_FLIPPED[rule], _value(p.right, slots)))
            else:
                return None
            continue
        reads: set[str | None] = set()
        for x in expr_nodes(p):
            if isinstance(x, N.Attr):
                reads.add(own if x.var is None else x.var)
            elif isinstance(x, (N.Prev, N.Agg)):
                return None
        if v in reads:
            return None
    return parts


def record_reducer(c: Condition, v: str) -> Reducer | None:
    """How the records of ``v`` (a quantified variable of ``c``) can be cut exactly, or None
    (the condition is deferred, reads ``PREV``, or is not a conjunction of comparisons with
    ``v`` alone on one side)."""
    if c.deferred or c.prev or v not in c.quantified:
        return None
    parts = _parts(c, v)
    if not parts:
        return None

    def reduce(kept: tuple[Any, ...], new: _Rec) -> tuple[Any, ...]:
        recs = (*kept, new)
        keep: list[bool] = [False] * len(recs)
        for rule, f in parts:
            vals = [f(r) for r in recs]
            for i, x in enumerate(vals):
                if x is None or kind(x) == K_OTHER:  # fails every partner: alone enough
                    return (recs[i],)
                if rule != "eq" and kind(x) not in _ORDERED:
                    keep[i] = True  # compared as is
            if rule == "eq":
                first = vals[0]
                j = next((i for i in range(1, len(recs)) if not _same(first, vals[i])), 0)
                keep[0] = True
                keep[j] = True
                continue
            best: dict[int, int] = {}
            for i, x in enumerate(vals):
                kx = kind(x)
                if kx not in _ORDERED:
                    continue
                b = best.get(kx)
                if b is None or (x < vals[b] if rule == "min" else x > vals[b]):
                    best[kx] = i
            for i in best.values():
                keep[i] = True
        if all(keep):
            return recs
        return tuple(r for r, k in zip(recs, keep, strict=True) if k)
    return reduce


def _same(a: Any, b: Any) -> bool:
    """Whether ``a = b`` holds (then a partner equals both or neither)."""
    try:
        return kind(a) == kind(b) and bool(a == b)
    except TypeError:
        return False
