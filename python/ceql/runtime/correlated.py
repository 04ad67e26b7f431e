"""Algorithm 1 with registers: the runtime of queries with conditions between events.

Per partition, the active runs are keyed by (automaton state, registers) — see
:mod:`ceql.automata.registers` — each with a tECS union-list, exactly as Algorithm 1 keys them
by deterministic state. The automaton is the CEA itself (not determinized: runs that reach one
state with different registers must stay apart), so two runs may produce the same complex
event; :class:`RegisterEnumerator` removes duplicates per end position, then applies the
selection strategy (NEXT, LAST and MAX compare complex events that passed every condition),
the SELECT projection and LIMIT. Windows, partitions, consumption and snapshots work as for
Algorithm 1.

The event's values are read only for the attributes conditions need: a row feed hands its
mapping to :meth:`RegisterRuns.step`, an Arrow feed its batch
(:meth:`RegisterRuns.load_batch`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import pyarrow as pa

from ..automata.registers import (
    CondKill,
    Move,
    RegisterPlan,
    Registers,
)
from ..constants import CONSUME_ANY, CONSUME_NONE
from ..errors import CeqlResourceError
from .chains import best, differ
from .choice import choose
from .enumeration import CHUNK, Enumerator
from .match import Match
from .notices import BetweenValues
from .partitions import Partition, Partitions
from .run_index import RunIndex
from .run_index import RunKey as _Key
from .tecs import (
    KIND_POS,
    MAX_START,
    MAX_START_KEY,
    RIGHT,
    Node,
    insert,
    merge,
    union,
)
from .times import Clock

__all__ = [
    "MAX_RUNS",
    "RANKED_MATCHES",
    "RANKED_RUNS",
    "FatedRuns",
    "RegisterEnumerator",
    "RegisterInertness",
    "RegisterRuns",
]

#: SELECT ALL and ANY keep one run per (state, registers) of a partition within the window.
#: Registers that take many values multiply runs — an aggregate over an iterated variable
#: (``SUM(a.v)`` over ``A+ AS a``: a sum per subset), or many variables a condition compares —
#: up to exponentially in the window. Past these many runs in one partition the evaluation
#: stops with :class:`~ceql.errors.CeqlResourceError` instead of exhausting memory (read at
#: each check; the ranked strategies' cap is :data:`RANKED_RUNS`).
MAX_RUNS = 100_000

#: NEXT, LAST and MAX over conditions between events rank every complex event ending at an
#: event, whatever its start (WITHIN cuts after ranking): the runs of a partition are then not
#: expired by the window. Past these many runs in one partition, or complex events to rank at
#: one event, the evaluation stops with :class:`~ceql.errors.CeqlResourceError` instead of
#: growing without bound (read at each check).
RANKED_RUNS = 100_000
RANKED_MATCHES = 1_000_000


def _ranked_error(what: str, n: int, strategy: str) -> CeqlResourceError:
    return CeqlResourceError(
        f"SELECT {strategy} with conditions between events ranks every complex event ending "
        f"at an event before WITHIN cuts (as the semantics asks), and this evaluation reached "
        f"{n} {what}: use SELECT ALL or ANY (runs then expire with the window), a finer "
        "PARTITION BY, or fewer iterations; or raise ceql.runtime.correlated."
        f"{'RANKED_RUNS' if what.endswith('partition') else 'RANKED_MATCHES'}.")


def _runs_error(n: int, P: Partition) -> CeqlResourceError:
    where = f"the partition {P.key!r}" if P.key else "one partition"
    return CeqlResourceError(
        f"This query's conditions between events keep {n} runs (partial matches with "
        f"distinct registers: the values, records and accumulators the conditions read) in "
        f"{where}, past ceql.runtime.correlated.MAX_RUNS. An aggregate over an iterated "
        "variable (SUM or AVG of a variable under +) or many compared variables can multiply "
        "runs up to exponentially in the window: use a shorter WITHIN, a finer PARTITION BY, "
        "an aggregate with few values (COUNT, MIN, MAX), or raise "
        "ceql.runtime.correlated.MAX_RUNS.")




def _maximal(chains: list[Node], node: Node) -> None:
    """Add ``node`` to ``chains``, the ⊆-maximal chains of one MAX run (an antichain): a
    chain whose set another holds cannot be maximal whatever follows, since every
    continuation of the run extends both alike; equal sets are joined."""
    keep: list[Node] = []
    for i, c in enumerate(chains):
        r = differ(node, c)
        if r == 0:
            chains[i] = union(c, node, None, None)
            return
        if r == 2:  # node ⊂ c
            return
        if r == 3:
            keep.append(c)
    keep.append(node)
    if len(keep) > RANKED_MATCHES:
        raise _ranked_error("maximal partial matches in one run", len(keep), "MAX")
    chains[:] = keep


def _marks_in_a_cycle(plan: RegisterPlan) -> bool:
    """Whether some state reaches itself through marked transitions (an iteration)."""
    succ = [{m.dst for _, m in moves} for moves in plan.out_moves]
    state = [0] * len(succ)  # 0 new, 1 on the path, 2 done
    for root in range(len(succ)):
        if state[root]:
            continue
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            q, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[q] = 2
                stack.pop()
            elif state[nxt] == 1:
                return True
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
    return False


class _Chains(list[Node]):
    """The chains of one MAX run, extended each on its own (a union node is a list too)."""

    __slots__ = ()


def _put(T2: dict[_Key, list[Node]], key: _Key, node: Node, fifo: Any, wkey: Any,
         chain: int = 0) -> None:
    """Add ``node`` to the union-list of ``key`` in ``T2`` (kept sorted by max start); in
    chain mode (NEXT 1, LAST 2) keep only the preferred chain, for MAX (3) the maximal
    ones."""
    t = T2.get(key)
    if t is None:
        T2[key] = [node]
        return
    if chain == 3:
        _maximal(t, node)
        return
    if chain:
        T2[key] = [best(t[0], node, chain == 2)]
        return
    _add(t, node, fifo, wkey)


def _add(ul: list[Node], node: Node, fifo: Any, wkey: Any) -> None:
    """Add ``node`` to the union-list ``ul`` (kept sorted by max start)."""
    m0 = ul[0][MAX_START]
    mx = node[MAX_START]
    if mx > m0:
        ul.insert(0, node)
    elif mx == m0:
        ul[0] = union(ul[0], node, fifo, wkey)
    else:
        insert(ul, node, fifo, wkey)



class RegisterRuns:
    """Algorithm 1 over (state, registers) runs for one query over one evaluation's
    partitions (same interface as :class:`~ceql.runtime.algorithm.Runs`). ``between`` is the
    evaluation's listener for conditions between events: its ``sink`` goes to every condition
    checked."""

    __slots__ = ("base", "between", "chain", "cols", "consume", "eps", "fate", "on_full",
                 "parts", "plan", "ranked", "strategy_name")

    def __init__(self, plan: RegisterPlan, parts: Partitions, eps: Any, consume: str,
                 ranked: bool, strategy_name: str, between: BetweenValues) -> None:
        self.between = between
        self.strategy_name = strategy_name
        self.plan = plan
        self.parts = parts
        self.eps = eps
        self.consume = consume
        #: NEXT, LAST or MAX: the strategy ranks complex events before WITHIN cuts them, so
        #: runs are kept whatever their start, and the enumerator applies window and
        #: consumption after ranking
        self.ranked = ranked
        #: NEXT (1) or LAST (2): runs in one (state, registers) have the same futures, and
        #: these orders compare two complex events by a position where they differ, which a
        #: common continuation cannot change; so each run keeps one chain, the one its
        #: strategy prefers (the rest can never win), and the accepting chains are ranked
        #: before enumeration. MAX (3) keeps per run the chains whose sets no other chain of
        #: the run holds (several maximal sets can survive; a subset can never become one) —
        #: when a run can mark events in a cycle (an iteration), the only way a run's
        #: subsets become exponentially many; otherwise union-lists, ranked at the end.
        #: :class:`FatedRuns`' labels (None here)
        self.fate: frozenset[str] | None = None
        self.chain = {"NEXT": 1, "LAST": 2}.get(strategy_name, 0) if ranked else 0
        if ranked and strategy_name == "MAX" and _marks_in_a_cycle(plan):
            self.chain = 3
        self.on_full: Callable[[], None] | None = None
        #: the columns conditions read, of the batch being read (Arrow feeds)
        self.cols: dict[str, list[Any]] = {}
        self.base = 0

    def load_batch(self, rb: pa.RecordBatch, base: int) -> None:
        """The next events come from ``rb``, whose first row is at position ``base``."""
        names = set(rb.schema.names)
        self.cols = {a: rb.column(a).to_pylist() for a in self.plan.reads if a in names}
        self.base = base

    def _event(self, pos: int, row: Mapping[str, Any] | None) -> Mapping[str, Any]:
        """The event at ``pos``: ``row`` (a row feed's), else read from the batch."""
        if row is not None:
            return row
        i = pos - self.base
        return {a: col[i] for a, col in self.cols.items()}

    def step(self, P: Partition, c: int, pos: int, sub: int, wkey: Any,
             tkey: Any, row: Mapping[str, Any] | None = None) -> list[Node] | None:
        """Read one event (``row``: its mapping, on the row path; else it is read from the
        batch loaded); return the accepting tECS nodes to enumerate (None if none)."""
        if self.plan.in_place:
            return self._step_in_place(P, c, pos, sub, wkey, tkey, row)
        plan = self.plan
        hear = self.between.sink
        eps = self._enter(P, wkey)
        fifo = None if self.ranked else P.fifo  # ranked runs never expire: no cut list
        chain = self.chain
        new: list[tuple[_Key, Node]] = []
        accs, event = self._start(c, pos, sub, wkey, tkey, new, row)
        T2: dict[_Key, list[Node]] = {}
        advance = plan.advance
        move_kills = plan.move_kills
        stays = plan.stays
        kills = plan.kills
        condkills = plan.condkills
        runs = cast(dict[_Key, list[Node]], P.states)
        caches = plan.move_cache
        for key, ul in runs.items():
            if eps is not None:
                if wkey - ul[0][MAX_START_KEY] > eps:
                    continue
                while wkey - ul[-1][MAX_START_KEY] > eps:
                    ul.pop()
            q, regs = key
            kill = kills[q]
            dies = kill is not None and kill(c)
            stay = key
            for ck in condkills[q]:
                if ck[0](c):  # a β event: the NOT's conditions decide, now or later
                    if event is None:
                        event = self._event(pos, row)
                    if ck[3] is None:
                        if plan.killed(ck, regs, event, hear):
                            dies = True
                            break
                    else:
                        stay = (q, ck[3].record(stay[1], event))
            if stays[q] and not dies:
                if stay in T2:
                    for n in ul:
                        _put(T2, stay, n, fifo, wkey, chain)
                else:
                    T2[stay] = ul
            ms = caches[q].get(c)
            if ms is None:
                ms = plan.moves(q, c)
            if not ms:
                continue
            if event is None:
                event = self._event(pos, row)
            if chain == 3 and len(ul) > 1:
                accs = self._extend_each(new, ms, regs, ul, event, pos, accs)
                continue
            n = ul[0] if len(ul) == 1 else merge(ul, fifo, wkey)
            for m in ms:
                regs2 = advance(regs, m, event, hear)
                if move_kills and regs2 is not None and m.kills:
                    regs2 = plan.passed(m, c, regs2, event, hear)
                if regs2 is None:
                    continue
                node = (n[MAX_START], n[MAX_START_KEY], pos, n, m.label) if m.output else n
                accs = self._keep(new, m, regs2, node, accs, pos)
        for key, node in new:
            _put(T2, key, node, fifo, wkey, chain)
        P.states = cast(dict[Any, list[Node]], T2)
        # inertness depends on the states only, not the registers: one signature for all
        P.sig = (P.g, frozenset([k[0] for k in T2]))
        return self._leave(P, T2, accs, wkey, eps)

    def _enter(self, P: Partition, wkey: Any) -> Any:
        """Before an event: catch up with CONSUME BY ANY, cut expired union branches; the
        window bound runs expire by (None for ranked strategies)."""
        epoch = self.parts.epoch
        if P.epoch != epoch:
            P.catch_up(epoch)
        eps = None if self.ranked else self.eps
        fifo = P.fifo
        if fifo and eps is not None:
            lim = wkey - eps
            while fifo and fifo[0][0] < lim:
                fifo.popleft()[1][RIGHT] = None
        return eps

    def _start(self, c: int, pos: int, sub: int, wkey: Any, tkey: Any,
               new: list[tuple[_Key, Node]],
               row: Mapping[str, Any] | None) -> tuple[list[Node] | None,
                                                       Mapping[str, Any] | None]:
        """The runs the event starts (into ``new``); the accepting nodes and the event's
        values (None when not read)."""
        plan = self.plan
        start = plan.move_cache[0].get(c)
        if start is None:
            start = plan.moves(0, c)
        if not start:
            return None, None
        accs: list[Node] | None = None
        event = self._event(pos, row)
        b = (sub, wkey, pos, None, tkey)  # a bottom node
        empty = plan.empty
        hear = self.between.sink
        for m in start:
            regs = plan.advance(empty, m, event, hear)
            if regs is not None:
                node = (sub, wkey, pos, b, m.label) if m.output else b
                accs = self._keep(new, m, regs, node, accs, pos)
        return accs, event

    def _leave(self, P: Partition, states: dict[_Key, list[Node]], accs: list[Node] | None,
               wkey: Any, eps: Any) -> list[Node] | None:
        """After an event: the caps on runs, the window on what accepted, consumption."""
        if self.ranked:
            if len(states) > RANKED_RUNS:
                raise _ranked_error("partial matches in a partition", len(states),
                                    self.strategy_name)
        elif len(states) > MAX_RUNS:
            raise _runs_error(len(states), P)
        if accs is None:
            return None
        if self.chain in (1, 2) and len(accs) > 1 and self.fate is None:
            top = accs[0]
            for a in accs[1:]:
                if a is not top:
                    top = best(top, a, self.chain == 2)
            accs = [top]
        if eps is not None:
            accs = [a for a in accs if wkey - a[MAX_START_KEY] <= eps]
            if not accs:
                return None
        if self.consume != CONSUME_NONE and not self.ranked:
            consume(self.parts, P, self.consume)
        return accs

    def _step_in_place(self, P: Partition, c: int, pos: int, sub: int, wkey: Any,
                       tkey: Any, row: Mapping[str, Any] | None) -> list[Node] | None:
        """:meth:`step` when every waiting state has a gap: runs an event does not move stay
        as they are, so only those it can move are visited (by state, and through the hash
        index for an equality with an earlier event)."""
        plan = self.plan
        hear = self.between.sink
        eps = self._enter(P, wkey)
        fifo = None if self.ranked else P.fifo
        chain = self.chain
        states: dict[_Key, list[Node]] = P.states  # type: ignore[assignment]
        index: RunIndex | None = P.aux
        if index is None or index.ref is not states:
            index = P.aux = RunIndex(plan, states, self.chain)
        if eps is not None:
            index.since += 1
            if index.since > 64 and index.since > len(states):
                self._drop_expired(states, index, wkey, eps)
        new: list[tuple[_Key, Node]] = []
        caches = plan.move_cache
        if caches[0].get(c, True):
            accs, event = self._start(c, pos, sub, wkey, tkey, new, row)
        else:  # the event starts no run
            accs = event = None
        advance = plan.advance
        move_kills = plan.move_kills
        at = index.at
        for q, at_q in list(at.items()):
            if not at_q:
                continue
            ms = caches[q].get(c)
            if ms is None:
                ms = plan.moves(q, c)
            if not ms:
                continue
            if event is None:
                event = self._event(pos, row)
            merged: dict[Registers, Node] = {}
            for m in ms:
                for regs in index.candidates(plan, q, m, event):
                    n = merged.get(regs)
                    if n is None:
                        ul = states.get((q, regs))
                        if ul is None:
                            continue
                        if eps is not None:
                            if wkey - ul[0][MAX_START_KEY] > eps:
                                del states[(q, regs)]
                                index.remove(plan, q, regs)
                                continue
                            while wkey - ul[-1][MAX_START_KEY] > eps:
                                ul.pop()
                        n = merged[regs] = (ul[0] if len(ul) == 1 else _Chains(ul) if chain == 3
                                            else merge(ul, fifo, wkey))
                    regs2 = advance(regs, m, event, hear)
                    if move_kills and regs2 is not None and m.kills:
                        regs2 = plan.passed(m, c, regs2, event, hear)
                    if regs2 is None:
                        continue
                    if type(n) is _Chains:  # MAX: each maximal chain of the run on its own
                        accs = self._extend_each(new, (m,), regs2, n, None, pos, accs)
                        continue
                    node = (n[MAX_START], n[MAX_START_KEY], pos, n, m.label) if m.output else n
                    accs = self._keep(new, m, regs2, node, accs, pos)
        killing, condkilling, recording = plan.kills_on(c)
        for q, _ in killing:  # a negated event ends the runs waiting in its gap
            if at.get(q):
                index.drop(plan, [(q, regs) for regs in at[q]])
        for q, ck in condkilling:  # ... those for which its conditions hold
            if at.get(q):
                if event is None:
                    event = self._event(pos, row)
                sure, maybe = index.killable(plan, q, event)
                dead = [(q, regs) for regs in sure]
                dead += [(q, regs) for regs in maybe if plan.killed(ck, regs, event, hear)]
                if dead:
                    index.drop(plan, dead)
        if recording:  # ... or record it, to be judged when the valuation completes
            self._record(plan, states, index, recording, pos,
                         event if event is not None else row, new)
        for key, node in new:
            ul = states.get(key)
            if ul is None:
                states[key] = [node]
                dead = index.add(plan, key[0], key[1])
                if dead:
                    index.drop(plan, dead)
            elif chain == 3:
                _maximal(ul, node)
            elif chain:
                old = ul[0]
                ul[0] = best(old, node, chain == 2)
                if ul[0] is not old:
                    dead = index.improved(plan, key[0], key[1])
                    if dead:
                        index.drop(plan, dead)
            else:
                _add(ul, node, fifo, wkey)
        if new and len(states) > MAX_RUNS and not self.ranked:
            raise _runs_error(len(states), P)
        sig = P.sig
        if index.moved or sig is None or sig[0] != P.g:
            index.moved = False
            P.sig = (P.g, frozenset([q for q, runs in at.items() if runs]))
        if accs is None and not self.ranked:
            return None
        return self._leave(P, states, accs, wkey, eps)

    def _record(self, plan: RegisterPlan, states: dict[_Key, list[Node]], index: RunIndex,
                recording: tuple[tuple[int, tuple[CondKill, ...]], ...], pos: int,
                event: Mapping[str, Any] | None, new: list[tuple[_Key, Node]]) -> None:
        """A β event of deferred gaps: recorded in the registers of the runs waiting there
        (a run whose registers change moves to its new key, merging with a run there through
        ``new``)."""
        at = index.at
        relocated: list[tuple[_Key, list[Node]]] = []
        for q, cks in recording:
            if at.get(q):
                if event is None:
                    event = self._event(pos, None)
                for regs in list(at[q]):
                    regs2 = plan.recorded(cks, regs, event)
                    if regs2 is not regs and regs2 != regs:
                        ul = states.pop((q, regs))
                        index.remove(plan, q, regs)
                        relocated.append(((q, regs2), ul))
        for key, ul in relocated:
            if key not in states:
                states[key] = ul
                dead = index.add(plan, key[0], key[1])
                if dead:
                    index.drop(plan, dead)
            else:
                new += [(key, node) for node in ul]

    def _drop_expired(self, states: dict[_Key, list[Node]], index: RunIndex, wkey: Any,
                      eps: Any) -> None:
        """Drop the runs that started outside the window (amortized over the events)."""
        plan = self.plan
        for key in [k for k, ul in states.items() if wkey - ul[0][MAX_START_KEY] > eps]:
            del states[key]
            index.remove(plan, key[0], key[1])
        index.since = 0

    def _extend_each(self, new: list[tuple[_Key, Node]], ms: tuple[Move, ...],
                     regs: Registers, chains: list[Node], event: Mapping[str, Any] | None,
                     pos: int, accs: list[Node] | None) -> list[Node] | None:
        """MAX: the moves ``ms`` from a run on each of its chains apart (``event`` None:
        ``regs`` are already the registers after the move)."""
        for m in ms:
            regs2 = regs if event is None else self.plan.advance(regs, m, event,
                                                                 self.between.sink)
            if regs2 is None:
                continue
            for n in chains:
                node = (n[MAX_START], n[MAX_START_KEY], pos, n, m.label) if m.output else n
                accs = self._keep(new, m, regs2, node, accs, pos)
        return accs

    def _keep(self, new: list[tuple[_Key, Node]], m: Move, regs: Registers, node: Node,
              accs: list[Node] | None, pos: int) -> list[Node] | None:
        plan = self.plan
        if plan.has_out[m.dst]:
            new.append(((m.dst, regs), node))
        if m.accepts and plan.accepts(regs, self.between.sink):
            if accs is None:
                return [node]
            accs.append(node)
        return accs


class FatedRuns(RegisterRuns):
    """:class:`RegisterRuns` for NEXT, LAST or MAX chosen after a leading or trailing NOT
    (``edge_rank``, :mod:`ceql.runtime.edges`): a run's registers end with its *fate* (the
    last slot, :attr:`RegisterPlan.fated`) — its start and the positions the labels
    ``fate`` bind, the events the NOT's conditions read. Two runs with one fate pass or fail
    the NOT alike and share their future, so the strategy keeps its preferred chains among
    them as without the NOT; every run that started outside the window passes, and they
    share the fate ``()`` (:meth:`_age`). The accepting chains are not reduced to one: the
    edge stage chooses among those that pass."""

    __slots__ = ()

    def __init__(self, plan: RegisterPlan, parts: Partitions, eps: Any, consume: str,
                 strategy_name: str, fate: frozenset[str], between: BetweenValues) -> None:
        super().__init__(plan, parts, eps, consume, True, strategy_name, between)
        self.fate = fate

    def step(self, P: Partition, c: int, pos: int, sub: int, wkey: Any,
             tkey: Any, row: Mapping[str, Any] | None = None) -> list[Node] | None:
        self._age(P, wkey)
        return super().step(P, c, pos, sub, wkey, tkey, row)

    def _age(self, P: Partition, wkey: Any) -> None:
        """Runs whose start left the window take the fate ``()`` (they pass), merging as the
        strategy prefers (a young run's chains share its start: the first's is theirs)."""
        runs = cast(dict[_Key, list[Node]], P.states)
        eps = self.eps
        aged = [k for k, ul in runs.items() if k[1][-1] and wkey - ul[0][MAX_START_KEY] > eps]
        for k in aged:
            ul = runs.pop(k)
            key = (k[0], (*k[1][:-1], ()))
            for n in ul:
                _put(runs, key, n, None, wkey, self.chain)

    def _fated(self, regs: Registers, m: Move, pos: int) -> Registers:
        """``regs`` after move ``m`` at ``pos`` with their fate: the start, then the
        positions the fate's labels bind (``()``, outside the window, stays)."""
        f = regs[-1]
        if f == ():
            return regs
        g = (pos,) if f is None else f
        label = m.label
        fate = self.fate
        assert fate is not None
        if label is not None and not label.isdisjoint(fate):
            g = (*g, pos)
        return regs if g is f else (*regs[:-1], g)

    def _keep(self, new: list[tuple[_Key, Node]], m: Move, regs: Registers, node: Node,
              accs: list[Node] | None, pos: int) -> list[Node] | None:
        return super()._keep(new, m, self._fated(regs, m, pos), node, accs, pos)


def consume(parts: Partitions, P: Partition, policy: str) -> None:
    """CONSUME BY ANY or PARTITION after an output in ``P``: later outputs start after it."""
    P.states = {}
    if P.fifo:
        P.fifo.clear()
    if policy == CONSUME_ANY:
        parts.epoch += 1
        P.epoch = parts.epoch


class RegisterInertness:
    """Which event classes leave a partition as it is, for register runs (the interface of
    :class:`~ceql.runtime.skipping.Inertness`): a class is inert for a set of states when it
    enables no marked transition from them nor from the initial state, and each state waits
    (has a gap)."""

    __slots__ = ("fresh", "on_full", "on_new", "plan", "size", "tables")

    def __init__(self, plan: RegisterPlan, g0: int) -> None:
        self.plan = plan
        self.tables: dict[Any, dict[int, bool]] = {}
        self.size = 0
        self.fresh: tuple[int, frozenset[Any]] = (g0, frozenset())
        self.on_full: Callable[[], None] | None = None
        self.on_new: Callable[[int], None] | None = None

    def clear(self) -> None:
        """Forget every answer."""
        self.tables = {}
        self.size = 0

    def inert(self, sig: tuple[int, frozenset[Any]], c: int) -> bool:
        """True when an event of class ``c`` leaves a partition of signature ``sig`` as is."""
        table = self.tables.get(sig)
        if table is not None:
            r = table.get(c)
            if r is not None:
                return r
        if self.on_new is not None:
            self.on_new(c)
        plan = self.plan
        states = {s[0] if isinstance(s, tuple) else s for s in sig[1]}  # (state, registers)
        r = not plan.moves(0, c) and all(
            plan.stays[q] and not plan.moves(q, c)
            and (plan.kills[q] is None or not plan.kills[q](c))
            and not any(ck[0](c) for ck in plan.condkills[q])
            for q in states)
        if self.size >= 1 << 18:
            self.clear()
        self.tables.setdefault(sig, {})[c] = r
        self.size += 1
        return r


class RegisterEnumerator(Enumerator):
    """Complex events of register runs: duplicates removed, then the strategy, the SELECT
    projection (when the runs kept every marked position) and LIMIT."""

    __slots__ = ("barriers", "consume", "deferred", "full_d", "parts", "plan", "strategy",
                 "user_limit")

    def __init__(self, clock: Clock, eps: Any, limit: int | None, strategy: str,
                 full_d: bool, parts: Partitions, consume: str, deferred: bool = False) -> None:
        super().__init__(clock, eps, None)
        #: the strategy is the edge stage's, after its NOT's check: every complex event ending
        #: at an event is given, whatever its start (:mod:`ceql.runtime.edges`)
        self.deferred = deferred
        self.user_limit = limit
        self.strategy = strategy
        self.full_d = full_d
        self.parts = parts
        self.consume = consume
        #: ranked strategies with CONSUME BY: the end of the last output, per partition key
        #: (None for ANY); later outputs must start after it (runs are kept: they rank)
        self.barriers: dict[Any, int] = {}
        #: the runs' plan, when known: when its paths are one per complex event
        #: (:attr:`RegisterPlan.one_path`), ALL and ANY stream as Algorithm 1's enumerator
        #: does (LIMIT stops the walk) instead of collecting an end's matches to deduplicate
        self.plan: RegisterPlan | None = None

    def emit(self, P: Partition, accs: list[Node], pos: int, wkey: Any,
             tkey: Any) -> Iterator[Sequence[Match]]:
        limit = self.user_limit
        ranked = self.strategy in ("NEXT", "LAST", "MAX")
        plan = self.plan
        if not ranked and not self.full_d and plan is not None and plan.one_path:
            return self.walk(P, accs, pos, wkey, tkey, limit)
        return self._collected(P, accs, pos, wkey, tkey, limit, ranked)

    def _collected(self, P: Partition, accs: list[Node], pos: int, wkey: Any, tkey: Any,
                   limit: int | None, ranked: bool) -> Iterator[Sequence[Match]]:
        """:meth:`emit` by collecting every complex event ending at ``pos`` first."""
        eps = self.eps
        groups: dict[tuple[int, tuple[int, ...]], list[Match]] = {}
        if ranked:
            self.eps = None  # every start competes; WITHIN cuts after ranking
        try:
            ranked_n = 0
            for chunk in super().emit(P, accs, pos, wkey, tkey):
                for m in chunk:
                    groups.setdefault((m._start[KIND_POS], m.positions), []).append(m)
                ranked_n += len(chunk)
                if ranked and ranked_n > RANKED_MATCHES:
                    raise _ranked_error("complex events to rank at one event", ranked_n,
                                        self.strategy)
        finally:
            self.eps = eps
        if ranked and not self.deferred:
            kept = choose(self.strategy, list(groups))
            groups = {k: groups[k] for k in kept
                      if eps is None or wkey - groups[k][0]._start[MAX_START_KEY] <= eps}
            if self.consume != CONSUME_NONE:
                scope = None if self.consume == CONSUME_ANY else P.key
                barrier = self.barriers.get(scope, -1)
                groups = {k: v for k, v in groups.items() if k[0] > barrier}
                if groups:
                    self.barriers[scope] = pos
        if limit == 0:
            return
        out: list[Match] = []
        seen: dict[tuple[int, tuple[int, ...]], Match] = {}
        for ms in groups.values():
            for m in ms:
                if self.full_d and any(lab is None for lab in m._labels):
                    keep = [i for i, lab in enumerate(m._labels) if lab is not None]
                    m.positions = tuple(m.positions[i] for i in keep)
                    m._labels = tuple(m._labels[i] for i in keep)
                key = (m._start[KIND_POS], m.positions)
                first = seen.get(key)
                if first is None:
                    seen[key] = m
                    out.append(m)
                elif first._labels != m._labels:  # one complex event: every binding shown
                    first._labels = tuple(a | b for a, b in
                                          zip(first._labels, m._labels, strict=True))
        if limit is not None:
            del out[limit:]
        for i in range(0, len(out), CHUNK):
            yield out[i:i + CHUNK]

