"""On-the-fly I/O-determinization of a CEA under a selection strategy, as a bounded cache.

The evaluator sees a deterministic automaton whose states are integer ids:

* ``start(g)`` — the state a run starting at the current event is in, in global state ``g``;
* ``step(d, c)`` — for state ``d`` and event class ``c`` a :data:`Step`
  ``(marked_target, marked_accepts, unmarked_target, unmarked_accepts, label)``, targets
  being ``-1`` when the run dies; ``label`` is the (interned) frozenset of the variables the
  marked event binds;
* ``gstep(g, c)`` — the strategy's global state after the event (constant when
  ``constant_global``).

A state is a frozenset of run components and a global state is strategy content (see
:mod:`ceql.automata.strategies`); :meth:`DFA.state_key` / :meth:`DFA.state_id` (and
``global_key`` / ``global_id``) translate between ids and this content, which is the same for
the same query in any process. Transitions are computed lazily (subset construction over
components) and cached per (state, class).

The DFA is a cache shared by the evaluators of one thread, bounded RE2-style: ids are never
reused; once more than ``max_states`` states and global states were created, or more than
``max_transitions`` transitions cached (:data:`MAX_TRANSITIONS`; a query over many atoms meets
up to ``2**atoms`` event classes), since the last reset, ``full`` is set, and an evaluator calls
:meth:`DFA.collect` between two events. That keeps the states the attached evaluators still
hold (same ids, same content), drops the rest and every cached transition, and tells the
evaluators to drop what they derived. It fails only a query that alone holds ``max_states``
states at once.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Hashable, Iterable
from typing import Any, Protocol

from ..errors import CeqlResourceError
from .cea import CEA
from .strategies import Strategy, strategy_for

__all__ = ["DFA", "MAX_TRANSITIONS", "DFAOwner", "Step"]

#: Cached transitions (state × event class, global state × class) an automaton keeps before a
#: reset, read when it is built; each evaluator's inertness answers get the same budget. An
#: entry costs about 100 bytes.
MAX_TRANSITIONS = 1 << 18

#: ``(marked_target, marked_accepts, unmarked_target, unmarked_accepts, label)``
Step = tuple[int, bool, int, bool, frozenset[str]]

_EMPTY: frozenset[str] = frozenset()


class DFAOwner(Protocol):
    """An evaluator sharing a :class:`DFA` (see :meth:`DFA.attach`)."""

    def dfa_in_use(self) -> tuple[Iterable[int], Iterable[int]]:
        """The state ids and global state ids it holds."""
        ...

    def dfa_was_reset(self) -> None:
        """The DFA dropped its caches: drop whatever was derived from them."""
        ...


class DFA:
    """Lazily determinized automaton for one query; a bounded cache (not thread-safe).

    Read-only fast caches, for hot loops (a miss means "call the method"; each is mutated in
    place, never replaced, so a reference to it stays valid across :meth:`collect`):

    * ``trans[d].get(c)`` — the cached :meth:`step` (``trans`` has an entry per live state);
    * ``starts.get(g)`` — the cached :meth:`start`;
    * ``gtrans[g].get(c)`` — the cached :meth:`gstep` (an entry per live global state).

    ``max_transitions`` (default :data:`MAX_TRANSITIONS`) bounds the entries of ``trans`` and
    ``gtrans`` (:attr:`cached`) between two resets.
    """

    def __init__(self, cea: CEA, strategy: str, max_states: int,
                 max_transitions: int | None = None) -> None:
        self.cea = cea
        #: the selection strategy's name, as in the query
        self.strategy = strategy
        #: the strategy's construction
        self.policy: Strategy[Any, Any] = strategy_for(strategy, cea)
        #: True when the global state never changes (always ``g0``)
        self.constant_global: bool = self.policy.constant_global
        self.max_states = max_states
        #: the budget of cached transitions (see :attr:`cached`)
        self.max_transitions = MAX_TRANSITIONS if max_transitions is None else max_transitions
        #: transitions cached in ``trans`` and ``gtrans`` since the last reset
        self.cached = 0
        #: set when the cache went over budget; the owner should call :meth:`collect`
        self.full = False
        self.trans: dict[int, dict[int, Step]] = {}
        self.starts: dict[int, int] = {}
        self.gtrans: dict[int, dict[int, int]] = {}
        self._states: dict[int, frozenset[Hashable]] = {}
        self._ids: dict[frozenset[Hashable], int] = {}
        self._globals: dict[int, Hashable] = {}
        self._gids: dict[Hashable, int] = {}
        self._labels: dict[frozenset[str], frozenset[str]] = {_EMPTY: _EMPTY}
        self._next_state = itertools.count()
        self._next_global = itertools.count()
        self._limit = max_states  # the cache is full above this size
        self._owners: dict[int, weakref.ref[DFAOwner]] = {}
        #: the global state before any event (kept across resets)
        self.g0 = self.global_id(self.policy.initial())

    # ------------------------------------------------------------------ content and ids
    @property
    def size(self) -> int:
        """How many states and global states the cache holds now."""
        return len(self._states) + len(self._globals)

    def state_key(self, d: int) -> Hashable:
        """The content of state ``d``: picklable, equal for the same query in any process."""
        return self._states[d]

    def state_id(self, key: Hashable) -> int:
        """The id of the state with content ``key`` (interned if new; ``-1`` for the empty
        state)."""
        if not isinstance(key, frozenset):
            raise TypeError(f"not a DFA state key: {key!r}")
        return self._sid(key)

    def global_key(self, g: int) -> Hashable:
        """The content of global state ``g``: picklable, equal in any process."""
        return self._globals[g]

    def global_id(self, key: Hashable) -> int:
        """The id of the global state with content ``key`` (interned if new)."""
        k = self._gids.get(key)
        if k is None:
            k = next(self._next_global)
            self._gids[key] = k
            self._globals[k] = key
            self.gtrans[k] = {}
            self._grew()
        return k

    def _sid(self, key: frozenset[Hashable]) -> int:
        if not key:
            return -1
        k = self._ids.get(key)
        if k is None:
            k = next(self._next_state)
            self._ids[key] = k
            self._states[k] = key
            self.trans[k] = {}
            self._grew()
        return k

    def _grew(self) -> None:
        if len(self._states) + len(self._globals) > self._limit:
            self.full = True

    def _label(self, vs: frozenset[str]) -> frozenset[str]:
        return self._labels.setdefault(vs, vs)

    # ------------------------------------------------------------------ steps
    def start(self, g: int) -> int:
        """The state of a run that starts at the current event, given global state ``g``."""
        d = self.starts.get(g)
        if d is None:
            d = self._sid(frozenset({self.policy.start(self._globals[g])}))
            self.starts[g] = d
        return d

    def gstep(self, g: int, c: int) -> int:
        """The strategy's global state after an event of class ``c``."""
        r = self.gtrans[g].get(c)
        if r is None:
            r = self.global_id(self.policy.global_step(self._globals[g], c))
            self.gtrans[g][c] = r
            self._cache_grew()
        return r

    def step(self, d: int, c: int) -> Step:
        """Targets of state ``d`` on class ``c`` (cached in ``trans``)."""
        r = self.trans[d].get(c)
        if r is None:
            r = self._compute(d, c)
            self.trans[d][c] = r
            self._cache_grew()
        return r

    def _cache_grew(self) -> None:
        self.cached += 1
        if self.cached > self.max_transitions:
            self.full = True

    def is_inert(self, d: int, c: int) -> bool:
        """True when class ``c`` leaves state ``d`` unchanged without marking or accepting."""
        r = self.step(d, c)
        return r[0] < 0 and not r[1] and r[2] == d and not r[3]

    def _compute(self, d: int, c: int) -> Step:
        # Acceptance is decided before dead-end CEA states are stripped, so finished runs
        # leave the active set at once.
        pol = self.policy
        marked: set[Hashable] = set()
        unmarked: set[Hashable] = set()
        acc_m = acc_u = False
        label: set[str] = set()
        for comp in self._states[d]:
            for pm, comp2, vs in pol.successors(comp, c):
                live = pol.strip(comp2)
                if pm:
                    label |= vs
                    acc_m = acc_m or pol.accepts(comp2)
                    if live is not None:
                        marked.add(live)
                else:
                    acc_u = acc_u or pol.accepts(comp2)
                    if live is not None:
                        unmarked.add(live)
        return (self._sid(frozenset(marked)), acc_m, self._sid(frozenset(unmarked)), acc_u,
                self._label(frozenset(label)))

    # ------------------------------------------------------------------ the bounded cache
    def attach(self, owner: DFAOwner) -> None:
        """Register ``owner`` (weakly): :meth:`collect` keeps what it holds and tells it of
        resets."""
        key = id(owner)
        owners = self._owners

        def gone(ref: weakref.ref[DFAOwner]) -> None:
            if owners.get(key) is ref:
                del owners[key]

        old = owners.get(key)
        if old is None or old() is not owner:
            owners[key] = weakref.ref(owner, gone)

    def collect(self, owner: DFAOwner) -> None:
        """Reset the cache, keeping what live attached owners (and ``owner``) hold.

        Call it between two events (when ``full``). Kept states and global states keep their
        ids and content; every other one is dropped, every cached transition is cleared, and
        each owner's ``dfa_was_reset`` is called. The budget then counts from what was kept.
        Raises :class:`CeqlResourceError` when ``owner`` alone holds ``max_states`` or more.
        """
        owners = [o for o in (r() for r in list(self._owners.values())) if o is not None]
        if not any(o is owner for o in owners):
            owners.append(owner)
        keep_s: set[int] = set()
        keep_g: set[int] = {self.g0}
        held = 0
        for o in owners:
            s_in, g_in = o.dfa_in_use()
            s, g = set(s_in), set(g_in)
            if o is owner:
                held = len(s) + len(g)
            keep_s |= s
            keep_g |= g
        states = {d: self._states[d] for d in keep_s if d in self._states}
        globals_ = {g: self._globals[g] for g in keep_g if g in self._globals}
        self._states = states
        self._ids = {key: d for d, key in states.items()}
        self._globals = globals_
        self._gids = {key: g for g, key in globals_.items()}
        self.trans.clear()
        self.trans.update((d, {}) for d in states)
        self.gtrans.clear()
        self.gtrans.update((g, {}) for g in globals_)
        self.starts.clear()
        self.cached = 0
        self._labels = {_EMPTY: _EMPTY}
        self.policy.clear()
        self._limit = len(states) + len(globals_) + self.max_states
        self.full = False
        for o in owners:
            o.dfa_was_reset()
        if held >= self.max_states:
            raise CeqlResourceError(
                f"The query needs more than {self.max_states} determinized automaton states "
                "on this stream: raise max_states (ceql.compile(..., max_states=N)) or simplify "
                "the query (fewer alternatives or nested iterations, a shorter WITHIN, or a "
                "plainer selection strategy than MAX)."
            )
