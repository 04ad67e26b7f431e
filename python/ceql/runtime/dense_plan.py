"""Which queries the chain engines evaluate — the dense engine (:mod:`ceql.runtime.dense`, a
``:`` chain) and the join engine (:mod:`ceql.runtime.joins`, a chain with ``;``) — and their
chain: read off the automaton, so that :func:`~ceql.runtime.engine.choose` can decide without
the engines."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, NamedTuple

from ..automata import CEA, Transition
from ..constants import CONSUME_NONE, STRATEGY_ALL, STRATEGY_ANY, WITHIN_EVENTS, WITHIN_TIME
from ..ir import expr_nodes, formula_nodes
from ..ir import nodes as N
from ..predicates.between import Listener, compile_condition
from ..predicates.guards import GAtom, GTrue, guard_fn

__all__ = ["ChainPlan", "Cond", "dense_plan", "join_plan"]


class Cond(NamedTuple):
    """One condition between the chain's events."""

    pred: N.Pred
    var: str  #: the variable in whose brackets it stands (plain attributes are its)
    check: Callable[[tuple[tuple[Any, ...], ...], tuple[Any, ...], Listener | None], int]
    #: per choice of one event per quantified variable: the element of each variable
    choices: tuple[tuple[int, ...], ...]
    #: per quantified variable, the index of each attribute of its record in a row's values
    slots: tuple[tuple[int, ...], ...]
    #: whether it compares numeric columns and numbers only (:func:`_vector`)
    vector: bool
    quantified: tuple[str, ...]


class ChainPlan(NamedTuple):
    """A chain of ``k`` single events joined by ``:`` and ``;``, read off its automaton."""

    k: int
    guards: tuple[Callable[[int], bool], ...]  #: per element, its guard on a class
    marked: tuple[int, ...]  #: the elements in a match's positions (the SELECT list's)
    labels: tuple[frozenset[str], ...]  #: their variables
    conds: tuple[Cond, ...]
    attrs: tuple[str, ...]  #: the attributes the conditions read (a row's values)
    #: per step from element ``i`` to ``i + 1``: True for ``;`` (any events between), False
    #: for ``:`` (the next event of the substream)
    gaps: tuple[bool, ...]
    #: per element, its alternatives' guards and variables: one, or for ``(A OR B) AS x``
    #: one per type, which no event is of two of (``labels`` holds the first's variables)
    alts: tuple[tuple[tuple[Callable[[int], bool], frozenset[str]], ...], ...]


def dense_plan(plan: N.Query, cea: CEA) -> ChainPlan | None:
    """The chain of ``plan`` (the query with its implied key) if the dense engine evaluates
    it, else None: a ``:`` chain (:func:`chain_plan`), CONSUME BY NONE, LIMIT absent or at
    least 1; any strategy, SELECT list, PARTITION BY and WITHIN."""
    chain = chain_plan(plan, cea)
    if chain is None or any(chain.gaps) or plan.consume != CONSUME_NONE or any(
            len(a) > 1 for a in chain.alts) or (plan.limit is not None and plan.limit < 1):
        return None
    return chain


def join_plan(plan: N.Query, cea: CEA) -> ChainPlan | None:
    """The chain of ``plan`` if the join engine evaluates it, else None: a chain with at
    least one ``;`` (:func:`chain_plan`) under ALL or ANY (every complex event kept), no
    LIMIT and a WITHIN in time or events (which bounds the rows a match can reach back to),
    that either has conditions between its events (under CONSUME BY NONE), or is a chain of
    bare types — no FILTER at all: every event of a type is a candidate, so the tECS's
    prefilter would skip nothing — under CONSUME BY NONE, or ANY or PARTITION with only ``;``
    (an end's latest start, found greedily, decides whether it outputs)."""
    chain = chain_plan(plan, cea)
    w = plan.within
    if (chain is None or not any(chain.gaps)
            or plan.strategy not in (STRATEGY_ALL, STRATEGY_ANY) or plan.limit is not None
            or w is None or w.kind not in (WITHIN_TIME, WITHIN_EVENTS)):
        return None
    if cea.scopes:
        return chain if plan.consume == CONSUME_NONE else None
    if any(isinstance(f, N.Filter) for f in formula_nodes(plan.where)):
        return None
    return chain if plan.consume == CONSUME_NONE or all(chain.gaps) else None


