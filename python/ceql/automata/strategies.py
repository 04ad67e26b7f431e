"""Selection strategies as run-component constructions for the lazy determinization.

The determinized automaton (:class:`ceql.automata.DFA`) is a subset construction over *run
components*: what a strategy needs to know about one group of runs. A strategy also keeps a
*global state*, shared by every run of a partition, that changes with each event. Both are
plain hashable content (ints, tuples, frozensets of CEA states), so the same query gives the
same components and global states in any process.

* ALL (also ANY and STRICT, whose difference lives in the CEA or in enumeration): a
  component is one CEA state; the global state is ``None`` and never changes.
* NEXT / LAST: the global state ranks the CEA states reachable by any run by the best mark
  string reaching them (the strategy's total order on prefixes, CEL paper Theorem 4): a tuple
  of disjoint sets, best first. A component is ``(g, entry, E)``: ``g`` the global state after
  the run's last event, ``entry`` its rank there, ``E`` the CEA states of runs with one (full,
  projected) mark string. A run survives only in the entry where it is best; a component
  accepts when ``E`` holds a final state and its entry is the best entry holding one.
* MAX: the global state holds the CEA states of every run started earlier; a component is
  ``(E, S, R)``: ``E`` the CEA states of runs with our (full, projected) marks, ``S`` those of
  runs with the same full marks but another projection (split from ours by a SELECT list),
  ``R`` those of runs whose full marks so far are a strict superset of ours. MAX compares full
  marks (the strategy comes before the SELECT projection), so a run in ``S`` that marks an
  event we skip joins ``R``. A component accepts when ``E`` holds a final state and ``R``
  none. (Components saved as ``(E, R)`` by earlier versions read as ``(E, ∅, R)``.)

The pseudo-state ``-1`` stands for "not started yet" (a run that may still start here).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable
from typing import Any, ClassVar, Generic, TypeVar

from ..predicates import guard_fn
from .cea import CEA, Transition

__all__ = [
    "AllStrategy",
    "LastStrategy",
    "MaxStrategy",
    "NextStrategy",
    "Strategy",
    "Successor",
    "strategy_for",
]

G = TypeVar("G", bound=Hashable)
C = TypeVar("C", bound=Hashable)

#: ``(projected mark, successor component, variables binding the event)``
Successor = tuple[bool, C, frozenset[str]]

_Z = -1  # the "not started yet" pseudo-state of NEXT / LAST / MAX
_FRESH = frozenset({_Z})


class Strategy(ABC, Generic[G, C]):
    """What the determinization asks of a selection strategy, over one CEA.

    ``G`` is the type of global states and ``C`` of components; both are hashable, picklable
    content. Caches (see :meth:`clear`) only speed up the answers, which depend on the
    arguments alone.
    """

    #: True when the global state never changes (the evaluator may then skip tracking it).
    constant_global: ClassVar[bool] = False

    def __init__(self, cea: CEA) -> None:
        self.cea = cea
        self.out = cea.outgoing()
        self.finals = cea.finals
        #: CEA states without outgoing transitions: runs there can only have just accepted
        self.deadend = frozenset(q for q in range(cea.n_states) if not self.out[q])
        self._guards: dict[Any, Callable[[int], bool]] = {}

    def moves(self, qs: Iterable[int], c: int) -> list[Transition]:
        """The CEA transitions from states ``qs`` (``-1``: the initial state) allowed by class
        ``c``."""
        out: list[Transition] = []
        guards = self._guards
        for q in qs:
            for t in self.out[0 if q == _Z else q]:
                f = guards.get(t.guard)
                if f is None:
                    f = guards[t.guard] = guard_fn(t.guard)
                if f(c):
                    out.append(t)
        return out

    def clear(self) -> None:
        """Drop the caches keyed by global states (the automaton was reset)."""

    @abstractmethod
    def initial(self) -> G:
        """The global state before any event."""

    @abstractmethod
    def start(self, g: G) -> C:
        """The component of a run that starts at the current event, in global state ``g``."""

    @abstractmethod
    def successors(self, comp: C, c: int) -> list[Successor[C]]:
        """What component ``comp`` becomes on an event of class ``c``, marked or not."""

    @abstractmethod
    def accepts(self, comp: C) -> bool:
        """True when the runs of ``comp`` (just moved) complete a complex event the strategy
        keeps."""

    @abstractmethod
    def strip(self, comp: C) -> C | None:
        """``comp`` without CEA states that can never move again; None when nothing is left."""

    @abstractmethod
    def global_step(self, g: G, c: int) -> G:
        """The global state after an event of class ``c``."""


class AllStrategy(Strategy[None, int]):
    """ALL, ANY and STRICT: a component is one CEA state; no global state."""

    constant_global = True

    def initial(self) -> None:
        return None

    def start(self, g: None) -> int:
        return self.cea.initial

    def successors(self, comp: int, c: int) -> list[Successor[int]]:
        return [(t.pmark, t.dst, t.vars) for t in self.moves((comp,), c)]

    def accepts(self, comp: int) -> bool:
        return comp in self.finals

    def strip(self, comp: int) -> int | None:
        return None if comp in self.deadend else comp

    def global_step(self, g: None, c: int) -> None:
        return None


Ranking = tuple[frozenset[int], ...]
RankedComponent = tuple[Ranking, int, frozenset[int]]


class NextStrategy(Strategy[Ranking, RankedComponent]):
    """NEXT: of two runs, the one that marks at the first event where they differ wins."""

    def __init__(self, cea: CEA) -> None:
        super().__init__(cea)
        self._ranks: dict[tuple[Ranking, int], tuple[Ranking, dict[tuple[int, bool], int]]] = {}

    def order(self, n: int) -> list[tuple[int, bool]]:
        """The (entry, marks now) pairs of ``n`` entries, best first."""
        return [(i, m) for i in range(n) for m in (True, False)]

    def clear(self) -> None:
        self._ranks.clear()

    def rank(self, g: Ranking, c: int) -> tuple[Ranking, dict[tuple[int, bool], int]]:
        """The ranking after class ``c`` and where each (entry, marks now) of ``g`` went."""
        key = (g, c)
        hit = self._ranks.get(key)
        if hit is not None:
            return hit
        seen: set[int] = set()
        new: list[frozenset[int]] = []
        where: dict[tuple[int, bool], int] = {}
        for i, m in self.order(len(g)):
            S = g[i]
            if S == _FRESH:
                qs = {_Z} if not m else {t.dst for t in self.moves(S, c) if t.mark}
            else:
                qs = {t.dst for t in self.moves(S, c) if t.mark == m}
            qs -= seen
            if qs:
                where[(i, m)] = len(new)
                new.append(frozenset(qs))
                seen |= qs
        res = (tuple(new), where)
        self._ranks[key] = res
        return res

    def initial(self) -> Ranking:
        return (_FRESH,)

    def start(self, g: Ranking) -> RankedComponent:
        return (g, len(g) - 1, _FRESH)  # the "not started" entry always ranks last

    def successors(self, comp: RankedComponent, c: int) -> list[Successor[RankedComponent]]:
        g, idx, E = comp
        g2, where = self.rank(g, c)
        fresh = E == _FRESH
        buckets: dict[tuple[int, bool], tuple[set[int], set[str]]] = {}
        for t in self.moves(E, c):
            if fresh and not t.mark:
                continue
            k = where.get((idx, t.mark))
            if k is None or t.dst not in g2[k]:
                continue  # a better-ranked run already holds this state
            b = buckets.setdefault((k, t.pmark), (set(), set()))
            b[0].add(t.dst)
            b[1].update(t.vars)
        return [(pm, (g2, k, frozenset(qs)), frozenset(vs))
                for (k, pm), (qs, vs) in buckets.items()]

    def accepts(self, comp: RankedComponent) -> bool:
        g, idx, E = comp
        if not (E & self.finals):
            return False
        for k, S in enumerate(g):
            if S & self.finals:
                return k == idx
        return False

    def strip(self, comp: RankedComponent) -> RankedComponent | None:
        g, idx, E = comp
        E2 = E - self.deadend
        return (g, idx, E2) if E2 else None

    def global_step(self, g: Ranking, c: int) -> Ranking:
        return self.rank(g, c)[0]


class LastStrategy(NextStrategy):
    """LAST: of two runs, the one that marks at the last event where they differ wins."""

    def order(self, n: int) -> list[tuple[int, bool]]:
        # every marking run beats every skipping one; ties keep the previous ranking
        return [(i, m) for m in (True, False) for i in range(n)]


MaxComponent = tuple[frozenset[int], frozenset[int], frozenset[int]]
_NONE: frozenset[int] = frozenset()


def _max_parts(comp: Any) -> MaxComponent:
    """``comp`` as ``(E, S, R)`` (snapshots of earlier versions hold ``(E, R)``)."""
    return (comp[0], _NONE, comp[1]) if len(comp) == 2 else comp


class MaxStrategy(Strategy[frozenset[int], MaxComponent]):
    """MAX: a complex event is kept unless another one with the same end marks a strict
    superset of its events."""

    def initial(self) -> frozenset[int]:
        return frozenset()

    def start(self, g: frozenset[int]) -> MaxComponent:
        return (_FRESH, _NONE, g)

    def successors(self, comp: MaxComponent, c: int) -> list[Successor[MaxComponent]]:
        E, S, R = _max_parts(comp)
        ts = self.moves(E, c)
        ss = self.moves(S, c)
        rs = self.moves(R, c)
        r_marked = frozenset(t.dst for t in rs if t.mark)
        r_any = frozenset(t.dst for t in rs)
        # runs with our full marks so far (ours and the siblings') that mark this event: a
        # superset of every bucket that skips it
        same_marked = frozenset(t.dst for t in (*ts, *ss) if t.mark)
        buckets: dict[tuple[bool, bool], tuple[set[int], set[str]]] = {}
        for t in ts:
            b = buckets.setdefault((t.mark, t.pmark), (set(), set()))
            b[0].add(t.dst)
            b[1].update(t.vars)
        out: list[Successor[MaxComponent]] = []
        for (m, pm), (qs, vs) in buckets.items():
            # siblings after this event: the same full marks (this event marked as we mark it),
            # another projection
            sib = frozenset(t.dst for t in ss if t.mark == m) | frozenset(
                t.dst for t in ts if t.mark == m and t.pmark != pm)
            out.append((pm, (frozenset(qs), sib, r_marked if m else r_any | same_marked),
                        frozenset(vs)))
        return out

    def accepts(self, comp: MaxComponent) -> bool:
        E, _, R = _max_parts(comp)
        return bool(E & self.finals) and not (R & self.finals)

    def strip(self, comp: MaxComponent) -> MaxComponent | None:
        E, S, R = _max_parts(comp)
        E2 = E - self.deadend
        return (E2, S - self.deadend, R - self.deadend) if E2 else None

    def global_step(self, g: frozenset[int], c: int) -> frozenset[int]:
        return frozenset(t.dst for t in self.moves(g | _FRESH, c)) - self.deadend


_BY_NAME: dict[str, type[Strategy[Any, Any]]] = {
    "ALL": AllStrategy,
    "ANY": AllStrategy,
    "STRICT": AllStrategy,
    "NEXT": NextStrategy,
    "LAST": LastStrategy,
    "MAX": MaxStrategy,
}


def strategy_for(name: str, cea: CEA) -> Strategy[Any, Any]:
    """The construction of selection strategy ``name`` (``ALL``, ``ANY``, …) over ``cea``."""
    cls = _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"unknown selection strategy {name!r}")
    return cls(cea)
