"""Inert events: those that leave a partition exactly as it is, skipped without touching the tECS.

An event class is *inert* for a partition signature ``(g, active states)`` when it starts no
run, changes no global strategy state, and leaves every active state where it is without
marking or accepting. The answer depends on the signature and the class only, so it is cached;
batches find the next non-inert event with NumPy. The cache has a budget (the automaton's
``max_transitions``): over it, it starts afresh, as the automaton does.
"""

from __future__ import annotations

from collections.abc import Callable

from ..automata import DFA

__all__ = ["Inertness", "Signature"]

#: ``(global state, active states)`` of a partition.
Signature = tuple[int, frozenset[int]]


class Inertness:
    """Cached inertness of event classes per partition signature, within a budget.

    ``on_full`` is called (between two events) before an answer is computed while the shared
    automaton is over its budget, so that an evaluation whose events are all inert still lets
    it reset. ``on_new`` (if set) hears of each class an answer is computed for: every class
    met is, at least once.
    """

    __slots__ = ("dfa", "fresh", "on_full", "on_new", "size", "tables")

    def __init__(self, dfa: DFA) -> None:
        self.dfa = dfa
        self.tables: dict[Signature, dict[int, bool]] = {}
        #: answers cached in ``tables``
        self.size = 0
        #: the signature of a partition that has seen nothing (or nothing it kept)
        self.fresh: Signature = (dfa.g0, frozenset())
        self.on_full: Callable[[], None] | None = None
        self.on_new: Callable[[int], None] | None = None

    def clear(self) -> None:
        """Forget every answer (the automaton's caches were reset)."""
        self.tables = {}
        self.size = 0

    def inert(self, sig: Signature, c: int) -> bool:
        """True when an event of class ``c`` leaves a partition of signature ``sig`` as is."""
        table = self.tables.get(sig)
        if table is not None:
            r = table.get(c)
            if r is not None:
                return r
        return self._compute(sig, c)

    def _compute(self, sig: Signature, c: int) -> bool:
        dfa = self.dfa
        if dfa.full and self.on_full is not None:
            self.on_full()  # may clear the tables (and keeps the states of ``sig``: they are held)
        if self.on_new is not None:
            self.on_new(c)
        g, states = sig
        s = dfa.step(dfa.start(g), c)
        r = (s[0] < 0 and not s[1] and s[2] < 0 and not s[3]
             and dfa.gstep(g, c) == g
             and all(dfa.is_inert(d, c) for d in states))
        if self.size >= dfa.max_transitions:
            self.clear()
        table = self.tables.get(sig)
        if table is None:
            table = self.tables[sig] = {}
        table[c] = r
        self.size += 1
        return r