def chain_plan(plan: N.Query, cea: CEA) -> ChainPlan | None:
    """The chain of ``plan`` (the query with its implied key), or None when it is not one.

    It is one when the automaton is one path ``q0 → q1 → … → qk`` (one transition into and
    out of each state, only ``qk`` final), each ``qi`` with ``0 < i < k`` at most with an
    unmarked self-loop on every event (a ``;`` gap): a chain of single events joined by
    ``:`` and ``;``, with neither ``+``, ``:+``, AND nor NOT, nor OR between elements but
    bare types (``(BUY OR SELL) AS b``, without conditions between events: parallel
    transitions, each on its own type); every transition binds its event, and each condition
    between events is a FILTER atom without ``PREV`` or aggregates.
    """
    if (cea.leading is not None or cea.trailing is not None or cea.edge_rank or cea.edge_last
            or cea.edge_next):
        return None
    out = cea.outgoing()
    types = frozenset(f.name for f in formula_nodes(plan.where) if isinstance(f, N.EventType))
    chain = []
    alts: list[tuple[tuple[Callable[[int], bool], frozenset[str]], ...]] = []
    gaps: list[bool] = []
    loops = 0
    q = 0
    seen = {0}
    while out[q]:
        step = [t for t in out[q] if t.dst != q]
        loop = [t for t in out[q] if t.dst == q]
        if not step or len(loop) > 1 or (loop and (
                q == 0 or loop[0].mark or loop[0].kills or loop[0].scopes
                or not isinstance(loop[0].guard, GTrue))):
            return None
        if q:
            gaps.append(bool(loop))
        loops += len(loop)
        t = step[0]
        if t.dst in seen or not t.mark or t.kills or (len(step) > 1 and not _exclusive(
                step, types, bool(cea.scopes))):
            return None
        seen.add(t.dst)
        chain.append(t)
        alts.append(tuple((guard_fn(u.guard), u.vars) for u in step))
        loops += len(step) - 1
        q = t.dst
    k = len(chain)
    if k == 0 or len(seen) != cea.n_states or cea.finals != frozenset({q}) or len(
            cea.transitions) != k + loops:
        return None
    # which elements each variable of each scope binds
    bound: dict[int, dict[str, list[int]]] = {}
    for i, t in enumerate(chain):
        for s, vs in t.scopes:
            for v in vs:
                bound.setdefault(s, {}).setdefault(v, []).append(i)
    attrs: dict[str, int] = {}
    conds = []
    for s, leaves in enumerate(cea.scopes):
        for leaf in leaves:
            if not isinstance(leaf, N.FilterAtom) or any(
                    isinstance(e, N.Prev | N.Agg) for e in expr_nodes(leaf.pred)):
                return None
            c = compile_condition(leaf)
            if c.prev or c.aggs:
                return None
            elems = [bound.get(s, {}).get(v, []) for v in c.quantified]
            if any(not e for e in elems):
                continue  # a variable binds no event: the condition holds
            slots = tuple(tuple(attrs.setdefault(a, len(attrs)) for a in c.attrs[i])
                          for i in range(len(c.quantified)))
            conds.append(Cond(leaf.pred, leaf.var, c.check,
                              tuple(itertools.product(*elems)), slots, _vector(leaf.pred),
                              c.quantified))
    marked = tuple(i for i, t in enumerate(chain) if t.pmark)
    return ChainPlan(k, tuple(_any_of(a) for a in alts), marked,
                     tuple(chain[i].vars for i in marked), tuple(conds), tuple(attrs),
                     tuple(gaps), tuple(alts))


def _exclusive(step: list[Transition], types: frozenset[str], scoped: bool) -> bool:
    """Whether parallel transitions ``step`` are one element ``(A OR B) AS x``: the same
    target and marks, each guard one atom of its own bare type (so no event takes two), and
    no conditions between events."""
    t = step[0]
    names = [u.vars & types for u in step]
    return (not scoped and all(
        u.dst == t.dst and u.mark and u.pmark == t.pmark and not u.kills and not u.scopes
        and isinstance(u.guard, GAtom) and u.vars - types == t.vars - types for u in step)
        and all(len(n) == 1 for n in names) and len(set().union(*names)) == len(step)
        and len({u.guard.k for u in step if isinstance(u.guard, GAtom)}) == len(step))


def _any_of(alts: tuple[tuple[Callable[[int], bool], frozenset[str]], ...]
            ) -> Callable[[int], bool]:
    """The guard of an element: one of its alternatives'."""
    if len(alts) == 1:
        return alts[0][0]
    fns = tuple(g for g, _ in alts)
    return lambda c: any(g(c) for g in fns)


def _vector(p: N.Pred) -> bool:
    """Whether ``p`` is comparisons of attributes and number literals under AND, OR and NOT
    (evaluated on arrays where the columns are numbers)."""
    todo = [p]
    while todo:
        x = todo.pop()
        if isinstance(x, N.PAnd | N.POr):
            todo += (x.left, x.right)
        elif isinstance(x, N.PNot):
            todo.append(x.operand)
        elif isinstance(x, N.Compare):
            for e in (x.left, x.right):
                if not (isinstance(e, N.Attr) or (
                        isinstance(e, N.Literal) and type(e.value) in (int, float))):
                    return False
        else:
            return False
    return True
