"""Implied partition keys: equalities between events that are a PARTITION BY in disguise.

``A AS a ; B AS b FILTER b[user = a.user]`` ties every event of every match to one value of
``user``, so evaluating it per ``user`` gives exactly the same complex events (SEMANTICS.md:
PARTITION BY keeps the events with equal non-NULL values, and a NULL fails the equality). The
planned query then partitions by ``user`` — a hash lookup per event instead of a register per
run, and in Spark the shuffle key that spreads the query over the cluster — and drops the
equalities it implies.

It is sound only where partitioning cannot change anything else: no ``:``/``:+``, STRICT or
``WITHIN n EVENTS`` (they count the substream's positions), no CONSUME BY (it crosses
partitions), the equalities are plain conjuncts of a FILTER on the whole pattern, they connect
variables that every valuation binds, and every event of the pattern belongs to one of those
variables. A ``NOT`` looks at events no variable of the match holds: the key holds only when
every NOT is named and tied to the key the same way (``A AS a ; NOT B AS n ; C AS c FILTER
n[user = a.user] AND c[user = a.user]``: the events it forbids share the match's ``user``, so
the substream holds all of them); an unnamed ``NOT B`` forbids a ``B`` of any user, which
partitioning would hide, so it leaves no implied key.

NaN: PARTITION BY groups NaN with NaN (as SQL's GROUP BY does), but ``X[k = Y.k]`` is unknown
on NaN (a NaN compares as NULL). So an implied key puts an event with NaN there in no
partition (``Partitions.nan_null``), and with an explicit ``PARTITION BY [k]`` the equalities
``X[k = Y.k]`` are kept: in the substream of NaN they fail.
"""

from __future__ import annotations

import dataclasses

from ..constants import CONSUME_NONE, WITHIN_EVENTS
from ..ir import formula_nodes, has_contiguity
from ..ir import nodes as N

__all__ = ["equality_attr", "implied_key", "planned"]


def equality_attr(leaf: N.FilterAtom) -> tuple[str, str] | None:
    """``(attr, Y)`` when ``leaf`` is ``X[attr = Y.attr]`` (either side) with ``Y`` not ``X``."""
    p = leaf.pred
    if not isinstance(p, N.Compare) or p.op != "=":
        return None
    sides = (p.left, p.right)
    if not all(isinstance(s, N.Attr) for s in sides):
        return None
    a, b = sides
    assert isinstance(a, N.Attr) and isinstance(b, N.Attr)
    if a.name != b.name:
        return None
    own = [s for s in (a, b) if s.var is None or s.var == leaf.var]
    other = [s for s in (a, b) if s.var is not None and s.var != leaf.var]
    if len(own) != 1 or len(other) != 1:
        return None
    return a.name, other[0].var  # type: ignore[return-value]


def _always(f: N.Formula) -> frozenset[str]:
    """The variables every valuation of ``f`` binds (non-empty)."""
    if isinstance(f, N.EventType):
        names = {f.name} | ({f"{f.stream}>{f.name}"} if f.stream is not None else set())
        return frozenset(names)
    if isinstance(f, N.As):
        return _always(f.formula) | {f.var}
    if isinstance(f, N.Seq | N.And):
        return _always(f.left) | _always(f.right)
    if isinstance(f, N.Or):
        return _always(f.left) & _always(f.right)
    if isinstance(f, N.Not):  # its events are in no valuation
        return frozenset()
    return _always(f.formula)  # Plus, Filter


def _leaf_names(root: N.Formula) -> list[frozenset[str]]:
    """For every event-type leaf outside every NOT (the events a match can hold), the
    variables that bind it."""
    out: list[frozenset[str]] = []
    todo: list[tuple[N.Formula, frozenset[str]]] = [(root, frozenset())]
    while todo:
        f, names = todo.pop()
        if isinstance(f, N.EventType):
            own = {f.name} | ({f"{f.stream}>{f.name}"} if f.stream is not None else set())
            out.append(names | own)
        elif isinstance(f, N.As):
            todo.append((f.formula, names | {f.var}))
        elif isinstance(f, N.Seq | N.Or | N.And):
            todo += [(f.left, names), (f.right, names)]
        elif isinstance(f, N.Plus | N.Filter):
            todo.append((f.formula, names))
    return out


