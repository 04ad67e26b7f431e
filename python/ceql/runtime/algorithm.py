"""CORE's Algorithm 1: read one event of one partition, update its active states and tECS.

Per partition the active deterministic states live in an insertion-ordered dict
(state → union-list). For each active state ``p`` and the event's class ``c``, the
determinized automaton gives a marked and an unmarked target (and whether each accepts): the
marked target gets a new output node over the merged union-list of ``p``, the unmarked target
the union-list itself. Union-lists whose runs all started outside the window are skipped, and
expired union nodes are cut through the partition's FIFO, so memory stays bounded by the window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..automata import DFA
from ..constants import CONSUME_ANY, CONSUME_NONE
from .partitions import Partition, Partitions
from .tecs import MAX_START, MAX_START_KEY, RIGHT, Node, insert, merge

__all__ = ["Runs"]


class Runs:
    """Algorithm 1 for one query over the partitions of one evaluation.

    ``eps`` is the window bound in window-key units (None: no WITHIN); ``consume`` the
    CONSUME BY policy (``NONE``, ``ANY``, ``PARTITION``).
    """

    __slots__ = ("consume", "dfa", "eps", "on_full", "parts")

    def __init__(self, dfa: DFA, parts: Partitions, eps: Any, consume: str) -> None:
        self.dfa = dfa
        self.parts = parts
        self.eps = eps
        self.consume = consume
        #: called between two events when the shared automaton's cache is over its budget
        self.on_full: Callable[[], None] | None = None

    def step(self, P: Partition, c: int, pos: int, sub: int, wkey: Any,
             tkey: Any) -> list[Node] | None:
        """Read one event; return the accepting tECS nodes to enumerate (None if none)."""
        dfa = self.dfa
        if dfa.full and self.on_full is not None:
            self.on_full()  # a safe point: every partition is between two events
        trans = dfa.trans
        eps = self.eps
        fifo = P.fifo
        if P.epoch != self.parts.epoch:  # CONSUME BY ANY fired in another partition
            P.states = {}
            P.epoch = self.parts.epoch
            if fifo:
                fifo.clear()  # nothing in it is reachable any more
        if fifo:
            lim = wkey - eps
            while fifo and fifo[0][0] < lim:
                fifo.popleft()[1][RIGHT] = None
        T2: dict[int, list[Node]] = {}
        accs: list[Node] | None = None
        g = P.g
        d = dfa.starts.get(g)
        if d is None:
            d = dfa.start(g)
        # a Step: (marked target, marked accepts, unmarked target, unmarked accepts, label)
        q, acc, q2, acc2, lab = trans[d].get(c) or dfa.step(d, c)
        o: Any
        if q >= 0 or acc or q2 >= 0 or acc2:
            b = (sub, wkey, pos, None, tkey)  # a bottom node
            if q >= 0 or acc:
                o = (sub, wkey, pos, b, lab)  # an output node
                if q >= 0:
                    T2[q] = [o]
                if acc:
                    accs = [o]
            if q2 >= 0:
                t = T2.get(q2)
                if t is None:
                    T2[q2] = [b]
                else:
                    insert(t, b, fifo, wkey)
            if acc2:
                if accs is None:
                    accs = [b]
                else:
                    accs.append(b)
        for p, ul in P.states.items():
            if eps is not None:
                if wkey - ul[0][MAX_START_KEY] > eps:
                    continue
                while wkey - ul[-1][MAX_START_KEY] > eps:
                    ul.pop()
            q, acc, q2, acc2, lab = trans[p].get(c) or dfa.step(p, c)
            n = None
            if q >= 0 or acc:
                if len(ul) == 1:
                    n = ul[0]
                elif len(ul) == 2:  # merge() of two, inlined: a union [mx, mt, -1, left, right]
                    n = ul[0]
                    n = [n[MAX_START], n[MAX_START_KEY], -1, n, ul[1]]
                    if fifo is not None:
                        fifo.append((wkey, n))
                else:
                    n = merge(ul, fifo, wkey)
                o = (n[MAX_START], n[MAX_START_KEY], pos, n, lab)
                if q >= 0:
                    t = T2.get(q)
                    if t is None:
                        T2[q] = [o]
                    elif len(t) == 1:  # what insert() does with a one-node list
                        t.append(o)
                    else:
                        insert(t, o, fifo, wkey)
                if acc:
                    if accs is None:
                        accs = [o]
                    else:
                        accs.append(o)
            if q2 >= 0 or acc2:
                t = T2.get(q2) if q2 >= 0 else None
                if acc2 or t is not None:
                    if n is None:
                        n = ul[0] if len(ul) == 1 else merge(ul, fifo, wkey)
                    if acc2:
                        if accs is None:
                            accs = [n]
                        else:
                            accs.append(n)
                if q2 >= 0:
                    if t is None:
                        T2[q2] = ul
                    elif len(t) == 1:
                        t.append(n)
                    else:
                        insert(t, n, fifo, wkey)
        P.states = T2
        g2 = dfa.gtrans[g].get(c)
        P.g = g2 if g2 is not None else dfa.gstep(g, c)
        P.sig = None
        if accs is None:
            return None
        if eps is not None:
            accs = [a for a in accs if wkey - a[MAX_START_KEY] <= eps]
            if not accs:
                return None
        if self.consume != CONSUME_NONE:  # decided before LIMIT cuts, and before enumerating
            P.states = {}
            if fifo:
                fifo.clear()
            if self.consume == CONSUME_ANY:
                self.parts.epoch += 1
                P.epoch = self.parts.epoch
        return accs
