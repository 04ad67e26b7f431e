"""Predicates: atoms numbered once per query, guards over them, and the per-event *class*
integers (two bits per atom, SQL's three-valued logic) computed row by row or column-wise."""

from .table import (
    FLIP,
    LIKE_CACHE_SIZE,
    Atom,
    AtomTable,
    GAnd,
    GAtom,
    GNot,
    GOr,
    GTrue,
    GuardTree,
    StreamIs,
    TypeIs,
    guard_fn,
    guard_from_pred,
    tri_state,
)

__all__ = [
    "FLIP",
    "LIKE_CACHE_SIZE",
    "Atom",
    "AtomTable",
    "GAnd",
    "GAtom",
    "GNot",
    "GOr",
    "GTrue",
    "GuardTree",
    "StreamIs",
    "TypeIs",
    "guard_fn",
    "guard_from_pred",
    "tri_state",
]