def _negation_names(root: N.Formula) -> list[str | None]:
    """The AS name of every NOT of ``root`` (None for an unnamed one)."""
    return [n.formula.var if isinstance(n.formula, N.As) else None
            for n in formula_nodes(root) if isinstance(n, N.Not)]


def _conjuncts(c: N.FilterExpr) -> list[N.FilterExpr]:
    if isinstance(c, N.FilterAnd):
        return _conjuncts(c.left) + _conjuncts(c.right)
    return [c]


def _find(parent: dict[str, str], x: str) -> str:
    """The representative of ``x`` (union-find)."""
    while parent.setdefault(x, x) != x:
        x = parent[x]
    return x


def implied_key(q: N.Query) -> tuple[str, list[N.FilterAtom]] | None:
    """The attribute the query's equalities make a partition key, and those equalities; None
    when there is none (see the module docstring)."""
    if (q.strategy == "STRICT" or q.consume != CONSUME_NONE or has_contiguity(q.where)
            or (q.within is not None and q.within.kind == WITHIN_EVENTS)):
        return None
    # the FILTERs on the whole pattern: the root and the FILTERs directly under it
    tops: list[N.Filter] = []
    f = q.where
    while isinstance(f, N.Filter):
        tops.append(f)
        f = f.formula
    if not tops:
        return None
    body = f
    always = _always(body)
    leaves = _leaf_names(body)
    negations = _negation_names(body)
    if None in negations:  # an unnamed NOT forbids events of every key
        return None
    negated = set(negations) - always
    edges: dict[str, list[tuple[str, str, N.FilterAtom]]] = {}
    # each negated name's equalities: (attr, the variable it equals) → atoms
    ties: dict[tuple[str, str], dict[str, list[N.FilterAtom]]] = {}
    for top in tops:
        for c in _conjuncts(top.cond):
            if isinstance(c, N.FilterAtom):
                eq = equality_attr(c)
                if eq is not None and c.var in always and eq[1] in always:
                    edges.setdefault(eq[0], []).append((c.var, eq[1], c))
                elif eq is not None and c.var in negated and eq[1] in always:
                    ties.setdefault(eq, {}).setdefault(c.var, []).append(c)
    for attr in sorted(edges):
        es = edges[attr]
        parent: dict[str, str] = {}
        for x, y, _ in es:
            parent[_find(parent, x)] = _find(parent, y)
        roots = {_find(parent, x) for x, _, _ in es}
        for r in sorted(roots):
            comp = {v for v in parent if _find(parent, v) == r}
            if not all(names & comp for names in leaves):
                continue
            tied: dict[str, list[N.FilterAtom]] = {}
            for (tie_attr, y), atoms in ties.items():
                if tie_attr == attr and y in comp:
                    for n, cs in atoms.items():
                        tied.setdefault(n, []).extend(cs)
            if all(n in tied for n in negations):
                return attr, [c for x, _, c in es if _find(parent, x) == r] + [
                    c for cs in tied.values() for c in cs]
    return None


def planned(q: N.Query) -> N.Query:
    """The query as evaluated: an implied partition key added to PARTITION BY, and the
    equalities a partition key makes true dropped."""
    key = implied_key(q)
    if key is None or key[0] in q.partition_by:
        return q
    attr, atoms = key
    drop = {id(a) for a in atoms}
    where = _without(q.where, drop)
    return dataclasses.replace(q, where=where, partition_by=(*q.partition_by, attr))


def _without(root: N.Formula, drop: set[int]) -> N.Formula:
    """``root`` with the FILTER atoms ``drop`` (ids) removed from plain conjunctions."""
    def cond(c: N.FilterExpr) -> N.FilterExpr | None:
        if isinstance(c, N.FilterAnd):
            left, right = cond(c.left), cond(c.right)
            if left is None or right is None:
                return left if right is None else right
            return dataclasses.replace(c, left=left, right=right)
        return None if id(c) in drop else c

    def walk(f: N.Formula) -> N.Formula:
        if isinstance(f, N.Filter):
            inner = walk(f.formula)
            c = cond(f.cond)
            return inner if c is None else dataclasses.replace(f, formula=inner, cond=c)
        if isinstance(f, N.As | N.Plus | N.Not):
            return dataclasses.replace(f, formula=walk(f.formula))
        if isinstance(f, N.Seq | N.Or | N.And):
            return dataclasses.replace(f, left=walk(f.left), right=walk(f.right))
        return f
    return walk(root)
