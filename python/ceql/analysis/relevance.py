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

A ``NOT β`` reads events without marking them: every event of β's types (``S>B``: ``B`` from
``S``) is kept as well, whatever the FILTER conditions on the negated variable say (wider than
needed, never narrower: an event the NOT forbids must reach the engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..automata.cea import CEA
from ..constants import DEFAULT_STREAM_COLUMN, DEFAULT_TYPE_COLUMN, STRATEGY_STRICT, WITHIN_TIME
from ..ir import nodes as N
from ..ir.walks import formula_nodes, has_contiguity
from ..predicates import Atom, AtomTable, GAnd, GAtom, GOr, GTrue, GuardTree, StreamIs, TypeIs

__all__ = ["Compiled", "Relevance", "relevance"]


class Compiled(Protocol):
    """What :func:`relevance` reads of a compiled query (:class:`ceql.Query` is one)."""

    @property
    def ast(self) -> N.Query: ...

    def automaton(self, type_key: str = ..., stream_key: str = ...) -> tuple[AtomTable, CEA]: ...


@dataclass(frozen=True)
class Relevance:
    """``guard`` (over ``atoms``) is TRUE for every event some run can read."""

    guard: GuardTree
    atoms: tuple[Atom, ...]


def relevance(query: Compiled, *, type_key: str = DEFAULT_TYPE_COLUMN,
              stream_key: str = DEFAULT_STREAM_COLUMN) -> Relevance | None:
    """The relevance condition of ``query``, or ``None`` when skipped events can matter.

    ``None`` also when every event is relevant (some marking transition has no guard).
    """
    q = query.ast
    if q.strategy == STRATEGY_STRICT or has_contiguity(q.where):
        return None
    # WITHIN n [attr] also checks that attr never decreases, over every event: keep them all.
    if q.within is not None and q.within.kind != WITHIN_TIME:
        return None
    atoms, cea = query.automaton(type_key, stream_key)
    guards: dict[GuardTree, None] = {}
    for t in cea.transitions:
        if t.mark:
            if isinstance(t.guard, GTrue):
                return None
            guards[t.guard] = None
    if not guards:
        return None
    table = list(atoms.atoms)
    for g in _negated_guards(q.where, table):
        guards[g] = None
    items = tuple(guards)
    return Relevance(items[0] if len(items) == 1 else GOr(items), tuple(table))


def _negated_guards(root: N.Formula, table: list[Atom]) -> list[GuardTree]:
    """A guard for each event type written under a ``NOT`` (with ``StreamIs`` for ``S>T``),
    over ``table``'s atoms; atoms it lacks are appended (the query's own table is not
    touched)."""
    def index(atom: Atom) -> int:
        if atom not in table:
            table.append(atom)
        return table.index(atom)

    out: list[GuardTree] = []
    for node in formula_nodes(root):
        if not isinstance(node, N.Not):
            continue
        for leaf in formula_nodes(node.formula):
            if isinstance(leaf, N.EventType):
                g: GuardTree = GAtom(index(TypeIs(leaf.name)))
                if leaf.stream is not None:
                    g = GAnd((g, GAtom(index(StreamIs(leaf.stream)))))
                out.append(g)
    return out
