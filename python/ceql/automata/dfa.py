"""Selection strategies and on-the-fly I/O-determinization of a CEA.

The evaluator sees a deterministic automaton whose states are small integers:

* ``start(g)`` — the state a run starting at the current event is in;
* ``step(d, c)`` — for state ``d`` and event class ``c`` a tuple
  ``(marked_target, marked_accepts, unmarked_target, unmarked_accepts, label)``, targets
  being ``-1`` when the run dies; ``label`` indexes ``labels`` (the variables of the marked
  event);
* ``gstep(g, c)`` — the strategy's global state after the event (constant for ALL/ANY/STRICT).

Determinization is a subset construction over *run components*, computed lazily and cached
per (state, class). A component is what a strategy needs to know about one group of runs:

* ALL / ANY / STRICT: one CEA state.
* NEXT / LAST: ``(g, entry, E)``. ``g`` ranks the CEA states reachable by any run by the best
  mark string reaching them (the strategy's total order on prefixes, CEL paper Theorem 4); a run
  survives only in the entry where it is best. ``E`` are the CEA states of runs with one
  (full, projected) mark string. A component accepts when ``E`` holds a final state and its
  entry is the best entry holding one.
* MAX: ``(E, R)``: ``R`` are the CEA states of runs whose marks so far are a strict superset of
  ours. A component accepts when ``E`` holds a final state and ``R`` none.

Accepting is decided before components that cannot move any more (CEA states without
outgoing transitions) are dropped, so finished runs leave the active set at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..errors import CeqlResourceError
from ..predicates import guard_fn
from .cea import CEA, Transition

__all__ = ["DFA", "Step"]

Step = tuple[int, bool, int, bool, int]
_Z = -1  # the "not started yet" pseudo-state of NEXT / LAST / MAX


class DFA:
    """Lazily determinized automaton for one query (not thread-safe; one per evaluator)."""

    def __init__(self, cea: CEA, strategy: str, max_states: int) -> None:
        self.cea = cea
        self.strategy = "ALL" if strategy in ("ANY", "STRICT") else strategy
        self.max_states = max_states
        self.out = cea.outgoing()
        self.finals = cea.finals
        self.deadend = frozenset(q for q in range(cea.n_states) if not self.out[q])
        self._guards: dict[Any, Callable[[int], bool]] = {}
        # interned DFA states: id -> frozenset of components
        self.states: list[frozenset[Hashable]] = []
        self._ids: dict[frozenset[Hashable], int] = {}
        self.trans: list[dict[int, Step]] = []
        self.labels: list[frozenset[str]] = [frozenset()]
        self._label_ids: dict[frozenset[str], int] = {frozenset(): 0}
        # global strategy states
        self.globals: list[Any] = []
        self._gids: dict[Any, int] = {}
        self._gtrans: list[dict[int, int]] = []
        self._starts: dict[int, int] = {}
        self._nexts: dict[tuple[int, int], tuple[Any, dict[tuple[int, bool], int]]] = {}
        init: Any
        if self.strategy in ("NEXT", "LAST"):
            init = (frozenset({_Z}),)
        elif self.strategy == "MAX":
            init = frozenset()
        else:
            init = None
        self.g0 = self._gid(init)

    # ------------------------------------------------------------------ interning
    def _gid(self, g: Any) -> int:
        k = self._gids.get(g)
        if k is None:
            k = len(self.globals)
            self._gids[g] = k
            self.globals.append(g)
            self._gtrans.append({})
            self._check_cap()
        return k

    def _sid(self, comps: frozenset[Hashable]) -> int:
        if not comps:
            return -1
        k = self._ids.get(comps)
        if k is None:
            k = len(self.states)
            self._ids[comps] = k
            self.states.append(comps)
            self.trans.append({})
            self._check_cap()
        return k

    def _check_cap(self) -> None:
        if len(self.states) + len(self.globals) > self.max_states:
            raise CeqlResourceError(
                f"The query needs more than {self.max_states} determinized automaton states "
                "on this stream: raise max_states (ceql.compile(..., max_states=N)) or simplify "
                "the query (fewer alternatives or nested iterations, or a plainer selection "
                "strategy than MAX)."
            )

    def _lid(self, vs: frozenset[str]) -> int:
        k = self._label_ids.get(vs)
        if k is None:
            k = len(self.labels)
            self._label_ids[vs] = k
            self.labels.append(vs)
        return k

    def _sat(self, t: Transition, c: int) -> bool:
        f = self._guards.get(t.guard)
        if f is None:
            f = self._guards[t.guard] = guard_fn(t.guard)
        return f(c)

    def _succ(self, qs: frozenset[int] | set[int], c: int) -> list[Transition]:
        out: list[Transition] = []
        for q in qs:
            src = 0 if q == _Z else q
            for t in self.out[src]:
                if self._sat(t, c):
                    out.append(t)
        return out

    # ------------------------------------------------------------------ public steps
    def start(self, g: int) -> int:
        """The state of a run that starts at the current event, given global state ``g``."""
        d = self._starts.get(g)
        if d is None:
            comp: Hashable
            if self.strategy in ("NEXT", "LAST"):
                entries = self.globals[g]
                comp = (g, len(entries) - 1, frozenset({_Z}))
            elif self.strategy == "MAX":
                comp = (frozenset({_Z}), self.globals[g])
            else:
                comp = 0
            d = self._sid(frozenset({comp}))
            self._starts[g] = d
        return d

    def gstep(self, g: int, c: int) -> int:
        """The strategy's global state after an event of class ``c``."""
        r = self._gtrans[g].get(c)
        if r is None:
            if self.strategy in ("NEXT", "LAST"):
                r = self._gid(self._rank(g, c)[0])
            elif self.strategy == "MAX":
                old = self.globals[g] | {_Z}
                r = self._gid(frozenset(t.dst for t in self._succ(old, c)) - self.deadend)
            else:
                r = g
            self._gtrans[g][c] = r
        return r

    def step(self, d: int, c: int) -> Step:
        """Targets of state ``d`` on class ``c`` (cached)."""
        r = self.trans[d].get(c)
        if r is None:
            r = self.trans[d][c] = self._compute(d, c)
        return r

    def is_inert(self, d: int, c: int) -> bool:
        """True when class ``c`` leaves state ``d`` unchanged without marking or accepting."""
        r = self.step(d, c)
        return r[0] < 0 and not r[1] and r[2] == d and not r[3]

    # ------------------------------------------------------------------ construction
    def _compute(self, d: int, c: int) -> Step:
        succ: dict[bool, set[Hashable]] = {True: set(), False: set()}
        acc = {True: False, False: False}
        label: set[str] = set()
        for comp in self.states[d]:
            for pm, comp2, vs in self._comp_succ(comp, c):
                if pm:
                    label |= vs
                if self._accepts(comp2):
                    acc[pm] = True
                live = self._strip(comp2)
                if live is not None:
                    succ[pm].add(live)
        return (
            self._sid(frozenset(succ[True])),
            acc[True],
            self._sid(frozenset(succ[False])),
            acc[False],
            self._lid(frozenset(label)),
        )

    def _comp_succ(self, comp: Any, c: int) -> list[tuple[bool, Hashable, frozenset[str]]]:
        s = self.strategy
        res: list[tuple[bool, Hashable, frozenset[str]]] = []
        if s == "ALL":
            for t in self._succ({comp}, c):
                res.append((t.pmark, t.dst, t.vars))
            return res
        if s in ("NEXT", "LAST"):
            g, idx, E = comp
            g2, where = self._rank(g, c)
            buckets: dict[tuple[int, bool], tuple[set[int], set[str]]] = {}
            for t in self._succ(E, c):
                if comp[2] == frozenset({_Z}) and not t.mark:
                    continue
                k = where.get((idx, t.mark))
                if k is None or t.dst not in g2[k]:
                    continue  # a better-ranked run already holds this state
                b = buckets.setdefault((k, t.pmark), (set(), set()))
                b[0].add(t.dst)
                b[1].update(t.vars)
            g2id = self._gid(g2)
            for (k, pm), (qs, vs) in buckets.items():
                res.append((pm, (g2id, k, frozenset(qs)), frozenset(vs)))
            return res
        # MAX
        E, R = comp
        ts = self._succ(E, c)
        rs = self._succ(R, c)
        r_marked = frozenset(t.dst for t in rs if t.mark)
        r_any = frozenset(t.dst for t in rs)
        e_marked = frozenset(t.dst for t in ts if t.mark)
        mbuckets: dict[tuple[bool, bool], tuple[set[int], set[str]]] = {}
        for t in ts:
            b = mbuckets.setdefault((t.mark, t.pmark), (set(), set()))
            b[0].add(t.dst)
            b[1].update(t.vars)
        for (m, pm), (qs, vs) in mbuckets.items():
            r2 = r_marked if m else r_any | e_marked
            res.append((pm, (frozenset(qs), r2), frozenset(vs)))
        return res

    def _rank(self, g: int, c: int) -> tuple[Any, dict[tuple[int, bool], int]]:
        """NEXT/LAST: the ranked entries after class ``c`` and where each (entry, mark) went."""
        key = (g, c)
        hit = self._nexts.get(key)
        if hit is not None:
            return hit
        entries = self.globals[g]
        order: list[tuple[int, bool]]
        if self.strategy == "NEXT":  # first difference decides: marking now beats skipping
            order = [(i, m) for i in range(len(entries)) for m in (True, False)]
        else:  # LAST: last difference decides: every marking run beats every skipping one
            order = [(i, m) for m in (True, False) for i in range(len(entries))]
        seen: set[int] = set()
        new: list[frozenset[int]] = []
        where: dict[tuple[int, bool], int] = {}
        for i, m in order:
            S = entries[i]
            if S == frozenset({_Z}):
                qs = {_Z} if not m else {t.dst for t in self._succ(S, c) if t.mark}
            else:
                qs = {t.dst for t in self._succ(S, c) if t.mark == m}
            qs -= seen
            if qs:
                where[(i, m)] = len(new)
                new.append(frozenset(qs))
                seen |= qs
        res = (tuple(new), where)
        self._nexts[key] = res
        return res

    def _accepts(self, comp: Any) -> bool:
        s = self.strategy
        if s == "ALL":
            return comp in self.finals
        if s in ("NEXT", "LAST"):
            g, idx, E = comp
            if not (E & self.finals):
                return False
            for k, S in enumerate(self.globals[g]):
                if S & self.finals:
                    return bool(k == idx)
            return False
        E, R = comp
        return bool(E & self.finals) and not (R & self.finals)

    def _strip(self, comp: Any) -> Hashable | None:
        """Drop CEA states that can never move again; None when nothing is left."""
        s = self.strategy
        if s == "ALL":
            return None if comp in self.deadend else comp
        if s in ("NEXT", "LAST"):
            g, idx, E = comp
            E2 = E - self.deadend
            if not E2:
                return None
            return (g, idx, E2)
        E, R = comp
        E2 = E - self.deadend
        return (E2, R - self.deadend) if E2 else None
