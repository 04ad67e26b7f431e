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

from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any

from ..frontends.spaseq import SKIP_TILL_NEXT, STRICT, CrossFilter
from .conditions import FilterChecker, compatible, joined
from .events import TimeKey
from .match import Match, Terms
from .plan import Plan

__all__ = ["Choice", "Runs", "renamed"]

# (GPM, input position, mapping: variable → N-Triples text)
Choice = tuple[str, int, Mapping[str, str]]


def renamed(g: str, rename: Mapping[str, str], choices: Iterable[Choice]) -> list[Choice]:
    """``choices`` of a GPM as GPM ``g``'s, equal to it up to variable names (``rename``:
    its variable → ``g``'s)."""
    return [(g, pos, {rename[v]: t for v, t in m.items()}) for _, pos, m in choices]


class _Run:
    __slots__ = ("deadline", "deadline_f", "elem", "first", "first_time", "last", "occ",
                 "shared", "steps")

    def __init__(self, elem: int, shared: dict[str, str],
                 occ: dict[str, tuple[tuple[int, Mapping[str, str]], ...]], last: int,
                 first: TimeKey, first_time: Any, steps: list[bool], window: TimeKey
                 ) -> None:
        self.elem = elem
        self.shared = shared
        self.occ = occ  # GPM → its (position, mapping) choices in time order
        self.last = last
        self.first = first
        self.first_time = first_time
        self.steps = steps
        self.deadline = first + window  # the last time an extension may have
        self.deadline_f = float(self.deadline)

    def expired(self, key: TimeKey, key_f: float) -> bool:
        """Whether an instant at ``key`` (``key_f`` its float) is past the window (floats
        decide unless equal: rounding is monotonic)."""
        return key_f > self.deadline_f or (key_f == self.deadline_f and key > self.deadline)


# a run waiting on one of its steps: (run, 0) the next iteration, (run, 1) the next element
_Entry = tuple[_Run, int]


class _Waiting:
    """The runs waiting on element ``j`` by ``:`` or ``;`` (step ``s``), indexed by their
    values of ``keys``: the shared variables element ``j`` binds that such a run may have
    bound already. A choice binding all of them can only fit the runs with the same values,
    and those without them all (``loose``); any other choice is tried on every run."""

    __slots__ = ("buckets", "count", "keys", "loose")

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.buckets: dict[tuple[str, ...], list[_Entry]] = {}
        self.loose: list[_Entry] = []
        self.count = 0

    def add(self, entry: _Entry) -> None:
        shared = entry[0].shared
        key = tuple(shared.get(v) for v in self.keys)
        if self.keys and None not in key:
            self.buckets.setdefault(key, []).append(entry)  # type: ignore[arg-type]
        else:
            self.loose.append(entry)
        self.count += 1

    def candidates(self, merged: Mapping[str, str]) -> list[list[_Entry]]:
        """The lists of entries a choice binding ``merged`` may fit."""
        key = tuple(merged.get(v) for v in self.keys)
        if not self.keys or None in key:
            return [self.loose, *self.buckets.values()]
        found = self.buckets.get(key)  # type: ignore[arg-type]
        return [self.loose] if found is None else [self.loose, found]

    def sweep(self, key: TimeKey, key_f: float) -> None:
        """Forget the entries whose run has left the window or whose step has ended."""
        def alive(e: _Entry) -> bool:
            return e[0].steps[e[1]] and not e[0].expired(key, key_f)
        self.loose = [e for e in self.loose if alive(e)]
        buckets = {}
        for k, es in self.buckets.items():
            kept = [e for e in es if alive(e)]
            if kept:
                buckets[k] = kept
        self.buckets = buckets
        self.count = len(self.loose) + sum(len(es) for es in buckets.values())


