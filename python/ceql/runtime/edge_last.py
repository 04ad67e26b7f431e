"""SELECT LAST with a leading or trailing NOT: Algorithm 1 with runs kept apart by start.

A leading NOT passes a complex event ``[i, j]`` iff no β event lies in ``[key(j) − ε, i)``, a
trailing one iff none lies after ``j`` with a key of at most ``key(i) + ε``: whether it passes
depends only on its start (and end). LAST must pick the last complex event among those that
pass, so the automaton (determinized under ALL) keeps, per state, the chain LAST prefers
**per start** — two runs in one state with one start share their future and their fate
under the NOT, and LAST compares two sets by the largest position in one only, which a common
continuation does not change — and one chain for every start outside the window together:
such complex events are never output but compete (the strategy comes before WITHIN), and they
all pass (no β can lie within ε of both ends). So a state holds at most one chain per start
within the window, plus one; the edge stage (:func:`ceql.runtime.edges.last_chain`, or for a
trailing NOT the choices it keeps per bound on the start) picks among the accepting ones.
Chains are tECS nodes without unions, held as a union-list (sorted by start, latest first),
so snapshots, sweeps and ``oldest_start`` read them as any other.
"""

from __future__ import annotations

from typing import Any

from .algorithm import Runs
from .partitions import Partition
from .tecs import KIND_POS, LABEL, MAX_START, MAX_START_KEY, NEXT, Node

__all__ = ["LastRuns", "NextRuns", "last_prefers", "next_prefers"]


def last_prefers(a: Node, b: Node) -> bool:
    """Whether LAST prefers chain ``a`` to chain ``b`` (no unions in either): the one holding
    the largest position in one only; a chain over the other's positions and more wins."""
    while a is not b:
        na = a[NEXT]
        nb = b[NEXT]
        pa = -1 if na is None else a[KIND_POS]  # a bottom is not itself in D
        pb = -1 if nb is None else b[KIND_POS]
        if pa != pb:
            return pa > pb
        if pa < 0:
            return False  # the same set
        a = na
        b = nb
    return False


def next_prefers(a: Node, b: Node) -> bool:
    """Whether NEXT prefers chain ``a`` to chain ``b`` (no unions in either): the one holding
    the smallest position in one only."""
    pa, pb = _positions(a), _positions(b)
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            return x < y
    return len(pa) > len(pb)  # a set over the other's positions and more wins


def _positions(n: Node) -> list[int]:
    """The positions of a chain, ascending."""
    out = []
    while n[NEXT] is not None:
        out.append(n[KIND_POS])
        n = n[NEXT]
    return out[::-1]


class LastRuns(Runs):
    """:class:`~ceql.runtime.algorithm.Runs` for SELECT LAST with a leading or trailing NOT
    (see the module docstring): no unions, one chain per (state, start within the window), one per
    state for every older start; nothing expires. CONSUME BY is the edge stage's."""

    __slots__ = ()

    def slot(self, n: Node, old: Any) -> Any:
        """The key ``n`` is kept apart by within its state: its start (None if outside)."""
        return None if old is not None and n[MAX_START_KEY] < old else n[MAX_START]

    @staticmethod
    def prefers(a: Node, b: Node) -> bool:
        """Whether the strategy prefers chain ``a`` to ``b``."""
        return last_prefers(a, b)

    def step(self, P: Partition, c: int, pos: int, sub: int, wkey: Any,
             tkey: Any) -> list[Node] | None:
        """Read one event; return the accepting chains (None if none)."""
        dfa = self.dfa
        if dfa.full and self.on_full is not None:
            self.on_full()
        trans = dfa.trans
        eps = self.eps
        old = None if eps is None else wkey - eps  # a start key below it: outside the window
        T2: dict[int, dict[Any, Node]] = {}
        accs: list[Node] = []
        slot = self.slot
        prefers = self.prefers

        def put(q: int, n: Node) -> None:
            slots = T2.get(q)
            if slots is None:
                slots = T2[q] = {}
            k = slot(n, old)
            had = slots.get(k)
            if had is None or prefers(n, had):
                slots[k] = n

        g = P.g
        d = dfa.starts.get(g)
        if d is None:
            d = dfa.start(g)
        q, acc, q2, acc2, lab = trans[d].get(c) or dfa.step(d, c)
        if q >= 0 or acc or q2 >= 0 or acc2:
            b = (sub, wkey, pos, None, tkey)  # a bottom node
            if q >= 0 or acc:
                o = (sub, wkey, pos, b, lab)
                if q >= 0:
                    put(q, o)
                if acc:
                    accs.append(o)
            if q2 >= 0:
                put(q2, b)
            if acc2:
                accs.append(b)
        for p, ul in P.states.items():
            q, acc, q2, acc2, lab = trans[p].get(c) or dfa.step(p, c)
            if q >= 0 or acc:
                for n in ul:
                    o = (n[MAX_START], n[MAX_START_KEY], pos, n, lab)
                    if q >= 0:
                        put(q, o)
                    if acc:
                        accs.append(o)
            if q2 >= 0:
                for n in ul:
                    put(q2, n)
            if acc2:
                accs += ul
        P.states = {q: sorted(slots.values(), key=_latest_first)
                    for q, slots in T2.items()}
        g2 = dfa.gtrans[g].get(c)
        P.g = g2 if g2 is not None else dfa.gstep(g, c)
        P.sig = None
        return accs or None


class NextRuns(LastRuns):
    """:class:`LastRuns` for SELECT NEXT with a leading NOT whose conditions read the match:
    runs are kept apart by start and by which events carry a label in ``reads`` (whether a
    complex event passes depends on nothing else), and per key the chain NEXT prefers is
    kept (a continuation both share changes neither). The read variables are never bound
    under ``+``, so the keys per start are polynomially many."""

    __slots__ = ("reads",)

    def __init__(self, dfa: Any, parts: Any, eps: Any, consume: str,
                 reads: frozenset[str]) -> None:
        super().__init__(dfa, parts, eps, consume)
        self.reads = reads

    def slot(self, n: Node, old: Any) -> Any:
        """Outside the window: None (every such start passes, and NEXT's choice among all
        then starts there); else the start and the positions labelled with ``reads``."""
        if old is not None and n[MAX_START_KEY] < old:
            return None
        reads = self.reads
        bound = []
        x = n
        while x[NEXT] is not None:
            lab = x[LABEL] & reads
            if lab:
                bound.append((x[KIND_POS], lab))
            x = x[NEXT]
        return n[MAX_START], tuple(bound)

    @staticmethod
    def prefers(a: Node, b: Node) -> bool:
        """NEXT's order."""
        return next_prefers(a, b)


def _latest_first(n: Node) -> int:
    return -n[MAX_START]  # type: ignore[no-any-return]
