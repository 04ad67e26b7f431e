"""A partition's register runs indexed by state, and by value for each gate of a state (see
:meth:`ceql.automata.registers.RegisterPlan.gate`): a hash index for an equality with an earlier
variable, a sorted one for an order comparison, and under NEXT or LAST a staircase that drops
runs another dominates. An event then finds the runs it may move by a lookup or a bisection
instead of a scan."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from itertools import repeat
from typing import Any

from ..automata.registers import NEVER, VACUOUS, Gate, Move, RegisterPlan, Registers, gate_key
from ..predicates.values import norm
from .chains import rank
from .tecs import Node

__all__ = ["RunIndex", "RunKey"]

#: A run of a partition: its automaton state and its registers.
RunKey = tuple[int, Registers]
_Key = RunKey


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
        if i and rank(self._chain(runs[i - 1]), c, self.last) > 0:
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
        while j < len(runs) and rank(c, self._chain(runs[j]), self.last) > 0:
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
                while i and rank(c, self._chain(runs[i - 1]), self.last) == 0:
                    i -= 1
                    out.append(runs[i])
        return out


class RunIndex:
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