class Runs:
    """The runs of one evaluation; :meth:`instant` advances them over one instant."""

    def __init__(self, plan: Plan, checker: FilterChecker) -> None:
        self.plan = plan
        self._checker = checker
        self._instant = -1
        self._span = plan.span
        self._owner = plan.owner
        # runs waiting by ',' act at the next instant only: a list, renewed every instant
        self._strict: list[_Entry] = []
        self._waiting: dict[tuple[int, int], _Waiting] = {}
        bound: set[str] = set()  # variables bound by the elements before j
        for j, el in enumerate(plan.elements):
            mine = [v for g in el.gpms for v in plan.variables[g] if v not in plan.local[g]]
            before = tuple(dict.fromkeys(v for v in mine if v in bound))
            self._waiting[(j, 1)] = _Waiting(before)
            self._waiting[(j, 0)] = _Waiting(tuple(dict.fromkeys(mine)))
            bound.update(v for g in el.gpms for v in plan.variables[g])
        self._count = 0
        self._swept = 0
        # GPM → its FILTERs with the iteration-local variables of its own they read, the
        # other + GPMs whose iteration-local variables they read, the shared ones they read
        self._filter_info: dict[str, list[tuple[CrossFilter, tuple[str, ...],
                                                tuple[str, ...], tuple[str, ...]]]] = {}
        owner = self._owner
        for g, filters in plan.filters.items():
            self._filter_info[g] = [
                (f, tuple(v for v in f.variables if owner.get(v) == g),
                 tuple(sorted({owner[v] for v in f.variables if v in owner and owner[v] != g})),
                 tuple(v for v in f.variables if v not in owner))
                for f in filters]

    @property
    def live(self) -> int:
        """How many steps of partial matches are waiting (after the last sweep: some may have
        ended since)."""
        return len(self._strict) + sum(w.count for w in self._waiting.values())

    def instant(self, time: Any, key: TimeKey, choices: Mapping[str, Sequence[Choice]]
                ) -> list[Match]:
        """Advance over the next instant of the streamset (time as given and as a key);
        ``choices``: GPM → its choices at this instant. Returns the matches it completes."""
        self._instant += 1
        k = self._instant
        key_f = float(key)
        plan = self.plan
        cache: dict[int, list[tuple[tuple[Choice, ...], dict[str, str]]]] = {}
        spawned: list[_Run] = []
        for r, s in self._strict:  # all from the previous instant: k == r.last + 1
            if r.expired(key, key_f):
                continue
            j = r.elem + s
            for gc, _ in self._group(j, choices, cache):
                new = self._extend(r, j, gc, k, key, time)
                if new is not None:
                    spawned.append(new)
        self._strict = []
        for (j, s), waiting in self._waiting.items():
            if not waiting.count:
                continue
            element = plan.elements[j]
            op = element.loop_op if s == 0 else element.op
            tried: dict[int, tuple[_Entry, list[tuple[Choice, ...]]]] = {}
            for gc, merged in self._group(j, choices, cache):
                for entries in waiting.candidates(merged):
                    for e in entries:
                        got = tried.get(id(e))
                        if got is None:
                            tried[id(e)] = (e, [gc])
                        else:
                            got[1].append(gc)
            for (r, _), gcs in tried.values():
                if not r.steps[s] or r.expired(key, key_f):
                    continue
                found = False
                for gc in gcs:
                    new = self._extend(r, j, gc, k, key, time)
                    if new is not None:
                        spawned.append(new)
                        found = True
                if found and op == SKIP_TILL_NEXT:
                    r.steps[s] = False
        for gc, _ in self._group(0, choices, cache):
            new = self._extend(None, 0, gc, k, key, time)
            if new is not None:
                spawned.append(new)
        for r in spawned:
            for s in (0, 1):
                if r.steps[s]:
                    element = plan.elements[r.elem + s]
                    if (element.loop_op if s == 0 else element.op) == STRICT:
                        self._strict.append((r, s))
                    else:
                        self._waiting[(r.elem + s, s)].add((r, s))
                        self._count += 1
        if self._count > 2 * self._swept + 1024:
            for waiting in self._waiting.values():
                waiting.sweep(key, key_f)
            self._count = self._swept = sum(w.count for w in self._waiting.values())
        last = len(plan.elements) - 1
        out: dict[tuple[Any, ...], Match] = {}
        for r in spawned:
            if r.elem == last:
                m = self._match(r, time)
                out.setdefault(m.key(), m)
        return sorted(out.values(), key=lambda m: (m.positions, repr(m.key())))

    def _group(self, j: int, choices: Mapping[str, Sequence[Choice]],
               cache: dict[int, list[tuple[tuple[Choice, ...], dict[str, str]]]]
               ) -> list[tuple[tuple[Choice, ...], dict[str, str]]]:
        """The choices for element ``j``'s group at this instant: per alternative, one
        choice per GPM with pairwise compatible mappings, and their mappings merged."""
        found = cache.get(j)
        if found is not None:
            return found
        found = []
        for alt in self.plan.elements[j].alternatives:
            for combo in product(*(choices.get(g, ()) for g in alt)):
                merged = joined(m for _, _, m in combo)
                if merged is not None:
                    found.append((combo, merged))
        cache[j] = found
        return found

    def _extend(self, r: _Run | None, j: int, gc: tuple[Choice, ...], k: int, key: TimeKey,
                time: Any) -> _Run | None:
        """``r`` extended by the group choice ``gc`` for element ``j``, or ``None`` when it is
        not fit (incompatible, a FILTER fails); the caller has checked the window."""
        plan = self.plan
        if r is None:
            shared: dict[str, str] = {}
            occ: dict[str, tuple[tuple[int, Mapping[str, str]], ...]] = {}
            first, first_time = key, time
        else:
            shared, occ, first, first_time = dict(r.shared), dict(r.occ), r.first, r.first_time
        for g, pos, m in gc:
            local = plan.local[g]
            if not compatible(shared, m, local):
                return None
            for v, t in m.items():
                if v not in local:
                    shared[v] = t
            occ[g] = (*occ.get(g, ()), (pos, m))
        if not self._filters_hold(j, shared, occ, r):
            return None
        element = plan.elements[j]
        steps = [element.kleene, j + 1 < len(plan.elements)]
        return _Run(j, shared, occ, k, first, first_time, steps, self._span)

    def _filters_hold(self, j: int, shared: dict[str, str],
                      occ: dict[str, tuple[tuple[int, Mapping[str, str]], ...]],
                      before: _Run | None) -> bool:
        """Every cross-GPM FILTER of element ``j``'s GPMs, for every iteration of its GPM and
        every choice of one iteration of each other ``+`` GPM whose iteration-local variables
        it reads (unbound when that GPM has none), on the shared variables so far.

        When ``before`` (the run extended) had completed element ``j`` too, its combinations
        all held; if the shared variables a FILTER reads are unchanged, only combinations
        with a new iteration are checked (a FILTER reading no iteration-local variable of its
        own GPM is one combination per choice of the others')."""
        plan = self.plan
        for g in plan.elements[j].gpms:
            mine = occ.get(g, ())
            if not mine:
                continue
            for f, own_reads, others, shared_reads in self._filter_info[g]:
                dims: list[list[tuple[str, Mapping[str, str]] | None]] = [
                    [(g, m) for _, m in mine] if own_reads else [None]]
                for o in others:
                    dims.append([(o, m) for _, m in occ.get(o, ())] or [None])
                old = [0] * len(dims)
                if before is not None and before.elem == j and all(
                        shared.get(v) == before.shared.get(v) for v in shared_reads):
                    had = before.occ.get(g, ())
                    old[0] = len(had) if own_reads else (1 if had else 0)
                    for d, o in enumerate(others, 1):
                        n = len(before.occ.get(o, ()))
                        old[d] = n if n else (1 if dims[d] == [None] else 0)
                base = {v: shared[v] for v in shared_reads if v in shared}
                for d in range(len(dims)):  # the combinations whose first new part is d
                    parts = [dims[i][:old[i]] for i in range(d)]
                    parts.append(dims[d][old[d]:])
                    parts.extend(dims[d + 1:])
                    for combo in product(*parts):
                        bindings = dict(base)
                        for part in combo:
                            if part is not None:
                                o, m = part
                                for v in plan.local[o]:
                                    if v in m:
                                        bindings[v] = m[v]
                        if not self._checker.holds(f, bindings):
                            return False
        return True

    def _match(self, r: _Run, end_time: Any) -> Match:
        plan = self.plan
        terms: Terms = {}
        for v in plan.select:
            g = self._owner.get(v)
            terms[v] = (r.shared.get(v) if g is None
                        else [m[v] for _, m in r.occ.get(g, ()) if v in m])
        events = {g: tuple(p for p, _ in cs) for g, cs in r.occ.items()}
        return Match(events, terms, r.first_time, end_time)
