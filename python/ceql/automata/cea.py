"""Compile a CEQL WHERE formula into a complex event automaton (CEA).

The construction is ε-free and linear in the formula (FILTER with OR copies the filtered
sub-formula once per disjunct, as the semantics asks). Every transition carries its guard,
whether it marks the event (``mark``: the event is in D before projection), whether it marks
after the SELECT projection (``pmark``) and the variables it binds the event to.
The initial state has no incoming transitions, as Algorithm 1 requires.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..ir import nodes as A
from ..predicates import AtomTable, GAnd, GAtom, GTrue, GuardTree, StreamIs, TypeIs, guard_from_pred

__all__ = ["CEA", "Transition", "build_cea"]


@dataclass(frozen=True)
class Transition:
    """``src --guard / mark--> dst``; ``vars`` are the variables that bind the event."""

    src: int
    guard: GuardTree
    mark: bool
    pmark: bool
    vars: frozenset[str]
    dst: int


@dataclass(frozen=True)
class CEA:
    """A complex event automaton with states ``0..n_states-1``; state 0 is initial."""

    n_states: int
    finals: frozenset[int]
    transitions: tuple[Transition, ...]

    @property
    def initial(self) -> int:
        return 0

    def outgoing(self) -> tuple[tuple[Transition, ...], ...]:
        out: list[list[Transition]] = [[] for _ in range(self.n_states)]
        for t in self.transitions:
            out[t.src].append(t)
        return tuple(tuple(ts) for ts in out)


@dataclass
class _Frag:
    init: int
    finals: set[int]
    trans: list[Transition]


_TRUE = GTrue()


class _Builder:
    def __init__(self, atoms: AtomTable) -> None:
        self.atoms = atoms
        self.n = 0

    def new(self) -> int:
        self.n += 1
        return self.n - 1

    def build(self, f: A.Formula) -> _Frag:
        if isinstance(f, A.EventType):
            i, q = self.new(), self.new()
            g: GuardTree = GAtom(self.atoms.add(TypeIs(f.name)))
            if f.stream is not None:
                g = GAnd((g, GAtom(self.atoms.add(StreamIs(f.stream)))))
            return _Frag(i, {q}, [Transition(i, g, True, True, frozenset({f.name}), q)])
        if isinstance(f, A.As):
            fr = self.build(f.formula)
            fr.trans = [_with(t, vars=t.vars | {f.var}) if t.mark else t for t in fr.trans]
            return fr
        if isinstance(f, A.Filter):
            frags = []
            for conj in _dnf(f.cond):
                fr = self.build(f.formula)
                for atom in conj:
                    pg = guard_from_pred(atom.pred, self.atoms)
                    fr.trans = [
                        _with(t, guard=_and(t.guard, pg)) if atom.var in t.vars else t
                        for t in fr.trans
                    ]
                frags.append(fr)
            return self._union(frags)
        if isinstance(f, A.Or):
            return self._union([self.build(f.left), self.build(f.right)])
        if isinstance(f, A.Seq):
            return self._seq(self.build(f.left), self.build(f.right), f.contiguous)
        if isinstance(f, A.Plus):
            return self._plus(self.build(f.formula), f.contiguous)
        raise TypeError(f"not a formula: {f!r}")

    def _union(self, frags: list[_Frag]) -> _Frag:
        if len(frags) == 1:
            return frags[0]
        i = self.new()
        trans: list[Transition] = []
        finals: set[int] = set()
        for fr in frags:
            trans += [_with(t, src=i) if t.src == fr.init else t for t in fr.trans]
            finals |= fr.finals
        return _Frag(i, finals, trans)

    def _seq(self, a: _Frag, b: _Frag, contiguous: bool) -> _Frag:
        starts = [t for t in b.trans if t.src == b.init]
        rest = [t for t in b.trans if t.src != b.init]
        if contiguous:
            links = [_with(t, src=f) for f in a.finals for t in starts]
            return _Frag(a.init, set(b.finals), a.trans + links + rest)
        gap = self.new()
        into_gap = [_with(t, dst=gap) for t in a.trans if t.dst in a.finals]
        loop = Transition(gap, _TRUE, False, False, frozenset(), gap)
        from_gap = [_with(t, src=gap) for t in starts]
        return _Frag(a.init, set(b.finals), a.trans + into_gap + [loop] + from_gap + rest)

    def _plus(self, a: _Frag, contiguous: bool) -> _Frag:
        starts = [t for t in a.trans if t.src == a.init]
        if contiguous:
            again = [_with(t, src=f) for f in a.finals for t in starts]
            return _Frag(a.init, set(a.finals), a.trans + again)
        gap = self.new()
        restart = [_with(t, src=gap) for t in starts]
        body = a.trans + restart
        into_gap = [_with(t, dst=gap) for t in body if t.dst in a.finals]
        loop = Transition(gap, _TRUE, False, False, frozenset(), gap)
        return _Frag(a.init, set(a.finals), body + into_gap + [loop])


def _with(t: Transition, **kw: Any) -> Transition:
    return dataclasses.replace(t, **kw)


def _and(a: GuardTree, b: GuardTree) -> GuardTree:
    items: list[GuardTree] = []
    for g in (a, b):
        if isinstance(g, GAnd):
            items.extend(g.items)
        elif not isinstance(g, GTrue):
            items.append(g)
    return GAnd(tuple(dict.fromkeys(items))) if len(items) != 1 else items[0]


def _dnf(c: A.FilterExpr) -> list[list[A.FilterAtom]]:
    if isinstance(c, A.FilterAtom):
        return [[c]]
    if isinstance(c, A.FilterOr):
        return _dnf(c.left) + _dnf(c.right)
    return [x + y for x in _dnf(c.left) for y in _dnf(c.right)]


def _project(t: Transition, select: tuple[str, ...] | None) -> Transition:
    if not t.mark:
        return t
    if select is None:
        return t
    keep = t.vars & frozenset(select)
    return _with(t, pmark=bool(keep), vars=keep)


def _trim(init: int, finals: set[int], trans: Iterable[Transition]) -> CEA:
    """Keep states reachable from ``init`` that can reach a final state; renumber from 0."""
    trans = list(dict.fromkeys(trans))
    fwd: dict[int, set[int]] = {}
    bwd: dict[int, set[int]] = {}
    for t in trans:
        fwd.setdefault(t.src, set()).add(t.dst)
        bwd.setdefault(t.dst, set()).add(t.src)
    reach = _closure({init}, fwd)
    coreach = _closure(set(finals), bwd)
    live = reach & coreach
    order = [init, *sorted(live - {init})]
    num = {q: k for k, q in enumerate(order)}
    kept = tuple(
        _with(t, src=num[t.src], dst=num[t.dst])
        for t in trans
        if t.src in live and t.dst in live
    )
    return CEA(len(order), frozenset(num[q] for q in finals if q in live), kept)


def _closure(start: set[int], edges: dict[int, set[int]]) -> set[int]:
    seen = set(start)
    todo = list(start)
    while todo:
        for r in edges.get(todo.pop(), ()):
            if r not in seen:
                seen.add(r)
                todo.append(r)
    return seen


def build_cea(query: A.Query, atoms: AtomTable) -> CEA:
    """The CEA of the query's WHERE formula, with STRICT applied and the SELECT projection
    recorded in ``pmark``/``vars`` (selection strategies other than STRICT are applied on the
    fly by :mod:`ceql.automata.strategies`)."""
    b = _Builder(atoms)
    fr = b.build(query.where)
    trans = [_project(t, query.select) for t in fr.trans]
    if query.strategy == "STRICT":
        # STRICT keeps D = {i..j}: a run may never skip an event once started.
        trans = [t for t in trans if t.mark]
    return _trim(fr.init, fr.finals, trans)
