"""Conditions on negated events written in another variable's brackets, moved into the
negated variable's own.

SEMANTICS.md: an atom mentioning a negated variable ``n`` (of ``NOT β AS n``) may stand in any
variable's brackets and is a condition on the events the NOT forbids — ``c[price > n.price]``
is ``n[c.price > price]``: both quantify over the same choices (one event of ``c``, ``n``
bound to the β event). The engine evaluates conditions on ``n`` in ``n[…]`` form, so
:func:`moved_negated_atoms` rewrites them (keeping each atom's span for messages). An atom
that uses ``PREV`` of its own variable stays where it is (``PREV`` means that variable's
previous event); the automaton reads its negated variable from its quantified variables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..ir import expr_nodes, formula_nodes, negated_variables
from ..ir import nodes as N

__all__ = ["moved_negated_atoms"]


def moved_negated_atoms(q: N.Query) -> N.Query:
    """``q`` with every FILTER atom ``X[P]`` whose ``P`` reads a negated variable ``n``
    (``X`` not negated, no ``PREV``) written as ``n[P']``; ``q`` itself when there is none."""
    negated = set(negated_variables(q.where))
    if not negated:
        return q
    moved: dict[int, N.FilterAtom] = {}
    for node in formula_nodes(q.where):
        if isinstance(node, N.Filter):
            for leaf in _atoms(node.cond):
                new = _moved(leaf, negated)
                if new is not None:
                    moved[id(leaf)] = new
    if not moved:
        return q
    return dataclasses.replace(q, where=_formula(q.where, moved))


def _atoms(c: N.FilterExpr) -> list[N.FilterAtom]:
    if isinstance(c, N.FilterAnd | N.FilterOr):
        return _atoms(c.left) + _atoms(c.right)
    return [c] if isinstance(c, N.FilterAtom) else []


def _moved(leaf: N.FilterAtom, negated: set[str]) -> N.FilterAtom | None:
    if leaf.var in negated:
        return None
    names = {e.var for e in _exprs(leaf.pred) if isinstance(e, N.Attr) and e.var in negated}
    if len(names) != 1 or any(isinstance(e, N.Prev) for e in _exprs(leaf.pred)):
        return None
    (n,) = names
    head = leaf.var

    def expr(e: N.Expr) -> N.Expr:
        if isinstance(e, N.Attr):
            owner = e.var or head
            return N.Attr(e.name, e.span) if owner == n else N.Attr(e.name, e.span, owner)
        if isinstance(e, N.Arith):
            return dataclasses.replace(e, left=expr(e.left), right=expr(e.right))
        if isinstance(e, N.Neg):
            return dataclasses.replace(e, operand=expr(e.operand))
        return e

    return N.FilterAtom(n, _pred(leaf.pred, expr), leaf.span)


def _pred(p: N.Pred, f: Callable[[N.Expr], N.Expr]) -> N.Pred:
    """``p`` with ``f`` applied to each of its expressions."""
    if isinstance(p, N.Compare):
        return dataclasses.replace(p, left=f(p.left), right=f(p.right))
    if isinstance(p, N.InRange):
        return dataclasses.replace(p, expr=f(p.expr), lo=f(p.lo), hi=f(p.hi))
    if isinstance(p, N.InSet | N.Like):
        return dataclasses.replace(p, expr=f(p.expr))
    if isinstance(p, N.PAnd | N.POr):
        return dataclasses.replace(p, left=_pred(p.left, f), right=_pred(p.right, f))
    if isinstance(p, N.PNot):
        return dataclasses.replace(p, operand=_pred(p.operand, f))
    raise TypeError(f"not a predicate: {p!r}")


def _exprs(p: N.Pred) -> list[N.Expr]:
    return list(expr_nodes(p))


def _cond(c: N.FilterExpr, moved: dict[int, N.FilterAtom]) -> N.FilterExpr:
    if isinstance(c, N.FilterAnd | N.FilterOr):
        return dataclasses.replace(c, left=_cond(c.left, moved), right=_cond(c.right, moved))
    return moved.get(id(c), c)


def _formula(f: N.Formula, moved: dict[int, N.FilterAtom]) -> N.Formula:
    if isinstance(f, N.Filter):
        return dataclasses.replace(f, formula=_formula(f.formula, moved),
                                   cond=_cond(f.cond, moved))
    if isinstance(f, N.As | N.Plus | N.Not):
        return dataclasses.replace(f, formula=_formula(f.formula, moved))
    if isinstance(f, N.Seq | N.Or | N.And):
        return dataclasses.replace(f, left=_formula(f.left, moved),
                                   right=_formula(f.right, moved))
    return f
