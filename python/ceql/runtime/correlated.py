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

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping
from itertools import repeat
from typing import Any, cast

import pyarrow as pa

from ..automata.registers import (
    NEVER,
    VACUOUS,
    CondKill,
    Gate,
    Move,
    RegisterPlan,
    Registers,
    gate_key,
)
from ..constants import CONSUME_ANY, CONSUME_NONE
from ..errors import CeqlResourceError
from ..predicates.values import norm
from .choice import choose
from .enumeration import CHUNK, Enumerator
from .match import Match
from .partitions import Partition, Partitions
from .tecs import (
    KIND_POS,
    LEFT,
    MAX_START,
    MAX_START_KEY,
    NEXT,
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

_Key = tuple[int, Registers]


_FIRST, _LAST_MET, _BOTH = 0, 1, 2  # :func:`_walk`'s stops


def _walk(a: Node, b: Node, stop: int) -> tuple[int, int]:
    """Walk the sets ``D`` of two chains (every union in them joins paths with one set) down
    from their largest positions until they share their rest: (bits, side) — bit 1 when
    ``a`` has a position ``b`` lacks, bit 2 the converse; side 1 (``a``) or -1 (``b``): who
    holds the position in one only met last (the smallest), 0 if none. ``stop``: at the
    first such position (``_FIRST``), when both bits are set (``_BOTH``), or never
    (``_LAST_MET``)."""
    r = d = 0
    while True:
        while a[KIND_POS] < 0:
            a = a[LEFT]
        while b[KIND_POS] < 0:
            b = b[LEFT]
        if a is b:
            return r, d
        na = a[NEXT]
        nb = b[NEXT]
        pa = -1 if na is None else a[KIND_POS]  # a bottom is not itself in D
        pb = -1 if nb is None else b[KIND_POS]
        if pa == pb:
            if pa < 0:
                return r, d
            a = na
            b = nb
            continue
        if pa > pb:
            r |= 1
            d = 1
            a = na
        else:
            r |= 2
            d = -1
            b = nb
        if stop == _FIRST or (stop == _BOTH and r == 3):
            return r, d


def _rank(a: Node, b: Node, last: bool) -> int:
    """Compare two chains by NEXT's order (``last`` False: ``min(D Δ D')`` decides) or
    LAST's (``max``): 1 when ``a`` wins, -1 when ``b`` does, 0 when their sets are equal
    (they may end at different events: a continuation both share does not change the
    answer). Both start with a marked event, so for NEXT an earlier start wins outright."""
    if not last and a[MAX_START] != b[MAX_START]:
        return 1 if a[MAX_START] < b[MAX_START] else -1
    return _walk(a, b, _FIRST if last else _LAST_MET)[1]


def _best(a: Node, b: Node, last: bool) -> Node:
    """The chain of ``a`` and ``b`` the strategy prefers; both when their sets are equal
    (they may bind the events to different variables, and every binding is shown)."""
    r = _rank(a, b, last)
    if r > 0:
        return a
    if r < 0:
        return b
    return union(a, b, None, None)


def _differ(a: Node, b: Node) -> int:
    """How the sets ``D`` of two chains differ: bit 1 when ``a`` has a position ``b`` lacks,
    bit 2 when ``b`` has one ``a`` lacks (0: equal sets, 3: neither holds the other)."""
    return _walk(a, b, _BOTH)[0]


def _maximal(chains: list[Node], node: Node) -> None:
    """Add ``node`` to ``chains``, the ⊆-maximal chains of one MAX run (an antichain): a
    chain whose set another holds cannot be maximal whatever follows, since every
    continuation of the run extends both alike; equal sets are joined."""
    keep: list[Node] = []
    for i, c in enumerate(chains):
        r = _differ(node, c)
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
        T2[key] = [_best(t[0], node, chain == 2)]
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


def _number(v: Any) -> bool:
    """Whether a sorted index can hold ``v`` (a number, not NaN)."""
    t = type(v)
    return (t is int or t is float) and v == v


class _Hashed:
    """The runs of one (state, equality gate): by value, and those any value may move."""

    __slots__ = ("any", "by_value")

    def __init__(self) -> None:
        self.by_value: dict[Any, dict[Registers, None]] = {}
        self.any: dict[Registers, None] = {}

    def add(self, v: Any, regs: Registers) -> None:
        if v is VACUOUS:
            self.any[regs] = None
            return
        try:
            self.by_value.setdefault(v, {})[regs] = None
        except TypeError:  # not hashable: looked at by every event
            self.any[regs] = None

    def remove(self, v: Any, regs: Registers) -> None:
        if v is VACUOUS:
            self.any.pop(regs, None)
            return
        try:
            bucket = self.by_value.get(v)
        except TypeError:  # not hashable: it was added to ``any``
            self.any.pop(regs, None)
            return
        if bucket is not None:
            bucket.pop(regs, None)
            if not bucket:
                del self.by_value[v]

    def find(self, x: Any) -> list[Registers] | None:
        """The runs an event with value ``x`` may move (None: look at all)."""
        try:
            hit = self.by_value.get(x)
        except TypeError:
            return None
        out = list(self.any)
        if hit:
            out += hit
        return out


class _Sorted:
    """The runs of one (state, order gate), sorted by the value they hold (numbers only;
    the rest, and runs without a value yet, are looked at by every event)."""

    __slots__ = ("any", "keys", "op", "runs")

    def __init__(self, op: str) -> None:
        self.op = op
        self.keys: list[Any] = []
        self.runs: list[Registers] = []
        self.any: dict[Registers, None] = {}

    def add(self, v: Any, regs: Registers) -> None:
        if not _number(v):
            self.any[regs] = None
            return
        i = bisect_right(self.keys, v)
        self.keys.insert(i, v)
        self.runs.insert(i, regs)

    def remove(self, v: Any, regs: Registers) -> None:
        if not _number(v):
            self.any.pop(regs, None)
            return
        _unlist(self.keys, self.runs, v, regs)

    def split(self, x: Any) -> tuple[list[Registers], list[Registers]] | None:
        """:meth:`find` in two: the runs whose value ``x`` compares with by the gate's
        operator — a number, so ``x`` compares so with each of the run's values (its key
        is their largest for ``>``, ``>=``, else their smallest) —, and the rest to look at."""
        if not _number(x):
            return None
        return self._passing(x), list(self.any)

    def find(self, x: Any) -> list[Registers] | None:
        """The runs an event with value ``x`` may move: those whose value ``x`` compares
        with by the gate's operator (None: look at all)."""
        if not _number(x):
            return None
        out = self._passing(x)
        if self.any:
            out += self.any
        return out

    def _passing(self, x: Any) -> list[Registers]:
        """The runs whose value the number ``x`` compares with by the gate's operator."""
        op = self.op
        if op == ">":
            return self.runs[:bisect_left(self.keys, x)]
        if op == ">=":
            return self.runs[:bisect_right(self.keys, x)]
        if op == "<":
            return self.runs[bisect_right(self.keys, x):]
        return self.runs[bisect_left(self.keys, x):]


def _unlist(keys: list[Any], runs: list[Registers], k: Any, regs: Registers) -> None:
    """Remove run ``regs`` held under key ``k`` from parallel sorted lists."""
    i = bisect_left(keys, k)
    while i < len(keys) and keys[i] == k:
        if runs[i] is regs or runs[i] == regs:
            del keys[i]
            del runs[i]
            return
        i += 1


def _masked(g: Gate, regs: Registers) -> Registers:
    """``regs`` without the PREV record gate ``g`` reads (what runs of one staircase share)."""
    conds, accs = regs[g.scope]
    lists, _ = conds[g.cond]
    conds = (*conds[:g.cond], (lists, None), *conds[g.cond + 1:])
    return (*regs[:g.scope], (conds, accs), *regs[g.scope + 1:])


class _Stair:
    """The runs of one (state, ``X[a > PREV(b)]`` gate) under NEXT or LAST (chain mode),
    pruned by dominance. Two runs whose registers differ only in the previous ``b`` have the
    same futures except that the one with the smaller ``b`` (for ``>``, ``>=``; the larger
    for ``<``, ``<=``) can take every event the other can, reaching equal registers; if its
    chain is also preferred, the other can never win and is dropped. So, per group of runs
    with otherwise equal registers, chains only get better towards the stricter end, and the
    best run an event can extend is the last one it passes: one bisection, not a scan."""

    __slots__ = ("any", "g", "groups", "last", "q", "states", "up")

    def __init__(self, g: Gate, q: int, states: dict[_Key, list[Node]], last: bool) -> None:
        self.g = g
        self.up = g.op[0] == ">"  # passing runs are those with a smaller key
        self.states = states
        self.last = last
        self.q = q
        #: per masked registers: (sorted keys, their runs); keys ascending if ``up``, else
        #: descending (stored negated), so "passing" is always a prefix
        self.groups: dict[Registers, tuple[list[Any], list[Registers]]] = {}
        self.any: dict[Registers, None] = {}

    def _chain(self, regs: Registers) -> Node:
        return self.states[(self.q, regs)][0]

    def add(self, v: Any, regs: Registers) -> list[Registers]:
        """Add a run; the runs this makes dominated (perhaps ``regs`` itself)."""
        if not _number(v):
            self.any[regs] = None
            return []
        keys, runs = self.groups.setdefault(_masked(self.g, regs), ([], []))
        k = v if self.up else -v
        i = bisect_left(keys, k)
        c = self._chain(regs)
        if i and _rank(self._chain(runs[i - 1]), c, self.last) > 0:
            return [regs]
        keys.insert(i, k)
        runs.insert(i, regs)
        return self._prune(keys, runs, i, c)

    def improved(self, v: Any, regs: Registers) -> list[Registers]:
        """The run's chain got better: the runs that makes dominated."""
        if not _number(v):
            return []
        keys, runs = self.groups[_masked(self.g, regs)]
        k = v if self.up else -v
        i = bisect_left(keys, k)
        while i < len(runs) and runs[i] != regs:
            i += 1
        return self._prune(keys, runs, i, self._chain(regs)) if i < len(runs) else []

    def _prune(self, keys: list[Any], runs: list[Registers], i: int,
               c: Node) -> list[Registers]:
        j = i + 1
        while j < len(runs) and _rank(c, self._chain(runs[j]), self.last) > 0:
            j += 1
        dead = runs[i + 1:j]
        del keys[i + 1:j]
        del runs[i + 1:j]
        return dead

    def remove(self, v: Any, regs: Registers) -> None:
        if not _number(v):
            self.any.pop(regs, None)
            return
        group = self.groups.get(_masked(self.g, regs))
        if group is not None:
            _unlist(*group, v if self.up else -v, regs)

    def find(self, x: Any) -> list[Registers] | None:
        """The best run per group that an event with value ``x`` passes (and those its
        chain ties with), and the runs without a number."""
        if not _number(x):
            return None
        k = x if self.up else -x
        strict = self.g.op in (">", "<")
        out = list(self.any)
        for keys, runs in self.groups.values():
            i = bisect_left(keys, k) if strict else bisect_right(keys, k)
            if i:
                top = runs[i - 1]
                out.append(top)
                c = self._chain(top)
                i -= 1
                while i and _rank(c, self._chain(runs[i - 1]), self.last) == 0:
                    i -= 1
                    out.append(runs[i])
        return out


class _Index:
    """Register runs of one partition by state, and by value for each gate (see
    :meth:`RegisterPlan.gate`: a hash index for an equality, a sorted one for an order
    comparison); built from ``P.states`` and rebuilt when that dict was replaced (sweeps,
    consumption, snapshots)."""

    __slots__ = ("at", "by_gate", "chain", "entries", "gated", "moved", "ref", "since")

    def __init__(self, plan: RegisterPlan, states: dict[_Key, list[Node]],
                 chain: int = 0) -> None:
        self.ref = states
        self.chain = chain
        #: per state, its runs (none left: an empty dict, keeping the order states are
        #: visited in), each with its value for each of the state's gates
        self.at: dict[int, dict[Registers, tuple[Any, ...]]] = {}
        self.by_gate: dict[tuple[int, Gate], _Hashed | _Sorted | _Stair] = {}
        #: per state, its gates with their indexes (in the order of ``state_gates``)
        self.entries: dict[int, tuple[tuple[Gate, _Hashed | _Sorted | _Stair], ...]] = {}
        self.since = 0  # events since the last pass that dropped expired runs
        #: per move (by id), the index of its gate and the attribute it reads, or no index
        self.gated: dict[int, tuple[_Hashed | _Sorted | _Stair | None, str]] = {}
        #: whether a state gained its first run or lost its last since the partition's
        #: signature was computed
        self.moved = True
        dead: list[_Key] = []
        for q, regs in states:
            dead += self.add(plan, q, regs)
        self.drop(plan, dead)

    def _entries(self, plan: RegisterPlan,
                 q: int) -> tuple[tuple[Gate, _Hashed | _Sorted | _Stair], ...]:
        ents = self.entries.get(q)
        if ents is None:
            found = []
            for g in plan.state_gates(q):
                entry = self.by_gate[(q, g)] = (
                    _Hashed() if g.op == "=" else
                    _Stair(g, q, self.ref, self.chain == 2) if self.chain in (1, 2) and g.prev >= 0
                    else
                    _Sorted(g.op))
                found.append((g, entry))
            ents = self.entries[q] = tuple(found)
        return ents

    def add(self, plan: RegisterPlan, q: int, regs: Registers) -> list[_Key]:
        """Index a run of ``P.states``; the runs a staircase found dominated (to drop)."""
        ents = self.entries.get(q)
        if ents is None:
            ents = self._entries(plan, q)
        values = tuple(map(gate_key, plan.state_gates(q), repeat(regs)))
        runs = self.at.get(q)
        if runs is None:
            runs = self.at[q] = {}
        if not runs:
            self.moved = True
        runs[regs] = values
        dead: list[_Key] = []
        for (_, entry), v in zip(ents, values, strict=True):
            if v is NEVER:
                continue
            if type(entry) is _Stair:
                dead += [(q, r) for r in entry.add(v, regs)]
            else:
                entry.add(v, regs)
        return dead

    def improved(self, plan: RegisterPlan, q: int, regs: Registers) -> list[_Key]:
        """A run's chain got better (chain mode): the runs a staircase now finds dominated."""
        dead: list[_Key] = []
        for g, entry in self._entries(plan, q):
            if isinstance(entry, _Stair):
                v = gate_key(g, regs)
                if v is not NEVER:
                    dead += [(q, r) for r in entry.improved(v, regs)]
        return dead

    def drop(self, plan: RegisterPlan, dead: list[_Key]) -> None:
        """Remove dominated runs from the partition and from every index."""
        states = self.ref
        for key in dead:
            if states.pop(key, None) is not None:
                self.remove(plan, key[0], key[1])

    def remove(self, plan: RegisterPlan, q: int, regs: Registers) -> None:
        runs = self.at.get(q)
        values = None
        if runs is not None:
            values = runs.pop(regs, None)
            if not runs:
                self.moved = True
        ents = self.entries.get(q)
        if ents is None:
            ents = self._entries(plan, q)
        if values is None:
            values = tuple(map(gate_key, plan.state_gates(q), repeat(regs)))
        for (_, entry), v in zip(ents, values, strict=True):
            if v is not NEVER:
                entry.remove(v, regs)

    def killable(self, plan: RegisterPlan, q: int, event: Mapping[str, Any]
                 ) -> tuple[list[Registers], list[Registers]]:
        """The runs at gap ``q`` a β event ends for sure, and those it may end (to check;
        all without a kill gate). A kill gate is the gap's only condition, one comparison
        of two attributes: a sorted index decides it for the runs it finds by number."""
        g = plan.kill_gates.get(q)
        if g is not None:
            entry = self.by_gate.get((q, g))
            if entry is not None:
                x = norm(event.get(g.attr))
                if type(entry) is _Sorted:
                    split = entry.split(x)
                    if split is not None:
                        return split
                else:
                    found = entry.find(x)
                    if found is not None:
                        return [], found
        return [], list(self.at.get(q, ()))

    def candidates(self, plan: RegisterPlan, q: int, m: Move,
                   event: Mapping[str, Any]) -> list[Registers]:
        """The runs at ``q`` that ``m`` may move on ``event`` (a superset)."""
        ge = self.gated.get(id(m))
        if ge is None:
            g = plan.gate(m)
            if g is None:
                ge = self.gated[id(m)] = (None, "")
            else:
                entry = self.by_gate.get((q, g))
                if entry is None:
                    return []
                ge = self.gated[id(m)] = (entry, g.attr)
        entry, attr = ge
        if entry is not None:
            found = entry.find(norm(event.get(attr)))
            if found is not None:
                return found
        return list(self.at.get(q, ()))


class RegisterRuns:
    """Algorithm 1 over (state, registers) runs for one query over one evaluation's
    partitions (same interface as :class:`~ceql.runtime.algorithm.Runs`)."""

    __slots__ = ("base", "chain", "cols", "consume", "eps", "fate", "on_full", "parts", "plan",
                 "ranked", "strategy_name")

    def __init__(self, plan: RegisterPlan, parts: Partitions, eps: Any, consume: str,
                 ranked: bool = False, strategy_name: str = "ALL") -> None:
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
                        if plan.killed(ck, regs, event):
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
                regs2 = advance(regs, m, event)
                if move_kills and regs2 is not None and m.kills:
                    regs2 = plan.passed(m, c, regs2, event)
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
        for m in start:
            regs = plan.advance(empty, m, event)
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
            best = accs[0]
            for a in accs[1:]:
                if a is not best:
                    best = _best(best, a, self.chain == 2)
            accs = [best]
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
        eps = self._enter(P, wkey)
        fifo = None if self.ranked else P.fifo
        chain = self.chain
        states: dict[_Key, list[Node]] = P.states  # type: ignore[assignment]
        index: _Index | None = P.aux
        if index is None or index.ref is not states:
            index = P.aux = _Index(plan, states, self.chain)
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
                    regs2 = advance(regs, m, event)
                    if move_kills and regs2 is not None and m.kills:
                        regs2 = plan.passed(m, c, regs2, event)
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
                dead += [(q, regs) for regs in maybe if plan.killed(ck, regs, event)]
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
                ul[0] = _best(old, node, chain == 2)
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

    def _record(self, plan: RegisterPlan, states: dict[_Key, list[Node]], index: _Index,
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

    def _drop_expired(self, states: dict[_Key, list[Node]], index: _Index, wkey: Any,
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
            regs2 = regs if event is None else self.plan.advance(regs, m, event)
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
        if m.accepts and plan.accepts(regs):
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
                 strategy_name: str, fate: frozenset[str]) -> None:
        super().__init__(plan, parts, eps, consume, True, strategy_name)
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
             tkey: Any) -> Iterator[list[Match]]:
        limit = self.user_limit
        ranked = self.strategy in ("NEXT", "LAST", "MAX")
        plan = self.plan
        if not ranked and not self.full_d and plan is not None and plan.one_path:
            return self.walk(P, accs, pos, wkey, tkey, limit)
        return self._collected(P, accs, pos, wkey, tkey, limit, ranked)

    def _collected(self, P: Partition, accs: list[Node], pos: int, wkey: Any, tkey: Any,
                   limit: int | None, ranked: bool) -> Iterator[list[Match]]:
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

