"""Inert events: those that leave a partition exactly as it is, skipped without touching the tECS.

An event class is *inert* for a partition signature ``(g, active states)`` when it starts no
run, changes no global strategy state, and leaves every active state where it is without
marking or accepting. The answer depends on the signature and the class only, so it is cached;
batches find the next non-inert event with NumPy.
"""

from __future__ import annotations

from ..automata import DFA

__all__ = ["Inertness"]

Signature = tuple[int, frozenset[int]]


class Inertness:
    """Cached inertness of event classes per partition signature."""

    __slots__ = ("dfa", "tables")

    def __init__(self, dfa: DFA) -> None:
        self.dfa = dfa
        self.tables: dict[Signature, dict[int, bool]] = {}

    def clear(self) -> None:
        """Forget every answer (the automaton's caches were reset)."""
        self.tables = {}

    def inert(self, sig: Signature, c: int) -> bool:
        """True when an event of class ``c`` leaves a partition of signature ``sig`` as is."""
        table = self.tables.get(sig)
        if table is None:
            table = self.tables[sig] = {}
        r = table.get(c)
        if r is None:
            dfa = self.dfa
            g, states = sig
            s = dfa.step(dfa.start(g), c)
            r = (s[0] < 0 and not s[1] and s[2] < 0 and not s[3]
                 and dfa.gstep(g, c) == g
                 and all(dfa.is_inert(d, c) for d in states))
            table[c] = r
        return r
