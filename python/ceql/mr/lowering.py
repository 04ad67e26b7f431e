"""A MATCH_RECOGNIZE row pattern (the front end's syntax tree) as a pattern of
:mod:`ceql.runtime.leftmost`, the Pike machine that finds preferred matches."""

from __future__ import annotations

from ..frontends.mr import ast as A
from ..runtime import leftmost as L

__all__ = ["lower"]


def lower(p: A.Pattern) -> L.Pattern:
    """``p`` in the matcher's terms (the same preferment, node for node)."""
    if isinstance(p, A.PatternVar):
        return L.Var(p.name)
    if isinstance(p, A.EmptyPattern):
        return L.Concat(())
    if isinstance(p, A.Anchor):
        return L.Anchor(p.kind == "^")
    if isinstance(p, A.Concatenation):
        return L.Concat(tuple(lower(q) for q in p.items))
    if isinstance(p, A.Alternation):
        return L.Alt(tuple(lower(q) for q in p.items))
    if isinstance(p, A.Permute):
        return L.Permute(tuple(lower(q) for q in p.items))
    if isinstance(p, A.Exclusion):
        return L.Exclude(lower(p.item))
    return L.Quant(lower(p.item), p.low, p.high, p.greedy)
