"""The sequence evaluation, one instant at a time: runs of partial matches over the lowered
sequence (:mod:`.plan`), in the manner of ceql's register runs — a run is a position in the
sequence plus registers (the shared variables' terms, and each GPM's mappings so far, which
the cross-GPM FILTERs read).

A run that has completed element ``j`` (its last events at instant ``τ′``) waits on at most
two *steps*: another iteration of ``j`` (if it is a ``+`` element; by the operator before
it) and element ``j + 1`` (by the operator between them). At each later instant a step
offers every *fit* choice of its group there — a choice of one event and one mapping per GPM
of an alternative, compatible with the run's shared variables and with the FILTERs of the
element's GPMs holding, universally over the iterations, on the extended run — and:

* ``:`` (skip-till-any) spawns a run per fit choice and keeps waiting;
* ``;`` (skip-till-next) spawns a run per fit choice and, if there was one, stops: this is the
  contract's "no instant strictly between τ′ and τ has a fit choice", since the step saw
  every instant after τ′ in turn, and the fit choices of one instant are all taken;
* ``,`` (contiguity) acts at the next instant of the streamset only, then stops.

Choices are by instants, so "strictly later" is built in: a run spawned at instant ``k``
acts first at ``k + 1``. A ``&`` group's GPMs take events of one instant (alternatives, see
:mod:`.plan`). Runs whose first event is more than the window before the instant are
dropped: no extension can fit the window, and runs never influence each other. A run that
completes the last element is a match; equal matches of one instant are one output (matches
with the same events end at the same instant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import product
from typing import Any

from ..frontends.spaseq import SKIP_TILL_NEXT, STRICT
from ..rdf import term_value
from .conditions import FilterChecker, compatible
from .match import Match
from .plan import Plan

__all__ = ["Choice", "Runs"]

# (GPM, input position, mapping: variable → N-Triples text)
Choice = tuple[str, int, Mapping[str, str]]


class _Run:
    __slots__ = ("elem", "first", "first_time", "last", "occ", "shared", "steps")

    def __init__(self, elem: int, shared: dict[str, str],
                 occ: dict[str, tuple[tuple[int, Mapping[str, str]], ...]], last: int,
                 first: Fraction, first_time: Any, steps: list[bool]) -> None:
        self.elem = elem
        self.shared = shared
        self.occ = occ  # GPM → its (position, mapping) choices in time order
        self.last = last
        self.first = first
        self.first_time = first_time
        self.steps = steps


class Runs:
    """The runs of one evaluation; :meth:`instant` advances them over one instant."""

    def __init__(self, plan: Plan, checker: FilterChecker) -> None:
        self.plan = plan
        self._checker = checker
        self._runs: list[_Run] = []
        self._instant = -1
        self._owner = plan.owner

    @property
    def live(self) -> int:
        """How many partial matches are waiting."""
        return len(self._runs)

    def instant(self, time: Any, key: Fraction, choices: Mapping[str, Sequence[Choice]]
                ) -> list[Match]:
        """Advance over the next instant of the streamset (time as given and as a key);
        ``choices``: GPM → its choices at this instant. Returns the matches it completes."""
        self._instant += 1
        k = self._instant
        plan = self.plan
        cache: dict[int, list[tuple[Choice, ...]]] = {}
        spawned: list[_Run] = []
        kept: list[_Run] = []
        for r in self._runs:
            if key - r.first > plan.window:
                continue
            for s in (0, 1):
                if not r.steps[s]:
                    continue
                j = r.elem + s
                element = plan.elements[j]
                op = element.loop_op if s == 0 else element.op
                if op == STRICT and k != r.last + 1:
                    r.steps[s] = False
                    continue
                found = False
                for gc in self._group(j, choices, cache):
                    new = self._extend(r, j, gc, k, key, time)
                    if new is not None:
                        spawned.append(new)
                        found = True
                if op == STRICT or (op == SKIP_TILL_NEXT and found):
                    r.steps[s] = False
            if r.steps[0] or r.steps[1]:
                kept.append(r)
        for gc in self._group(0, choices, cache):
            new = self._extend(None, 0, gc, k, key, time)
            if new is not None:
                spawned.append(new)
        kept.extend(spawned)
        self._runs = kept
        last = len(plan.elements) - 1
        out: dict[tuple[Any, ...], Match] = {}
        for r in spawned:
            if r.elem == last:
                m = self._match(r, time)
                out.setdefault(m.key(), m)
        return sorted(out.values(), key=lambda m: (m.positions, repr(m.key())))

    def _group(self, j: int, choices: Mapping[str, Sequence[Choice]],
               cache: dict[int, list[tuple[Choice, ...]]]) -> list[tuple[Choice, ...]]:
        """The choices for element ``j``'s group at this instant: per alternative, one
        choice per GPM with pairwise compatible mappings."""
        found = cache.get(j)
        if found is not None:
            return found
        found = []
        for alt in self.plan.elements[j].alternatives:
            for combo in product(*(choices.get(g, ()) for g in alt)):
                merged: dict[str, str] = {}
                ok = True
                for _, _, m in combo:
                    if not compatible(merged, m, frozenset()):
                        ok = False
                        break
                    merged.update(m)
                if ok:
                    found.append(combo)
        cache[j] = found
        return found

    def _extend(self, r: _Run | None, j: int, gc: tuple[Choice, ...], k: int, key: Fraction,
                time: Any) -> _Run | None:
        """``r`` extended by the group choice ``gc`` for element ``j``, or ``None`` when it is
        not fit (incompatible, a FILTER fails) or leaves the window."""
        plan = self.plan
        if r is None:
            shared: dict[str, str] = {}
            occ: dict[str, tuple[tuple[int, Mapping[str, str]], ...]] = {}
            first, first_time = key, time
        else:
            if key - r.first > plan.window:
                return None
            shared, occ, first, first_time = dict(r.shared), dict(r.occ), r.first, r.first_time
        for g, pos, m in gc:
            local = plan.local[g]
            if not compatible(shared, m, local):
                return None
            for v, t in m.items():
                if v not in local:
                    shared[v] = t
            occ[g] = (*occ.get(g, ()), (pos, m))
        if not self._filters_hold(j, shared, occ):
            return None
        element = plan.elements[j]
        steps = [element.kleene, j + 1 < len(plan.elements)]
        return _Run(j, shared, occ, k, first, first_time, steps)

    def _filters_hold(self, j: int, shared: dict[str, str],
                      occ: dict[str, tuple[tuple[int, Mapping[str, str]], ...]]) -> bool:
        """Every cross-GPM FILTER of element ``j``'s GPMs, for every iteration of its GPM and
        every choice of one iteration of each other ``+`` GPM whose iteration-local variables
        it reads (unbound when that GPM has none), on the shared variables so far."""
        plan, owner = self.plan, self._owner
        for g in plan.elements[j].gpms:
            for f in plan.filters[g]:
                mine = occ.get(g, ())
                others = sorted({owner[v] for v in f.variables
                                 if v in owner and owner[v] != g})
                pools: list[list[Mapping[str, str] | None]] = [
                    [m for _, m in occ.get(o, ())] or [None] for o in others]
                for _, own in mine:
                    for combo in product(*pools):
                        bindings = dict(shared)
                        for v in plan.local[g]:
                            if v in own:
                                bindings[v] = own[v]
                        for o, m in zip(others, combo, strict=True):
                            if m is not None:
                                for v in plan.local[o]:
                                    if v in m:
                                        bindings[v] = m[v]
                        if not self._checker.holds(f, bindings):
                            return False
        return True

    def _match(self, r: _Run, end_time: Any) -> Match:
        plan = self.plan
        bindings: dict[str, Any] = {}
        for v in plan.select:
            g = self._owner.get(v)
            if g is None:
                t = r.shared.get(v)
                bindings[v] = None if t is None else term_value(t)
            else:
                bindings[v] = [term_value(m[v]) for _, m in r.occ.get(g, ()) if v in m]
        events = {g: tuple(p for p, _ in cs) for g, cs in r.occ.items()}
        return Match(events, bindings, r.first_time, end_time)
