"""The register plan of a query with conditions between events (register automata).

The CEA of such a query keeps only the unary conditions in its guards; each FILTER
conjunction holding conditions between events is a *scope* (:attr:`CEA.scopes`). A run of
the automaton carries, per open scope, *registers*: what the scope's conditions still need
from the events read so far —

* per condition and quantified variable, the records (attribute values) of its events, kept
  only while a partner variable of the condition can still get an event in this valuation of
  the scope (so ``b[price > a.price]`` holds ``a.price`` until ``b`` comes, then nothing);
* per ``PREV`` condition, the previous event's ``PREV`` attributes, while ``X`` can come again;
* per aggregate, an accumulator (count, sum, min, max, first, last), until the scope closes.

A condition without aggregates is checked on each choice of events as soon as its last event
is read (the *incremental* plan); one with aggregates, and every match condition, when the
scope's valuation is complete — the run leaves the scope's formula or accepts (the *deferred*
plan). Runs at one automaton state with equal registers are indistinguishable for the future,
so they share one tECS union-list; this is what keeps CORE's sharing for everything the
conditions do not read.

:class:`RegisterPlan` is immutable and built once per automaton: per state and event class the
enabled transitions, per state and scope which variables can still come (``later``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import product
from typing import Any

from ..predicates import guard_fn
from ..predicates.between import (
    AggSpec,
    Condition,
    agg_start,
    agg_step,
    aggregate,
    compile_condition,
)
from ..predicates.values import TRUE, norm
from .cea import CEA, Transition

__all__ = ["PLAN_DEFERRED", "PLAN_INCREMENTAL", "Move", "RegisterPlan", "Registers", "ScopePlan"]

#: How a condition is decided (shown by ``explain``).
PLAN_INCREMENTAL = "checked as each event it reads arrives, against registers"
PLAN_DEFERRED = "checked once the scope's valuation is complete, from accumulators"

#: A run's registers: per scope, None (closed) or (per condition (records per quantified
#: variable, previous PREV record), aggregate accumulators).
Registers = tuple[Any, ...]


@dataclass(frozen=True)
class ScopePlan:
    """The conditions between events of one FILTER conjunction."""

    index: int
    conditions: tuple[Condition, ...]
    aggs: tuple[AggSpec, ...]
    #: the attributes read of an event, by variable (records, PREV and aggregates)
    reads: frozenset[str]

    def initial(self) -> Any:
        """The registers of a fresh valuation of the scope."""
        return (tuple((((),) * len(c.quantified), None) for c in self.conditions),
                tuple(agg_start(f) for f, _, _ in self.aggs))


@dataclass(frozen=True)
class Move:
    """A marked transition as a run takes it."""

    dst: int
    accepts: bool
    #: creates an output node (the event is in the output, or a strategy needs every
    #: marked position)
    output: bool
    label: frozenset[str] | None
    scopes: tuple[tuple[int, frozenset[str]], ...]
    opens: frozenset[int]
    closes: frozenset[int]  # scopes a run leaves by taking it (before it (re)opens any)


class RegisterPlan:
    """The immutable register plan of one automaton (see the module docstring).

    ``full_d``: output nodes for every marked event, labelled None when the SELECT list drops
    it (strategies other than ALL/ANY/STRICT compare complex events before projection).
    """

    def __init__(self, cea: CEA, full_d: bool) -> None:
        self.cea = cea
        self.full_d = full_d
        self.scopes = tuple(self._scope(k, leaves) for k, leaves in enumerate(cea.scopes))
        self.n_scopes = len(self.scopes)
        self.empty: Registers = (None,) * self.n_scopes
        out: list[list[Transition]] = [[] for _ in range(cea.n_states)]
        stays = [False] * cea.n_states
        for t in cea.transitions:
            if t.mark:
                out[t.src].append(t)
            elif t.src == t.dst:
                stays[t.src] = True
        self.stays = tuple(stays)
        #: whether a run at the state can still move (else it only accepts, then ends)
        self.has_out = tuple(bool(out[q]) or stays[q] for q in range(cea.n_states))
        all_scopes = frozenset(range(self.n_scopes))
        self._out = tuple(tuple((guard_fn(t.guard), self._move(t, all_scopes)) for t in ts)
                          for ts in out)
        self.later = self._later(cea, out)
        self._moves: list[dict[int, tuple[Move, ...]]] = [{} for _ in range(cea.n_states)]
        #: every attribute a condition reads
        self.reads = frozenset().union(*(s.reads for s in self.scopes))

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _scope(k: int, leaves: tuple[Any, ...]) -> ScopePlan:
        conds = tuple(compile_condition(leaf) for leaf in leaves)
        aggs: dict[AggSpec, None] = {}
        reads: set[str] = set()
        for c in conds:
            for spec in c.aggs:
                aggs.setdefault(spec)
                if spec[2] is not None:
                    reads.add(spec[2])
            for a in c.attrs:
                reads.update(a)
            reads.update(c.prev)
        return ScopePlan(k, conds, tuple(aggs), frozenset(reads))

    def _move(self, t: Transition, all_scopes: frozenset[int]) -> Move:
        inside = frozenset(k for k, _ in t.scopes)
        output = t.pmark or self.full_d
        label = t.vars if t.pmark else None
        return Move(t.dst, t.dst in self.cea.finals, output, label, t.scopes, t.opens,
                    (all_scopes - inside) | t.opens)

    @staticmethod
    def _later(cea: CEA, out: list[list[Transition]]) -> tuple[dict[int, frozenset[str]], ...]:
        """Per state, per scope: the variables an event can still join in the same valuation
        of the scope (through transitions inside it that do not open it again)."""
        later: list[dict[int, frozenset[str]]] = []
        for q in range(cea.n_states):
            per: dict[int, frozenset[str]] = {}
            scopes = {k for t in out[q] for k, _ in t.scopes}
            for k in scopes:
                seen = {q}
                todo = [q]
                names: set[str] = set()
                while todo:
                    for t in out[todo.pop()]:
                        if k in t.opens:
                            continue
                        vs = next((v for j, v in t.scopes if j == k), None)
                        if vs is None:
                            continue
                        names |= vs
                        if t.dst not in seen:
                            seen.add(t.dst)
                            todo.append(t.dst)
                per[k] = frozenset(names)
            later.append(per)
        return tuple(later)

    # ------------------------------------------------------------------ running
    def moves(self, q: int, c: int) -> tuple[Move, ...]:
        """The marked transitions of state ``q`` enabled by class ``c`` (cached)."""
        cache = self._moves[q]
        r = cache.get(c)
        if r is None:
            r = cache[c] = tuple(m for g, m in self._out[q] if g(c))
        return r

    def cached(self) -> int:
        """How many (state, class) answers are cached."""
        return sum(map(len, self._moves))

    def clear(self) -> None:
        """Forget the cached answers."""
        for cache in self._moves:
            cache.clear()

    def advance(self, regs: Registers, m: Move, event: Mapping[str, Any]) -> Registers | None:
        """The registers after taking ``m`` on ``event``, or None when a condition fails."""
        scopes = self.scopes
        new = list(regs)
        for k in m.closes:
            s = new[k]
            if s is not None:
                if not self._complete(scopes[k], s):
                    return None
                new[k] = None
        later = self.later[m.dst]
        for k, names in m.scopes:
            s = new[k]
            sp = scopes[k]
            if s is None:
                s = sp.initial()
            s = self._add(sp, s, names, event, later.get(k, frozenset()))
            if s is None:
                return None
            new[k] = s
        return tuple(new)

    def accepts(self, regs: Registers) -> bool:
        """Whether a run with ``regs`` that reached a final state completes a valuation whose
        deferred conditions hold."""
        scopes = self.scopes
        for k, s in enumerate(regs):
            if s is not None and not self._complete(scopes[k], s):
                return False
        return True

    @staticmethod
    def _add(sp: ScopePlan, s: Any, names: frozenset[str], event: Mapping[str, Any],
             later: frozenset[str]) -> Any:
        """Scope registers ``s`` after an event binding ``names``; None if it fails a
        condition."""
        conds_s, accs = s
        out: list[Any] = []
        for c, (lists, last) in zip(sp.conditions, conds_s, strict=True):
            q = c.quantified
            if not names.intersection(q):
                out.append((lists, last))
                continue
            fresh: list[tuple[Any, ...] | None] = []
            new_last = last
            for i, v in enumerate(q):
                if v not in names:
                    fresh.append(None)
                    continue
                rec = tuple(norm(event.get(a)) for a in c.attrs[i])
                if i == 0 and c.prev:
                    new_last = tuple(norm(event.get(a)) for a in c.prev)
                    if last is None:  # the first event of X: exempt, no record
                        fresh.append(None)
                        continue
                    rec = rec + last
                fresh.append(rec)
            if not c.deferred and not _check_new(c, lists, fresh):
                return None
            lists = tuple(old if f is None else (*old, f)
                          for old, f in zip(lists, fresh, strict=True))
            if not c.deferred:
                # records no partner can meet any more are dropped (runs then merge)
                lists = tuple(recs if any(w in later for j, w in enumerate(q) if j != i)
                              else () for i, recs in enumerate(lists))
                if c.prev and c.var not in later:
                    new_last = None
            out.append((lists, new_last))
        if sp.aggs:
            accs = tuple(
                agg_step(f, acc, None if a is None else norm(event.get(a)))
                if v in names else acc
                for (f, v, a), acc in zip(sp.aggs, accs, strict=True))
        return (tuple(out), accs)

    @staticmethod
    def _complete(sp: ScopePlan, s: Any) -> bool:
        """Whether the deferred conditions hold of the scope's complete valuation."""
        conds_s, accs = s
        values: dict[AggSpec, Any] | None = None
        for c, (lists, _) in zip(sp.conditions, conds_s, strict=True):
            if not c.deferred:
                continue
            if values is None:
                values = {spec: aggregate(spec[0], acc)
                          for spec, acc in zip(sp.aggs, accs, strict=True)}
            av = tuple(values[spec] for spec in c.aggs)
            check = c.check
            for recs in product(*lists):
                if check(recs, av) != TRUE:
                    return False
        return True


def _check_new(c: Condition, lists: tuple[tuple[Any, ...], ...],
               fresh: list[tuple[Any, ...] | None]) -> bool:
    """Every choice of events with at least one new record satisfies ``c``."""
    check: Callable[[Any, Any], int] = c.check
    n = len(lists)
    for i in range(n):
        f = fresh[i]
        if f is None:
            continue
        # choice i new; before it old records only, after it old and new
        pools = [lists[j] if j < i else
                 (f,) if j == i else
                 (lists[j] if fresh[j] is None else (*lists[j], fresh[j]))
                 for j in range(n)]
        for recs in product(*pools):
            if check(recs, ()) != TRUE:
                return False
    return True
