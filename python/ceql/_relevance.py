"""Which events can matter to a query: the condition an event must meet to move any run.

Every transition of the CEA that reads an event into a complex event (a *marking* transition)
carries a guard; the only other transitions are the ``TRUE`` self-loops that skip an event.
An event that satisfies no marking guard is skipped by every run, so it is never in ``D`` and
never the ``i`` or ``j`` of a complex event. Where the query's meaning never counts skipped
events — no contiguity (``:``, ``:+``), no ``STRICT``, no ``WITHIN n EVENTS`` — and its window
reads the time of ``i`` and ``j`` only, dropping such events before evaluation changes no output.
A time window must read a real time attribute: without one, times are positions, which
dropping events changes. Adapters use :func:`relevance` to filter rows early (the Spark
adapter, which always has a time column: before the shuffle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import _ast
from ._predicates import Atom, GOr, GTrue, GuardTree

if TYPE_CHECKING:
    from ._query import Query

__all__ = ["Relevance", "relevance"]


@dataclass(frozen=True)
class Relevance:
    """``guard`` (over ``atoms``) is TRUE for every event some run can read."""

    guard: GuardTree
    atoms: tuple[Atom, ...]


def relevance(query: Query, *, type_key: str = "type",
              stream_key: str = "stream") -> Relevance | None:
    """The relevance condition of ``query``, or ``None`` when skipped events can matter.

    ``None`` also when every event is relevant (some marking transition has no guard).
    """
    q = query.ast
    if q.strategy == "STRICT" or _has_contiguity(q.where):
        return None
    # WITHIN n [attr] also checks that attr never decreases, over every event: keep them all.
    if q.within is not None and q.within.kind != "time":
        return None
    atoms, cea = query._automaton_parts(type_key, stream_key)
    guards: dict[GuardTree, None] = {}
    for t in cea.transitions:
        if t.mark:
            if isinstance(t.guard, GTrue):
                return None
            guards[t.guard] = None
    if not guards:
        return None
    items = tuple(guards)
    return Relevance(items[0] if len(items) == 1 else GOr(items), atoms.atoms)


def _has_contiguity(f: _ast.Formula) -> bool:
    todo: list[_ast.Formula] = [f]
    while todo:
        node = todo.pop()
        if isinstance(node, _ast.Seq):
            if node.contiguous:
                return True
            todo += (node.left, node.right)
        elif isinstance(node, _ast.Plus):
            if node.contiguous:
                return True
            todo.append(node.formula)
        elif isinstance(node, _ast.Or):
            todo += (node.left, node.right)
        elif isinstance(node, (_ast.As, _ast.Filter)):
            todo.append(node.formula)
    return False
