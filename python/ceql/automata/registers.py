"""The register plan of a query with conditions between events (register automata).

The CEA of such a query keeps only the unary conditions in its guards; each FILTER
conjunction holding conditions between events is a *scope* (:attr:`CEA.scopes`). A run of
the automaton carries, per open scope, *registers*: what the scope's conditions still need
from the events read so far —

* per condition and quantified variable, the records (attribute values) of its events, kept
  only while a partner variable of the condition can still get an event in this valuation of
  the scope (so ``b[price > a.price]`` holds ``a.price`` until ``b`` comes, then nothing);
* per ``PREV`` condition, the previous event's ``PREV`` attributes, while ``X`` can come again;
* per aggregate, an accumulator (count, sum, min, max, first, last), until the scope closes;
* per ``NOT β AS n`` whose conditions on ``n`` are judged when the valuation completes, the
  β events of its gap (:class:`Recorder`).

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
from typing import Any, cast

from ..ir import expr_nodes
from ..ir import nodes as N
from ..predicates import GTrue, guard_fn
from ..predicates.between import (
    AggSpec,
    Condition,
    Listener,
    agg_start,
    agg_step,
    aggregate,
    compile_condition,
)
from ..predicates.summary import Reducer, record_reducer
from ..predicates.values import TRUE, norm
from .cea import CEA, Kill, Transition

__all__ = ["NEVER", "VACUOUS", "CondKill", "Gate", "Move", "Recorder", "RegisterPlan",
           "Registers", "ScopePlan", "gate_key"]

#: A run's registers: per scope, None (closed) or (per condition (records per quantified
#: variable, previous PREV record), aggregate accumulators).
Registers = tuple[Any, ...]
#: What :meth:`RegisterPlan.advance` does for one move: registers, event, listener → the
#: registers after it (None: a condition fails).
_Advancer = Callable[[Registers, Mapping[str, Any], Listener | None], "Registers | None"]
#: What :meth:`RegisterPlan.killed` does for one gap (or one condition of it).
_Killer = Callable[[Registers, Mapping[str, Any], Listener | None], bool]
#: The gap of a NOT whose conditions read other events: (β's test on an event class, the
#: negated name, per scope (its index, the indices of those conditions), None when a β event
#: is judged at once (the conditions read only variables complete before the NOT), else how
#: β events are recorded to be judged when the valuation completes).
CondKill = tuple[Callable[[int], bool], str, tuple[tuple[int, tuple[int, ...]], ...],
                 "Recorder | None"]


def _killing(guards: list[Any]) -> Callable[[int], bool] | None:
    """Whether an event class ends the runs waiting at a state whose self-loops have
    ``guards`` (None: no class does — a loop is TRUE, or there is none): the class passes
    none of them, as in the gap of ``NOT β`` (or a conjunction's product of gaps)."""
    if not guards or any(isinstance(g, GTrue) for g in guards):
        return None
    oks = [guard_fn(g) for g in dict.fromkeys(guards)]
    if len(oks) == 1:
        ok = oks[0]
        return lambda c: not ok(c)
    return lambda c: not any(f(c) for f in oks)


@dataclass(frozen=True)
class ScopePlan:
    """The conditions between events of one FILTER conjunction."""

    index: int
    conditions: tuple[Condition, ...]
    aggs: tuple[AggSpec, ...]
    #: the attributes read of an event, by variable (records, PREV and aggregates)
    reads: frozenset[str]
    #: the conditions on a negated variable (of a NOT between two elements): never checked
    #: as the others are (a negated variable binds no event); see :class:`Recorder`
    negated: frozenset[int] = frozenset()
    #: those whose NOT records its β events: their records are all kept until the scope
    #: completes
    whole: frozenset[int] = frozenset()

    def initial(self) -> Any:
        """The registers of a fresh valuation of the scope (immutable, built once)."""
        init = self.__dict__.get("_initial")
        if init is None:
            init = (tuple((((),) * len(c.quantified), None) for c in self.conditions),
                    tuple(agg_start(f) for f, _, _ in self.aggs))
            object.__setattr__(self, "_initial", init)
        return init


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
    #: the gaps of NOTs with conditions on their β event that the event lies in (a move of
    #: one side of a conjunction while the other waits in such a gap): see
    #: :meth:`RegisterPlan.passed`
    kills: tuple[CondKill, ...] = ()


#: :func:`_one_path` gives up (answers False) past this many pairs of states
ONE_PATH_PAIRS = 20_000


def _one_path(cea: CEA, out: list[list[Transition]], full_d: bool) -> bool:
    """Whether every complex event (start and positions) has one path in ``cea``.

    Unmarked events only keep a run in its gap (a self-loop), so two paths for one complex
    event take marked transitions at the same events and part somewhere: walk pairs of states
    joined by marked transitions, noting whether the two paths took different transitions; a
    parted pair that accepts at one event is a duplicate (whatever the labels: the enumerator
    joins the labels of one complex event's paths). Guards and conditions are ignored (a pair
    may never meet an event both take: only ever a False too many), as is a marked event the
    output leaves out (False)."""
    if not full_d and any(not t.pmark for ts in out for t in ts):
        return False
    finals = cea.finals
    seen = {(0, 0, False)}
    todo = [(0, 0, False)]
    while todo:
        p, q, parted = todo.pop()
        for t1 in out[p]:
            for t2 in out[q]:
                split = parted or t1 is not t2
                if split and t1.dst in finals and t2.dst in finals:
                    return False
                pair = (t1.dst, t2.dst, split)
                if pair not in seen:
                    if len(seen) >= ONE_PATH_PAIRS:
                        return False
                    seen.add(pair)
                    todo.append(pair)
    return True


class RegisterPlan:
    """The immutable register plan of one automaton (see the module docstring).

    ``full_d``: output nodes for every marked event, labelled None when the SELECT list drops
    it (strategies other than ALL/ANY/STRICT compare complex events before projection).
    ``fated``: the registers end with one more slot, the run's *fate* — what decides whether
    its complex events pass a leading or trailing NOT (``runtime/correlated.py`` sets it; the
    plan carries it along untouched).
    """

    def __init__(self, cea: CEA, full_d: bool, fated: bool = False) -> None:
        self.cea = cea
        self.full_d = full_d
        self.fated = fated
        gaps = {id(k): k for t in cea.transitions for k in t.kills}
        negated: dict[int, set[int]] = {}
        whole: dict[int, set[int]] = {}
        for _, _, per_scope, deferred in gaps.values():
            for k, leaves in per_scope:
                cis = {cea.scopes[k].index(leaf) for leaf in leaves}
                negated.setdefault(k, set()).update(cis)
                if deferred:
                    whole.setdefault(k, set()).update(cis)
        self.scopes = tuple(self._scope(k, leaves, negated.get(k, set()), whole.get(k, set()))
                            for k, leaves in enumerate(cea.scopes))
        self.n_scopes = len(self.scopes)
        self.empty: Registers = (None,) * (self.n_scopes + fated)
        #: per gap (by id of its Kill), its CondKill; per scope, the recorders whose β
        #: events are judged when it completes (with their place in :attr:`Recorder.carriers`)
        self._gaps: dict[int, CondKill] = {}
        finishing: list[list[tuple[Recorder, int]]] = [[] for _ in range(self.n_scopes)]
        for key, kill in gaps.items():
            ck = self._gaps[key] = self._condkill(kill)
            if ck[3] is not None:
                for i, (k, _, _) in enumerate(ck[3].carriers):
                    finishing[k].append((ck[3], i))
        self.finishing = tuple(tuple(f) for f in finishing)
        #: whether some scope judges recorded β events when it completes
        self.recorded_gaps = any(finishing)
        out: list[list[Transition]] = [[] for _ in range(cea.n_states)]
        stays = [False] * cea.n_states
        loops: list[list[Any]] = [[] for _ in range(cea.n_states)]
        condkills: list[tuple[CondKill, ...]] = [()] * cea.n_states
        for t in cea.transitions:
            if t.mark:
                out[t.src].append(t)
            elif t.src == t.dst:
                stays[t.src] = True
                loops[t.src].append(t.guard)
                condkills[t.src] += tuple(self._gaps[id(k)] for k in t.kills)
        self.stays = tuple(stays)
        #: per state, None, or whether an event class ends the runs waiting there (the gap
        #: of ``NOT β``: a β event between the two elements)
        kills = [_killing(gs) for gs in loops]
        self.kills = tuple(kills)
        #: the states with such a gap, with their test
        self.killing = tuple((q, k) for q, k in enumerate(kills) if k is not None)
        #: per state, the gaps of ``NOT β AS n`` whose conditions on ``n`` read other events
        #: (see :data:`CondKill`): a β event ends the runs there for which they all hold, or
        #: is recorded in their registers
        self.condkills = tuple(condkills)
        self.condkilling = tuple((q, k) for q, ks in enumerate(condkills) for k in ks
                                 if k[3] is None)
        self.recording = tuple((q, k) for q, ks in enumerate(condkills) for k in ks
                               if k[3] is not None)
        #: whether a run at the state can still move (else it only accepts, then ends)
        self.has_out = tuple(bool(out[q]) or stays[q] for q in range(cea.n_states))
        #: whether some marked transition lies in a gap with conditions (:attr:`Move.kills`)
        self.move_kills = any(t.kills for ts in out for t in ts)
        all_scopes = frozenset(range(self.n_scopes))
        self._out = tuple(tuple((guard_fn(t.guard), self._move(t, all_scopes)) for t in ts)
                          for ts in out)
        #: per state, its marked transitions as (guard, move)
        self.out_moves = self._out
        self.later = self._later(cea, out, condkills)
        #: whether no complex event can be produced twice (two runs accepting one start,
        #: positions and labels): the enumerator then need not collect an end's matches to
        #: remove duplicates (see :func:`_one_path`)
        self.one_path = _one_path(cea, out, full_d)
        #: per state, class → :meth:`moves` (a read-only fast cache; a miss: call it)
        self.move_cache: list[dict[int, tuple[Move, ...]]] = [{} for _ in range(cea.n_states)]
        self._progs: dict[int, tuple[tuple[int, _Program], ...]] = {}
        self._kills_on: dict[int, tuple[tuple[tuple[int, Callable[[int], bool]], ...],
                                        tuple[tuple[int, CondKill], ...],
                                        tuple[tuple[int, tuple[CondKill, ...]], ...]]] = {}
        self._killers: dict[int, _Killer] = {}
        self._advancers: dict[int, _Advancer] = {}
        #: every attribute a condition reads
        self.reads = frozenset().union(*(s.reads for s in self.scopes))
        #: whether every state a run can wait in has a gap: runs then stay where they are
        #: unless an event moves them, so a partition is updated in place (only the runs an
        #: event can move are visited, equalities through a hash index)
        self.in_place = not fated and all(stays[q] or not self.has_out[q]
                                          for q in range(1, cea.n_states))
        self._gates: dict[int, Gate | None] = {}
        self._canon: dict[tuple[Any, ...], Gate] = {}
        self._state_gates: dict[int, tuple[Gate, ...]] = {}
        #: per gap state whose NOT has one condition comparing n with one earlier value: that
        #: comparison as a gate, so an index finds the runs a β event may end
        self.kill_gates: dict[int, Gate] = {}
        for q, ck in self.condkilling:
            g = self._kill_gate(ck)
            if g is not None and sum(1 for k in condkills[q] if k[3] is None) == 1:
                self.kill_gates[q] = self._canon.setdefault(g.fields(), g)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _scope(k: int, leaves: tuple[Any, ...], negated: set[int], whole: set[int]
               ) -> ScopePlan:
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
        return ScopePlan(k, conds, tuple(aggs), frozenset(reads), frozenset(negated),
                         frozenset(whole))

    def _move(self, t: Transition, all_scopes: frozenset[int]) -> Move:
        inside = frozenset(k for k, _ in t.scopes)
        output = t.pmark or self.full_d
        label = t.vars if t.pmark else None
        return Move(t.dst, t.dst in self.cea.finals, output, label, t.scopes, t.opens,
                    (all_scopes - inside) | t.opens, tuple(self._gaps[id(k)] for k in t.kills))

    def _condkill(self, kill: Kill) -> CondKill:
        """A gap of :attr:`Transition.kills` with its conditions as indices into their
        scopes (and its recorder when deferred)."""
        guard, name, per_scope, deferred = kill
        specs = tuple((k, tuple(self.cea.scopes[k].index(leaf) for leaf in leaves))
                      for k, leaves in per_scope)
        rec = Recorder(name, [(k, [self.scopes[k].conditions[i] for i in cis])
                              for k, cis in specs], [cis for _, cis in specs]) \
            if deferred else None
        return guard_fn(guard), name, specs, rec

    @staticmethod
    def _later(cea: CEA, out: list[list[Transition]],
               condkills: list[tuple[CondKill, ...]]) -> tuple[dict[int, frozenset[str]], ...]:
        """Per state, per scope: the variables an event can still join in the same valuation
        of the scope (through transitions inside it that do not open it again); a negated
        name counts where its gap can still be reached (its conditions read the registers
        there)."""
        later: list[dict[int, frozenset[str]]] = []
        for q in range(cea.n_states):
            per: dict[int, frozenset[str]] = {}
            scopes = {k for t in out[q] for k, _ in t.scopes}
            for k in scopes:
                seen = {q}
                todo = [q]
                names: set[str] = set()
                while todo:
                    r = todo.pop()
                    for ck in condkills[r]:
                        if any(j == k for j, _ in ck[2]):
                            names.add(ck[1])
                    for t in out[r]:
                        if k in t.opens:
                            continue
                        vs = next((v for j, v in t.scopes if j == k), None)
                        if vs is None:
                            continue
                        names |= vs
                        # a move of one operand of AND while the other waits in such a gap
                        names.update(g[1] for g in t.kills if any(j == k for j, _ in g[2]))
                        if t.dst not in seen:
                            seen.add(t.dst)
                            todo.append(t.dst)
                per[k] = frozenset(names)
            later.append(per)
        return tuple(later)

    # ------------------------------------------------------------------ running
    def moves(self, q: int, c: int) -> tuple[Move, ...]:
        """The marked transitions of state ``q`` enabled by class ``c`` (cached)."""
        cache = self.move_cache[q]
        r = cache.get(c)
        if r is None:
            r = cache[c] = tuple(m for g, m in self._out[q] if g(c))
        return r

    def advance(self, regs: Registers, m: Move, event: Mapping[str, Any],
                hear: Listener | None) -> Registers | None:
        """The registers after taking ``m`` on ``event``, or None when a condition fails
        (``hear``: the evaluation's listener, given to the conditions checked)."""
        f = self._advancers.get(id(m))
        if f is None:
            f = self._advancers[id(m)] = self._advancer(m)
        return f(regs, event, hear)

    def _advancer(self, m: Move) -> _Advancer:
        """:meth:`advance` for one move, its programs compiled (built once per move)."""
        scopes = self.scopes
        complete = self._complete
        closes = tuple(sorted(m.closes))
        progs = tuple((k, _compile(prog), scopes[k].initial()) for k, prog in self._programs(m))
        finish = self._finish
        finishing = self.finishing
        if self.n_scopes == 1 and len(progs) == 1 and not finishing[0] and not self.fated:
            _, run, init = progs[0]
            closing = closes == (0,)
            sp0 = scopes[0]

            def one(regs: Registers, event: Mapping[str, Any],
                    hear: Listener | None) -> Registers | None:
                s = regs[0]
                if s is None:
                    s = init
                elif closing:
                    if not complete(sp0, s, hear):
                        return None
                    s = init
                s = run(s, event, hear)
                return None if s is None else _Regs((s,))
            return one

        def advance(regs: Registers, event: Mapping[str, Any],
                    hear: Listener | None) -> Registers | None:
            new = list(regs)
            for k in closes:
                s = new[k]
                if s is not None:
                    if finishing[k] and not finish(k, new, hear):
                        return None
                    if not complete(scopes[k], new[k], hear):
                        return None
                    new[k] = None
            for k, run, init in progs:
                s = new[k]
                s = run(init if s is None else s, event, hear)
                if s is None:
                    return None
                new[k] = s
            return _Regs(new)
        return advance

    def kills_on(self, c: int) -> tuple[tuple[tuple[int, Callable[[int], bool]], ...],
                                        tuple[tuple[int, CondKill], ...],
                                        tuple[tuple[int, tuple[CondKill, ...]], ...]]:
        """The gaps where an event of class ``c`` ends the runs waiting (of
        :attr:`killing`), those where it ends the runs its NOT's conditions hold for (of
        :attr:`condkilling`), and per state the gaps where it is recorded in the runs'
        registers (of :attr:`recording`) (cached per class)."""
        r = self._kills_on.get(c)
        if r is None:
            rec: dict[int, list[CondKill]] = {}
            for q, ck in self.recording:
                if ck[0](c):
                    rec.setdefault(q, []).append(ck)
            r = self._kills_on[c] = (tuple((q, k) for q, k in self.killing if k(c)),
                                     tuple((q, ck) for q, ck in self.condkilling if ck[0](c)),
                                     tuple((q, tuple(cks)) for q, cks in rec.items()))
        return r

    def passed(self, m: Move, c: int, regs: Registers, event: Mapping[str, Any],
               hear: Listener | None) -> Registers | None:
        """The registers of a run that took ``m`` on an event of class ``c`` lying in the
        gaps of :attr:`Move.kills`: None when a β event there ends the run, else with the β
        event recorded where it is judged later."""
        for ck in m.kills:
            if ck[0](c):
                if ck[3] is None:
                    if self.killed(ck, regs, event, hear):
                        return None
                else:
                    regs = ck[3].record(regs, event)
        return regs

    def recorded(self, cks: tuple[CondKill, ...], regs: Registers,
                 event: Mapping[str, Any]) -> Registers:
        """The registers of a run waiting in deferred gaps ``cks`` after a β event (the
        same object when nothing changed)."""
        for ck in cks:
            rec = ck[3]
            assert rec is not None
            regs = rec.record(regs, event)
        return regs

    def _finish(self, k: int, regs: list[Any], hear: Listener | None) -> bool:
        """Judge the β events recorded for scope ``k``, which completes, with its valuation:
        False when one satisfies every condition on its negated variable (the valuation
        fails); those that do are handed to the next FILTER around the NOT holding such
        conditions (``regs`` updated), where there is one."""
        for rec, i in self.finishing[k]:
            if not rec.judge(i, self.scopes[k], regs, hear):
                return False
        return True

    def state_gates(self, q: int) -> tuple[Gate, ...]:
        """The gates of the moves out of state ``q`` (cached)."""
        gs = self._state_gates.get(q)
        if gs is None:
            found: dict[Gate, None] = {}
            for _, m in self.out_moves[q]:
                g = self.gate(m)
                if g is not None:
                    found[g] = None
            kg = self.kill_gates.get(q)
            if kg is not None:
                found[kg] = None
            gs = self._state_gates[q] = tuple(found)
        return gs

    def gate(self, m: Move) -> Gate | None:
        """The comparison a run must pass to take ``m`` that an index can answer, if there is
        one: an equality ``X[a = Y.b]`` (X bound by ``m``, Y's records in the registers; runs
        found by Y's value in a hash index), else an order comparison ``X[a > Y.b]`` or
        ``X[a > PREV(b)]`` (any of ``< <= > >=``; runs found by a range of a sorted index)."""
        key = id(m)
        if key in self._gates:
            return self._gates[key]
        found: Gate | None = None
        ranged: Gate | None = None
        for k, (ops, _) in self._programs(m):
            if k in m.closes or found is not None:
                continue
            for ci, c, spec, keep, _ in ops:
                if keep is None or spec[0] is None:
                    continue
                g = _comparison_gate(k, ci, c, spec)
                if g is None:
                    continue
                if g.op == "=":
                    found = g
                    break
                if ranged is None:
                    ranged = g
        found = found or ranged
        if found is not None:  # one instance per gate: indexes key by identity
            found = self._canon.setdefault(found.fields(), found)
        self._gates[key] = found
        return found

    def _programs(self, m: Move) -> tuple[tuple[int, _Program], ...]:
        """What ``m`` does to each scope it is in (built once per move)."""
        progs = self._progs.get(id(m))
        if progs is None:
            later = self.later[m.dst]
            progs = tuple((k, _program(self.scopes[k], names, later.get(k, frozenset())))
                          for k, names in m.scopes)
            self._progs[id(m)] = progs
        return progs

    def _kill_gate(self, ck: CondKill) -> Gate | None:
        """The gate of a gap's only condition when it compares n's attribute with one earlier
        value (``n[price > a.price]``): the runs a β event may end are those a move with
        that condition could take."""
        _, name, specs, _ = ck
        if len(specs) != 1 or len(specs[0][1]) != 1:
            return None
        k, (ci,) = specs[0]
        c = self.scopes[k].conditions[ci]
        if c.var != name or c.deferred:
            return None
        return _comparison_gate(k, ci, c, ((c.attrs[0], False), None))

    def killed(self, ck: CondKill, regs: Registers, event: Mapping[str, Any],
               hear: Listener | None) -> bool:
        """Whether ``event`` (a β event) ends a run with ``regs`` waiting in the gap ``ck``:
        each of the NOT's conditions holds with ``n`` bound to it, for every choice of the
        earlier events it reads (vacuously when one variable has none)."""
        f = self._killers.get(id(ck))
        if f is None:
            f = self._killers[id(ck)] = self._killer(ck)
        return f(regs, event, hear)

    def _killer(self, ck: CondKill) -> _Killer:
        """:meth:`killed` for one gap (built once per gap): a test per condition."""
        _, name, specs, _ = ck
        tests = [self._kill_test(k, ci, name) for k, cis in specs for ci in cis]
        if len(tests) == 1:
            return tests[0]
        return lambda regs, event, hear: all(t(regs, event, hear) for t in tests)

    def _kill_test(self, k: int, ci: int, name: str) -> _Killer:
        """Whether condition ``ci`` of scope ``k`` holds with ``n`` (``name``) bound to the
        event, for every choice of the earlier events it reads."""
        sp = self.scopes[k]
        c = sp.conditions[ci]
        check = c.check
        q = c.quantified
        if len(q) == 2 and q[0] == name and q[1] != name and not c.aggs:
            attrs = c.attrs[0]

            def pair(regs: Registers, event: Mapping[str, Any], hear: Listener | None) -> bool:
                s = regs[k]
                if s is None:
                    return True  # no earlier event: vacuous
                ys = s[0][ci][0][1]
                if not ys:
                    return True
                get = event.get
                f = tuple([norm(get(a)) for a in attrs])
                for r in ys:
                    if check((f, r), (), hear) != TRUE:
                        return False
                return True
            return pair

        def general(regs: Registers, event: Mapping[str, Any], hear: Listener | None) -> bool:
            get = event.get
            s = regs[k]
            lists = s[0][ci][0] if s is not None else ((),) * len(q)
            pools: list[Any] = []
            for v, attrs, recs in zip(q, c.attrs, lists, strict=True):
                if v == name:
                    pools.append((tuple([norm(get(a)) for a in attrs]),))
                elif not recs:
                    return True  # vacuous
                else:
                    pools.append(recs)
            av: tuple[Any, ...] = ()
            if c.aggs:
                accs = s[1] if s is not None else tuple(agg_start(f) for f, _, _ in sp.aggs)
                values = dict(zip(sp.aggs, accs, strict=True))
                av = tuple(aggregate(spec[0], values[spec]) for spec in c.aggs)
            return all(check(recs, av, hear) == TRUE for recs in product(*pools))
        return general

    def accepts(self, regs: Registers, hear: Listener | None) -> bool:
        """Whether a run with ``regs`` that reached a final state completes a valuation whose
        deferred conditions hold."""
        scopes = self.scopes
        if self.fated:
            regs = regs[:-1]
        if not self.recorded_gaps:
            for k, s in enumerate(regs):
                if s is not None and not self._complete(scopes[k], s, hear):
                    return False
            return True
        finishing = self.finishing
        new: list[Any] | None = None
        for k, s in enumerate(regs):
            if s is None:
                continue
            if finishing[k]:
                if new is None:
                    new = list(regs)
                if not self._finish(k, new, hear):
                    return False
                s = new[k]
            if not self._complete(scopes[k], s, hear):
                return False
        return True

    @staticmethod
    def _complete(sp: ScopePlan, s: Any, hear: Listener | None) -> bool:
        """Whether the deferred conditions hold of the scope's complete valuation."""
        conds_s, accs = s
        values: dict[AggSpec, Any] | None = None
        negated = sp.negated
        for ci, (c, (lists, _)) in enumerate(zip(sp.conditions, conds_s, strict=True)):
            if not c.deferred or ci in negated:
                continue
            if values is None:
                values = {spec: aggregate(spec[0], acc)
                          for spec, acc in zip(sp.aggs, accs, strict=True)}
            av = tuple(values[spec] for spec in c.aggs)
            check = c.check
            for recs in product(*lists):
                if check(recs, av, hear) != TRUE:
                    return False
        return True


class Recorder:
    """The β events of the gap of ``NOT β AS n`` whose conditions on ``n`` cannot be judged
    while a run waits there (they read a variable with events after the NOT, or the NOT is
    iterated or in a conjunction's operand inside their FILTER): each β event of the gap is
    recorded in the run's registers — the attributes of ``n`` the conditions read — and when
    the valuation of a FILTER holding such conditions completes, the records that satisfy all
    of them (each universal over the other variables' events) go on to the next FILTER around
    the NOT that holds some (``carriers``, innermost first); past the last, one left fails the
    valuation (SEMANTICS.md: some β event of the gap satisfies every atom on ``n``).

    A scope's records sit in the ``n`` slot of one of its conditions on ``n`` (its
    *carrier*; a negated variable never binds an event, so the slot is otherwise empty),
    without duplicates. A NOT with one condition, an order comparison of one attribute of
    ``n`` with values of other events (``n[open < c.open]``), keeps only its numbers' extreme
    (the smallest for ``<``: if any β event satisfies it, that one does), so runs merge."""

    __slots__ = ("attrs", "carriers", "checks", "smallest")

    def __init__(self, name: str, per_scope: list[tuple[int, list[Condition]]],
                 indices: list[tuple[int, ...]]) -> None:
        order = sorted(range(len(per_scope)), key=lambda i: per_scope[i][0])
        attrs: dict[str, None] = {}
        for _, conds in per_scope:
            for c in conds:
                for a in c.attrs[c.quantified.index(name)]:
                    attrs.setdefault(a)
        #: the attributes of a β event recorded
        self.attrs = tuple(attrs)
        at = {a: i for i, a in enumerate(self.attrs)}
        #: per scope holding conditions on n, innermost first: (scope, carrier condition,
        #: n's slot in it)
        self.carriers: list[tuple[int, int, int]] = []
        #: per carrier, its scope's conditions on n: (index, n's slot, n's record from a
        #: recorded one)
        self.checks: list[tuple[tuple[int, int, tuple[int, ...]], ...]] = []
        for i in order:
            k, conds = per_scope[i]
            slots = [c.quantified.index(name) for c in conds]
            self.carriers.append((k, indices[i][0], slots[0]))
            self.checks.append(tuple((ci, sl, tuple(at[a] for a in c.attrs[sl]))
                                     for ci, sl, c in zip(indices[i], slots, conds,
                                                          strict=True)))
        #: None, or whether only the smallest number is kept (else the largest)
        self.smallest: bool | None = None
        if len(per_scope) == 1 and len(per_scope[0][1]) == 1:
            self.smallest = _extreme(per_scope[0][1][0], name)

    def record(self, regs: Registers, event: Mapping[str, Any]) -> Registers:
        """``regs`` with the β ``event`` recorded (the same object when it adds nothing)."""
        k, ci, slot = self.carriers[0]
        s = regs[k]
        if s is None:  # not inside the FILTER (cannot happen in the gap; be safe)
            return regs
        get = event.get
        rec = tuple([norm(get(a)) for a in self.attrs])
        conds, accs = s
        lists, last = conds[ci]
        old = lists[slot]
        new = self._added(old, rec)
        if new is old:
            return regs
        lists = (*lists[:slot], new, *lists[slot + 1:])
        conds = (*conds[:ci], (lists, last), *conds[ci + 1:])
        return _Regs((*regs[:k], (conds, accs), *regs[k + 1:]))

    def _added(self, old: tuple[Any, ...], rec: tuple[Any, ...]) -> tuple[Any, ...]:
        if rec in old:
            return old
        smallest = self.smallest
        if smallest is not None and _number(rec[0]):
            v = rec[0]
            for i, r in enumerate(old):
                if _number(r[0]):
                    if (v < r[0]) if smallest else (v > r[0]):
                        return (*old[:i], rec, *old[i + 1:])
                    return old
        return (*old, rec)

    def judge(self, i: int, sp: ScopePlan, regs: list[Any], hear: Listener | None) -> bool:
        """Carrier ``i``'s scope (``sp``) completes: False if a record satisfies all its
        conditions and this is the last carrier, else those records are handed on."""
        k, ci, slot = self.carriers[i]
        s = regs[k]
        recs = s[0][ci][0][slot]
        if not recs:
            return True
        checks = self.checks[i]
        passing = [r for r in recs
                   if all(_holds(sp, s, cj, sl, tuple([r[p] for p in proj]), hear)
                          for cj, sl, proj in checks)]
        if not passing:
            return True
        if i + 1 == len(self.carriers):
            return False
        k2, ci2, slot2 = self.carriers[i + 1]
        s2 = regs[k2]
        conds, accs = s2
        lists, last = conds[ci2]
        kept = lists[slot2]
        for r in passing:
            kept = self._added(kept, r)
        lists = (*lists[:slot2], kept, *lists[slot2 + 1:])
        regs[k2] = ((*conds[:ci2], (lists, last), *conds[ci2 + 1:]), accs)
        return True


def _number(v: Any) -> bool:
    t = type(v)
    return (t is int or t is float) and v == v


def _extreme(c: Condition, name: str) -> bool | None:
    """For a condition ``n[attr op E]`` (``op`` one of ``< <= > >=``, ``E`` not reading
    ``n``): whether a smaller ``attr`` satisfies it whenever a larger one does (True), or
    the reverse (False); None for any other condition."""
    p = c.leaf.pred
    if c.var != name or c.prev or not (isinstance(p, N.Compare) and p.op in _FLIP) \
            or p.op == "=":
        return None

    def own(e: N.Expr) -> bool:
        return isinstance(e, N.Attr) and e.var in (None, name)

    def reads_n(e: N.Expr) -> bool:
        return any(own(x) for x in expr_nodes(N.Compare("=", e, e)))

    if own(p.left) and not reads_n(p.right):
        op = p.op
    elif own(p.right) and not reads_n(p.left):
        op = _FLIP[p.op]
    else:
        return None
    return op[0] == "<"


def _holds(sp: ScopePlan, s: Any, ci: int, slot: int, rec: tuple[Any, ...],
           hear: Listener | None) -> bool:
    """Whether condition ``ci`` of scope registers ``s`` holds with its variable at ``slot``
    (a negated one) bound to the event of record ``rec``, for every choice of the other
    variables' events (vacuously when one has none)."""
    c = sp.conditions[ci]
    conds, accs = s
    pools: list[Any] = []
    for j, recs in enumerate(conds[ci][0]):
        if j == slot:
            pools.append((rec,))
        elif not recs:
            return True
        else:
            pools.append(recs)
    av: tuple[Any, ...] = ()
    if c.aggs:
        values = dict(zip(sp.aggs, accs, strict=True))
        av = tuple(aggregate(spec[0], values[spec]) for spec in c.aggs)
    check = c.check
    return all(check(recs, av, hear) == TRUE for recs in product(*pools))


class _Regs(tuple[Any, ...]):
    """Registers that hash once: a run's key is looked up several times per event it lives
    through (its partition's runs, the indexes), and registers are deep tuples. Equal to,
    and hashed as, the plain tuple (saved snapshots hold plain tuples, and are saved so)."""

    _hash: int | None = None

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = tuple.__hash__(self)
        return h

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


def _comparison_gate(k: int, ci: int, c: Condition, spec: tuple[Any, ...]) -> Gate | None:
    """The gate of condition ``c`` when a move binding its X (``spec``) decides it with one
    comparison between the event's attribute and one earlier value."""
    p = c.leaf.pred
    if not (isinstance(p, N.Compare) and p.op in _FLIP):
        return None
    own = [e for e in (p.left, p.right) if isinstance(e, N.Attr)
           and (e.var is None or e.var == c.var)]
    if len(own) != 1:
        return None
    other = p.right if own[0] is p.left else p.left
    op = p.op if own[0] is p.left else _FLIP[p.op]
    if isinstance(other, N.Prev):
        if len(c.quantified) != 1 or op == "=" or not spec[0][1]:
            return None
        return Gate(k, ci, own[0].name, op, c.prev.index(other.name))
    if (c.prev or len(c.quantified) != 2 or spec[1] is not None or len(c.attrs[1]) != 1
            or not isinstance(other, N.Attr) or other.var != c.quantified[1]):
        return None
    return Gate(k, ci, own[0].name, op)


@dataclass(frozen=True, eq=False)  # hashed per event: by identity (RegisterPlan.gate
class Gate:                           # hands out one instance per gate)
    """``X[attr op Y.b]`` (or ``X[attr op PREV(b)]``) of condition ``cond`` of scope
    ``scope``: a run takes the move only if the event's ``attr`` compares so with every Y
    record (or there is none; or with the previous X event, if there is one)."""

    scope: int
    cond: int
    attr: str
    #: ``=`` (a hash index), or ``< <= > >=`` (a sorted index), event's value on the left
    op: str = "="
    #: the slot of ``b`` in the PREV record, or -1 when the value is Y's records
    prev: int = -1

    def fields(self) -> tuple[Any, ...]:
        """What tells two gates apart."""
        return (self.scope, self.cond, self.attr, self.op, self.prev)


#: :func:`gate_key` of a run that passes whatever the value (no Y record yet), or none
VACUOUS: Any = ("vacuous",)
NEVER: Any = ("never",)


def gate_key(g: Gate, regs: Registers) -> Any:
    """The value a run's registers hold for gate ``g``: for ``=``, the Y records' one value
    (:data:`NEVER` if they differ); for ``>``/``>=`` their largest, for ``<``/``<=`` their
    smallest (None if they are not all numbers); the PREV value. :data:`VACUOUS` when the
    run passes whatever the value (no record yet)."""
    s = regs[g.scope]
    if s is None:
        return VACUOUS
    lists, last = s[0][g.cond]
    if g.prev >= 0:
        return VACUOUS if last is None else last[g.prev]
    ys = lists[1]
    if not ys:
        return VACUOUS
    v = ys[0][0]
    if g.op == "=":
        for r in ys[1:]:
            if r[0] != v:
                return NEVER
        return v
    if len(ys) == 1:
        return v
    vs = [r[0] for r in ys]
    if not all(type(x) is int or type(x) is float for x in vs):
        return None
    return max(vs) if g.op[0] == ">" else min(vs)


# What one move does to one scope: per condition it touches, (index, the condition, per
# quantified variable None (not bound here) or (attributes, is X with PREV), which lists to keep
# afterwards (None: all, the condition is deferred), whether to keep the PREV record); and the
# aggregates it steps: (index, function, attribute).
_CondOp = tuple[int, Condition, tuple[Any, ...], "tuple[bool, ...] | None", bool]
_Program = tuple[tuple[_CondOp, ...], tuple[tuple[int, str, "str | None"], ...]]


def _program(sp: ScopePlan, names: frozenset[str], later: frozenset[str]) -> _Program:
    ops: list[_CondOp] = []
    for ci, c in enumerate(sp.conditions):
        q = c.quantified
        if not names.intersection(q):
            continue
        fresh = tuple((c.attrs[i], i == 0 and bool(c.prev)) if v in names else None
                      for i, v in enumerate(q))
        keep: tuple[bool, ...] | None = None
        keep_prev = True
        # records no partner can meet any more are dropped (runs merge); a recorded NOT's
        # conditions keep theirs until the scope completes
        if not c.deferred and ci not in sp.whole:
            keep = tuple(any(w in later for j, w in enumerate(q) if j != i)
                         for i in range(len(q)))
            keep_prev = c.var in later
        ops.append((ci, c, fresh, keep, keep_prev))
    aggs = tuple((i, f, a) for i, (f, v, a) in enumerate(sp.aggs) if v in names)
    return tuple(ops), aggs


#: What a compiled program does to one condition's registers given the event's values (and
#: the evaluation's listener): the new ``(lists, last)``, or None when the condition fails.
_OpFn = Callable[[Any, list[Any], Listener | None], Any]
#: A compiled program: scope registers, the event and the evaluation's listener → new scope
#: registers, or None.
_Runner = Callable[[Any, Mapping[str, Any], Listener | None], Any]


def _compile(prog: _Program) -> _Runner:
    """What ``prog`` does to a scope's registers on an event (None if it fails a
    condition), as one generated function: the attributes the program reads are read (and
    normalized) once per event into locals, and each condition between two variables without
    ``PREV`` — all a lowered SPAseq query has — is written out inline (:func:`_check_new` and
    the list updates, with this move's bindings and kept lists fixed); any other condition
    calls its op (:func:`_general_op`); then the aggregates step."""
    ops, aggs = prog
    names: dict[str, int] = {}

    def slots(attrs: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(names.setdefault(a, len(names)) for a in attrs)

    def record(idx: tuple[int, ...]) -> str:
        return "(" + "".join(f"v{i}, " for i in idx) + ")"

    ns: dict[str, Any] = {"norm": norm, "TRUE": TRUE}
    body: list[str] = []
    general = False
    for j, (ci, c, spec, keep, keep_prev) in enumerate(ops):
        if keep is None or len(spec) != 2 or any(sp[1] for sp in spec if sp):
            general = True
            ns[f"G{j}"] = _general_op(c, spec, keep, keep_prev, slots)
            body += [f"r = G{j}(conds[{ci}], vals, hear)",
                     "if r is None:", "    return None",
                     f"out[{ci}] = r"]
            continue
        ns[f"C{j}"] = c.check
        s0, s1 = spec
        k0, k1 = keep
        red = _reducers(c)
        for i, r in enumerate(red):
            if r is not None:
                ns[f"R{j}_{i}"] = r
        body.append(f"(l0, l1), last = conds[{ci}]")
        if s1 is None:  # X bound: checked with every Y record
            body += [f"f = {record(slots(s0[0]))}",
                     "for r in l1:",
                     f"    if C{j}((f, r), (), hear) != TRUE:", "        return None"]
            lists = (_append(red, j, 0, "l0", "f") if k0 else "()", "l1" if k1 else "()")
        elif s0 is None:  # Y bound: checked with every X record
            body += [f"f = {record(slots(s1[0]))}",
                     "for r in l0:",
                     f"    if C{j}((r, f), (), hear) != TRUE:", "        return None"]
            lists = ("l0" if k0 else "()", _append(red, j, 1, "l1", "f") if k1 else "()")
        else:  # both: X's new record with every Y one, then Y's with the old X ones
            body += [f"f0 = {record(slots(s0[0]))}",
                     f"f1 = {record(slots(s1[0]))}",
                     "for r in (*l1, f1):",
                     f"    if C{j}((f0, r), (), hear) != TRUE:", "        return None",
                     "for r in l0:",
                     f"    if C{j}((r, f1), (), hear) != TRUE:", "        return None"]
            lists = (_append(red, j, 0, "l0", "f0") if k0 else "()",
                     _append(red, j, 1, "l1", "f1") if k1 else "()")
        body.append(f"out[{ci}] = (({lists[0]}, {lists[1]}), "
                    f"{'last' if keep_prev else 'None'})")
    if aggs:
        body.append("acc = list(accs)")
        for j, (i, f, a) in enumerate(aggs):
            ns[f"F{j}"] = f
            arg = "None" if a is None else f"v{slots((a,))[0]}"
            body.append(f"acc[{i}] = agg_step(F{j}, acc[{i}], {arg})")
        body.append("accs = tuple(acc)")
        ns["agg_step"] = agg_step
    head = ["get = event.get"]
    for a, i in names.items():  # names are passed as values, never written into the code
        ns[f"A{i}"] = a
        head.append(f"v{i} = norm(get(A{i}))")
    if general:
        head.append("vals = [" + "".join(f"v{i}, " for i in range(len(names))) + "]")
    head += ["conds, accs = s", "out = list(conds)"]
    src = "\n    ".join(["def run(s, event, hear):", *head, *body, "return (tuple(out), accs)"])
    exec(src, ns)
    return cast(_Runner, ns["run"])


def _general_op(c: Condition, spec: tuple[Any, ...], keep: tuple[bool, ...] | None,
                keep_prev: bool, slots: Callable[[tuple[str, ...]], tuple[int, ...]]) -> _OpFn:
    """The op of any condition (checked with every choice of records with a new one, the
    lists kept as the program says), over the event's values."""
    fresh_spec = tuple(None if sp is None else (slots(sp[0]), sp[1]) for sp in spec)
    prev_slots = slots(c.prev) if any(sp and sp[1] for sp in spec) else ()
    check = c.check
    red = _reducers(c)

    def op(cond: Any, vals: list[Any], hear: Listener | None) -> Any:
        lists, last = cond
        fresh: list[tuple[Any, ...] | None] = []
        new_last = last
        for sp in fresh_spec:
            if sp is None:
                fresh.append(None)
                continue
            idx, is_prev = sp
            rec = tuple([vals[i] for i in idx])
            if is_prev:
                new_last = tuple([vals[i] for i in prev_slots])
                if last is None:  # the first event of X: exempt, no record
                    fresh.append(None)
                    continue
                rec = rec + last
            fresh.append(rec)
        if keep is None:
            return (tuple(old if f is None else (*old, f)
                          for old, f in zip(lists, fresh, strict=True)), new_last)
        if not _check_new(check, lists, fresh, hear):
            return None
        lists = tuple(() if not k else old if f is None else (*old, f) if r is None or not old
                      else r(old, f)
                      for old, f, k, r in zip(lists, fresh, keep, red, strict=True))
        return (lists, new_last if keep_prev else None)
    return op


def _append(red: tuple[Reducer | None, ...], j: int, i: int, old: str, rec: str) -> str:
    """The code of list ``old`` with record ``rec`` added (cut by its reducer, if any)."""
    if red[i] is None:
        return f"(*{old}, {rec})"
    return f"(R{j}_{i}({old}, {rec}) if {old} else ({rec},))"


def _reducers(c: Condition) -> tuple[Reducer | None, ...]:
    """Per quantified variable of ``c``, how its records are cut to the few the condition
    needs (:mod:`ceql.predicates.summary`), so runs whose sets agree there merge."""
    return tuple(record_reducer(c, v) for v in c.quantified)


def _check_new(check: Callable[[Any, Any, Listener | None], int],
               lists: tuple[tuple[Any, ...], ...], fresh: list[tuple[Any, ...] | None],
               hear: Listener | None) -> bool:
    """Every choice of events with at least one new record satisfies ``check``."""
    n = len(lists)
    if n == 1:
        f = fresh[0]
        return f is None or check((f,), (), hear) == TRUE
    if n == 2:
        f0, f1 = fresh
        if f0 is not None:
            for r in lists[1] if f1 is None else (*lists[1], f1):
                if check((f0, r), (), hear) != TRUE:
                    return False
        if f1 is not None:
            for r in lists[0]:
                if check((r, f1), (), hear) != TRUE:
                    return False
        return True
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
            if check(recs, (), hear) != TRUE:
                return False
    return True
