"""Compile a CEQL WHERE formula into a complex event automaton (CEA).

The construction is ε-free and linear in the formula for the shapes queries are made of
(FILTER with OR copies the filtered sub-formula once per disjunct, as the semantics asks).
Every transition carries its guard, whether it marks the event (``mark``: the event is in D
before projection), whether it marks after the SELECT projection (``pmark``) and the variables
it binds the event to. The initial state has no incoming transitions, as Algorithm 1 requires.

Linear work: fragments keep their transitions as a rope (concatenated in O(1), flattened once)
and track the two sets every composition reads (the transitions leaving the initial state and
those entering a final state), so no step rescans what it did not create. An OR chain is one
n-ary union. Iterations that repeat what an enclosing one repeats already are built once (see
:func:`_dropped`): ``(φ+)+``, ``(φ:+)+`` and ``(φ+):+`` equal ``φ+``, ``(φ:+):+`` equals ``φ:+``
(both concatenate the same blocks of ``φ``), also through AS, which commutes with iteration.
Before a contiguous step the final states without outgoing transitions become one, so ``(A OR
B OR …) : C`` links once, not once per alternative.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import TypeAlias, TypeVar, cast

from ..errors import CeqlResourceError, CeqlValidationError
from ..ir import (
    chain_operands,
    condition_refs,
    is_correlated,
    output_variables,
    seq_elements,
    stream_views,
    top_sequence,
    variable_leaves,
)
from ..ir import nodes as A
from ..predicates import (
    AtomTable,
    GAnd,
    GAtom,
    GNot,
    GOr,
    GTrue,
    GuardTree,
    GUnless,
    StreamIs,
    TypeIs,
    guard_from_pred,
)
from .mandatory import Mandatory, mandatory_elements

__all__ = ["CEA", "Transition", "build_cea"]


#: A FILTER leaf checked between events (see :mod:`ceql.predicates.between`).
ScopeLeaf = A.FilterAtom | A.FilterMatch
#: See :attr:`Transition.kills`.
Kill = tuple[GuardTree, str, tuple[tuple[int, tuple[A.FilterAtom, ...]], ...], bool]
_NO_KILLS: tuple[Kill, ...] = ()
_NO_SCOPES: tuple[tuple[int, frozenset[str]], ...] = ()
_NO_OPENS: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Transition:
    """``src --guard / mark--> dst``; ``vars`` are the variables that bind the event.

    Conditions between events: ``scopes`` pairs each *scope* (a FILTER conjunction holding
    such conditions, numbered in :attr:`CEA.scopes`) whose filtered formula this transition
    belongs to with the variables the event binds there; ``opens`` are the scopes whose
    formula this transition starts (a new valuation of it: its own registers). Both are empty
    in a query without conditions between events.
    """

    src: int
    guard: GuardTree
    mark: bool
    pmark: bool
    vars: frozenset[str]
    dst: int
    scopes: tuple[tuple[int, frozenset[str]], ...] = _NO_SCOPES
    opens: frozenset[int] = _NO_OPENS
    #: the gaps of ``NOT β AS n`` with conditions on ``n`` that read other events which
    #: an event taking this transition lies in (the gap's self-loop, and in a conjunction's
    #: product every move of the other side meanwhile): per gap ``(β's guard, the negated
    #: name, per scope holding such conditions its index and those conditions, deferred)``.
    #: Not deferred (they read only variables complete before the NOT): a β event ends the
    #: runs whose registers make every condition hold (``RegisterPlan.killed``); deferred:
    #: it is recorded in the registers, and the valuation fails when it completes if a
    #: recorded one satisfies them all (``RegisterPlan.accepts``)
    kills: tuple[Kill, ...] = _NO_KILLS


@dataclass(frozen=True)
class CEA:
    """A complex event automaton with states ``0..n_states-1``; state 0 is initial.

    ``scopes[k]`` are the conditions between events of scope ``k`` (see
    :class:`Transition`)."""

    n_states: int
    finals: frozenset[int]
    transitions: tuple[Transition, ...]
    scopes: tuple[tuple[ScopeLeaf, ...], ...] = ()
    #: the events a leading NOT forbids before a match (its guard; None: no leading NOT)
    leading: GuardTree | None = None
    #: the events a trailing NOT forbids after a match (its guard; None: no trailing NOT)
    trailing: GuardTree | None = None
    #: the FILTER atoms on a leading / trailing NOT's name that read the match's events
    leading_conds: tuple[A.FilterAtom, ...] = ()
    trailing_conds: tuple[A.FilterAtom, ...] = ()
    #: row conditions every match has an event for (:mod:`.mandatory`; lazy evaluation)
    mandatory: tuple[Mandatory, ...] = ()
    #: the SELECT list when a leading or trailing NOT's conditions read a variable it leaves
    #: out: the automaton then marks every variable (as ``SELECT *``, the list's names among
    #: the labels) and the edge stage projects after its check (None: projected here)
    edge_select: frozenset[str] | None = None
    #: SELECT LAST with a leading or trailing NOT: the automaton is determinized under ALL, keeps
    #: runs apart by start (none expires), and the edge stage picks the last complex event that
    #: passes (``runtime/edges.py``)
    edge_last: bool = False
    #: NEXT, LAST or MAX chosen by the edge stage after its check, among the complex events
    #: at an end of runs kept apart by their fate (their start, and the positions of the
    #: events labelled with ``edge_reads``; one fate for all that start outside the window):
    #: see :func:`_rank_after` and ``runtime/correlated.py``
    edge_rank: bool = False
    #: SELECT NEXT with a leading NOT whose conditions read the match (and no trailing one):
    #: as ``edge_last``, but runs are kept apart by start and by the positions of the events
    #: labelled with ``edge_reads`` (the variables those conditions read), and the edge stage
    #: picks NEXT's choice among the complex events that pass (``runtime/edge_last.py``)
    edge_next: bool = False
    edge_reads: frozenset[str] = frozenset()

    @property
    def initial(self) -> int:
        return 0

    def outgoing(self) -> tuple[tuple[Transition, ...], ...]:
        out: list[list[Transition]] = [[] for _ in range(self.n_states)]
        for t in self.transitions:
            out[t.src].append(t)
        return tuple(tuple(ts) for ts in out)


class _Tr:
    """A transition under construction (mutable: a union renames the sources of its parts'
    initial transitions in place, AS and FILTER update the parts they wrap)."""

    __slots__ = ("deps", "dst", "guard", "kills", "mark", "opens", "scoped", "src", "vars")

    def __init__(self, src: int, guard: GuardTree, mark: bool, vars: frozenset[str],
                 dst: int) -> None:
        self.src = src
        self.guard = guard
        self.mark = mark
        self.vars = vars
        self.dst = dst
        self.scoped = _NO_SCOPES
        self.opens = _NO_OPENS
        self.kills = _NO_KILLS
        #: records whose final guards (and kills) this one's is ANDed with (a conjunction's
        #: product reads its operands' guards, which a negation's gap only gets at the end)
        self.deps: tuple[_Tr, ...] = ()

    def moved(self, src: int | None = None, dst: int | None = None) -> _Tr:
        r = _Tr(self.src if src is None else src, self.guard, self.mark, self.vars,
                self.dst if dst is None else dst)
        r.scoped = self.scoped
        r.opens = self.opens
        r.deps = self.deps
        return r


# Transitions in order: a record or a list of ropes (concatenation without copying).
_Rope: TypeAlias = "_Tr | Sequence[_Rope]"


def _records(rope: _Rope) -> Iterator[_Tr]:
    """The transitions of ``rope`` in order, without recursion."""
    todo: list[_Rope] = [rope]
    while todo:
        r = todo.pop()
        if isinstance(r, _Tr):
            yield r
        else:
            todo.extend(reversed(r))


class _Neg:
    """A ``NOT β`` element of a sequence: the events it forbids are those of ``base`` (β's
    event types) on which every FILTER atom about its name holds. ``loops`` are the gap
    self-loops it guards (none for a leading or trailing one)."""

    __slots__ = ("base", "before", "conds", "deferred", "edge", "guards", "kill_scopes",
                 "loops", "name", "node", "shared")

    def __init__(self, node: A.Not, base: GuardTree, name: str | None) -> None:
        self.node = node
        self.base = base
        self.name = name
        self.guards: list[GuardTree] = []
        self.loops: list[_Tr] = []
        #: a leading or trailing NOT (checked by the runtime around each match)
        self.edge = False
        #: its FILTER atoms that read other events (an edge's; between, see ``kill_scopes``)
        self.conds: list[A.FilterAtom] = []
        #: between two elements: how many occurrences of each variable the elements before
        #: it have (an atom on n may read a variable all of whose events come before)
        self.before: dict[str, int] = {}
        #: per scope holding conditions on n that read other events: its index, those
        #: conditions (checked on the runs waiting in the gap, or on the β events recorded
        #: there when the scope completes)
        self.kill_scopes: list[tuple[int, tuple[A.FilterAtom, ...]]] = []
        #: its gap was copied by an iteration (each copy sees only its own iteration's
        #: events, and a condition reads every iteration's)
        self.shared = False
        #: some condition reads a variable not complete before the NOT in its FILTER's
        #: valuation, or the NOT is under an iteration there: β events are recorded in the
        #: gap and judged when the valuation completes
        self.deferred = False

    def kill(self) -> GuardTree:
        """The guard of the events this negation forbids."""
        g = self.base
        for x in self.guards:
            g = _and(g, x)
        return g


@dataclass
class _Frag:
    """A partial automaton. ``starts`` are its transitions from ``init`` and ``ins`` those
    into ``finals``, both in rope order; ``sinks`` are the finals without outgoing
    transitions. ``rope`` may also hold transitions from states that lost every incoming
    transition (``_trim`` drops them)."""

    init: int
    finals: set[int]
    rope: _Rope
    starts: list[_Tr]
    ins: list[_Tr]
    sinks: set[int]
    #: the negations between elements of a sequence inside this fragment
    negs: list[_Neg] = dataclass_field(default_factory=list)

    def merge_sinks(self) -> None:
        """Make the sinks one state (they are equivalent), so that a contiguous step links
        from one state rather than from each alternative's own (quadratic otherwise)."""
        if len(self.sinks) < 2:
            return
        keep = min(self.sinks)
        for r in self.ins:
            if r.dst in self.sinks:
                r.dst = keep
        self.finals = (self.finals - self.sinks) | {keep}
        self.sinks = {keep}


_TRUE = GTrue()
# The builder's explicit stack: ("build", (formula, under)) expands a formula, the others
# combine the fragments built last: ("as", var), ("filter", conjunctions), ("or", n),
# ("seq", contiguous), ("plus", contiguous).
_Step = tuple[str, object]


class _Builder:
    def __init__(self, atoms: AtomTable, top: A.Formula | None = None,
                 views: dict[str, frozenset[str]] | None = None) -> None:
        self.atoms = atoms
        #: event type T → the streams S whose S>T the query names while WHERE writes no S>T
        #: leaf (ceql.ir.stream_views): a T leaf's transition is split by stream so that its
        #: events of S bind S>T
        self.views = views or {}
        self.n = 0
        self.scopes: list[tuple[ScopeLeaf, ...]] = []
        #: the top-level sequence (the only one that may start or end with NOT)
        self.top = top
        #: its leading and trailing NOT, if any: not part of the automaton (the runtime
        #: checks them around each match, see ceql.runtime.edges)
        self.edges: dict[str, _Neg] = {}

    def new(self) -> int:
        self.n += 1
        return self.n - 1

    def build(self, root: A.Formula) -> _Frag:
        """The fragment of ``root``: a post-order walk on an explicit stack (no recursion)."""
        done: list[_Frag] = []
        todo: list[_Step] = [("build", (root, _KEEP))]
        while todo:
            op, arg = todo.pop()
            if op == "build":
                f, under = cast(tuple[A.Formula, int], arg)
                self._expand(f, under, todo, done)
            elif op == "as":
                var = cast(str, arg)
                for r in _records(done[-1].rope):
                    if r.mark:
                        r.vars = r.vars | {var}
            elif op == "filter":
                conjs, formula = cast(tuple[list[list[ScopeLeaf]], A.Formula], arg)
                frags = done[len(done) - len(conjs):]
                del done[len(done) - len(conjs):]
                for fr, conj in zip(frags, conjs, strict=True):
                    negs = {n.name: n for n in (*fr.negs, *self.edges.values())
                            if n.name is not None}
                    reading: dict[str, list[A.FilterAtom]] = {}
                    conj = [leaf for leaf in conj
                            if not self._negated(leaf, negs, formula, reading)]
                    between = tuple(leaf for leaf in conj if is_correlated(leaf))
                    for atom in conj:
                        if not isinstance(atom, A.FilterAtom) or atom in between:
                            continue
                        pg = guard_from_pred(atom.pred, self.atoms)
                        for r in _records(fr.rope):
                            if atom.var in r.vars:
                                r.guard = _and(r.guard, pg)
                    if between:
                        self._scope(fr, between)
                        for name, leaves in reading.items():
                            negs[name].kill_scopes.append((len(self.scopes) - 1, tuple(leaves)))
                done.append(self._union(frags))
            elif op == "or":
                n = cast(int, arg)
                frags = done[len(done) - n:]
                del done[len(done) - n:]
                done.append(self._union(frags))
            elif op == "seq":
                b = done.pop()
                a = done.pop()
                done.append(self._seq(a, b, bool(arg)))
            elif op == "seq1":
                contiguous, node, before = cast(tuple[bool, "A.Not | None", dict[str, int]], arg)
                b = done.pop()
                a = done.pop()
                neg = None
                if node is not None:
                    neg = self._neg(node)
                    neg.before = before
                done.append(self._seq(a, b, contiguous, neg))
            elif op == "and":
                b = done.pop()
                a = done.pop()
                done.append(self._conj(a, b))
            else:  # "plus"
                done.append(self._plus(done.pop(), bool(arg)))
        return done[0]

    def _scope(self, fr: _Frag, leaves: tuple[ScopeLeaf, ...]) -> None:
        """Make ``fr`` (complete) a scope of conditions between events: its marked
        transitions note the variables they bind in it, its first ones open it."""
        k = len(self.scopes)
        self.scopes.append(leaves)
        for r in _records(fr.rope):
            if r.mark:
                r.scoped = (*r.scoped, (k, r.vars))
        for r in fr.starts:
            r.opens = r.opens | {k}

    def _expand(self, f: A.Formula, under: int, todo: list[_Step],
                 done: list[_Frag]) -> None:
        """Push the steps that build ``f`` (children first, left to right).

        ``under`` says which iterations ``f`` may drop because an enclosing one repeats it
        already (see :func:`_dropped`).
        """
        if isinstance(f, A.EventType):
            i, q = self.new(), self.new()
            g: GuardTree = GAtom(self.atoms.add(TypeIs(f.name)))
            bound = {f.name}
            if f.stream is not None:
                g = GAnd((g, GAtom(self.atoms.add(StreamIs(f.stream)))))
                bound.add(f"{f.stream}>{f.name}")  # the variable S>T: this leaf's events
            others = self.views.get(f.name, frozenset()) - {f.stream}
            if not others:
                r = _Tr(i, g, True, frozenset(bound), q)
                done.append(_Frag(i, {q}, r, [r], [r], {q}))
                return
            rs = [_Tr(i, _and(g, split), True, frozenset(bound | more), q)
                  for split, more in self._by_stream(f, sorted(others))]
            done.append(_Frag(i, {q}, rs, list(rs), list(rs), {q}))
        elif isinstance(f, A.As):  # AS commutes with iteration: (φ AS x)+ = (φ+) AS x
            todo += [("as", f.var), ("build", (f.formula, under))]
        elif isinstance(f, A.Filter):
            conjs = _dnf(f.cond)
            todo.append(("filter", (conjs, f.formula)))
            todo += [("build", (f.formula, _KEEP))] * len(conjs)
        elif isinstance(f, A.Or):
            leaves = _or_leaves(f)
            todo.append(("or", len(leaves)))
            todo += [("build", (leaf, under)) for leaf in reversed(leaves)]
        elif isinstance(f, A.Seq):
            # the whole chain at once: its inner Seq nodes are never expanded on their own
            # (flattening each would walk the chain again: quadratic)
            elems = seq_elements(f)
            # NOT elements: each guards the gap it stands in
            for i, where in ((0, "leading"), (-1, "trailing")):
                edge = elems[i][0]
                if isinstance(edge, A.Not):
                    if f is not self.top:
                        raise _edge_error(edge)
                    neg = self.edges[where] = self._neg(edge)
                    neg.edge = True
            elems = [e for k, e in enumerate(elems)
                     if not (isinstance(e[0], A.Not) and k in (0, len(elems) - 1))]
            positives: list[A.Formula] = []
            joins: list[tuple[bool, A.Not | None, dict[str, int]]] = []
            pending: A.Not | None = None
            counts: dict[str, int] = {}  # occurrences of each variable in the elements so far
            for e, contiguous in elems:
                if isinstance(e, A.Not):
                    pending = e
                    continue
                if positives:
                    joins.append((contiguous, pending, dict(counts) if pending else counts))
                positives.append(e)
                for v, n in _occurrences(e, self.views).items():
                    counts[v] = counts.get(v, 0) + n
                pending = None
            # in execution order: each element built, then joined to what came before (the
            # order states are numbered in, as a nested build would)
            steps: list[_Step] = [("build", (positives[0], _KEEP))]
            for e, join in zip(positives[1:], joins, strict=True):
                steps += [("build", (e, _KEEP)), ("seq1", join)]
            todo += reversed(steps)
        elif isinstance(f, A.And):
            todo += [("and", None), ("build", (f.right, _KEEP)), ("build", (f.left, _KEEP))]
        elif isinstance(f, A.Not):
            raise CeqlValidationError(
                "NOT stands only as an element of a ';' sequence: between two elements "
                "(A ; NOT B ; C), or first or last of the top-level sequence with WITHIN")
        elif isinstance(f, A.Plus):
            if _dropped(f, under):
                todo.append(("build", (f.formula, under)))
                return
            # A chain of iterations through AS is one: (φ+)+ = (φ:+)+ = (φ+):+ = φ+ and
            # (φ:+):+ = φ:+.
            contiguous = f.contiguous
            body = f.formula
            names: list[str] = []
            while isinstance(body, A.Plus | A.As):
                if isinstance(body, A.Plus):
                    contiguous = contiguous and body.contiguous
                else:
                    names.append(body.var)
                body = body.formula
            todo += [("as", name) for name in names]
            todo += [("plus", contiguous),
                     ("build", (body, _UNDER_CPLUS if contiguous else _UNDER_PLUS))]
        else:
            raise TypeError(f"not a formula: {f!r}")

    def _by_stream(self, f: A.EventType, others: list[str]) -> list[tuple[GuardTree, set[str]]]:
        """The leaf ``f``'s events split by the streams ``others`` (named as ``S>T``, not
        ``f``'s own): per part, the guard it adds and the ``S>T`` variables its events bind.
        An event without a stream belongs to every stream (``StreamIs`` holds for it)."""
        t = f.name
        atom = {s: GAtom(self.atoms.add(StreamIs(s))) for s in others}
        if f.stream is not None:  # f's events are of its stream or of none (of every one)
            first = atom[others[0]]
            return [(GNot(first), set()), (first, {f"{s}>{t}" for s in others})]
        parts: list[tuple[GuardTree, set[str]]] = [
            (_and(atom[s], _all(GNot(atom[o]) for o in others if o != s)), {f"{s}>{t}"})
            for s in others]
        if len(others) > 1:  # of no stream: of every one
            parts.append((_all(atom.values()), {f"{s}>{t}" for s in others}))
        parts.append((_all(GNot(a) for a in atom.values()), set()))
        return parts

    def _union(self, frags: list[_Frag]) -> _Frag:
        if len(frags) == 1:
            return frags[0]
        i = self.new()
        finals: set[int] = set()
        sinks: set[int] = set()
        starts: list[_Tr] = []
        ins: list[_Tr] = []
        for fr in frags:
            for r in fr.starts:
                r.src = i
            starts += fr.starts
            ins += fr.ins
            finals |= fr.finals
            sinks |= fr.sinks
        return _Frag(i, finals, [fr.rope for fr in frags], starts, ins, sinks,
                     [n for fr in frags for n in fr.negs])

    def _seq(self, a: _Frag, b: _Frag, contiguous: bool, neg: _Neg | None = None) -> _Frag:
        # b's initial transitions are replaced by copies from a's finals (or the gap); the
        # originals stay in b's rope, unreachable.
        rest_ins = [r for r in b.ins if r.src != b.init]
        negs = a.negs + b.negs + ([] if neg is None else [neg])
        if contiguous:
            a.merge_sinks()
            links = [r.moved(src=f) for f in sorted(a.finals) for r in b.starts]
            ins = [r for r in links if r.dst in b.finals] + rest_ins
            return _Frag(a.init, set(b.finals), [a.rope, links, b.rope], a.starts, ins,
                         b.sinks, negs)
        gap = self.new()
        into_gap = [r.moved(dst=gap) for r in a.ins]
        loop = _Tr(gap, _TRUE, False, frozenset(), gap)
        if neg is not None:  # its guard is set once the FILTERs around it are known
            neg.loops.append(loop)
        from_gap = [r.moved(src=gap) for r in b.starts]
        starts = a.starts + [r for r in into_gap if r.src == a.init]
        ins = [r for r in from_gap if r.dst in b.finals] + rest_ins
        rope: list[_Rope] = [a.rope, into_gap, loop, from_gap, b.rope]
        return _Frag(a.init, set(b.finals), rope, starts, ins, b.sinks, negs)

    def _plus(self, a: _Frag, contiguous: bool) -> _Frag:
        for neg in a.negs:  # (a FILTER inside the iteration judges each iteration alone)
            neg.shared = True
        if contiguous:
            a.merge_sinks()
            again = [r.moved(src=f) for f in sorted(a.finals) for r in a.starts]
            ins = a.ins + [r for r in again if r.dst in a.finals]
            return _Frag(a.init, set(a.finals), [a.rope, again], a.starts, ins, set(), a.negs)
        gap = self.new()
        restart = [r.moved(src=gap) for r in a.starts]
        ins = a.ins + [r for r in restart if r.dst in a.finals]
        into_gap = [r.moved(dst=gap) for r in ins]
        loop = _Tr(gap, _TRUE, False, frozenset(), gap)
        starts = a.starts + [r for r in into_gap if r.src == a.init]
        # no transition leaves a final state here: restarts leave the gap
        return _Frag(a.init, set(a.finals), [a.rope, restart, into_gap, loop], starts, ins,
                     a.sinks, a.negs)

    # ------------------------------------------------------------------ negation
    def _neg(self, node: A.Not) -> _Neg:
        """A negation: the guard of β's events, and its name (if any)."""
        f = node.formula
        name: str | None = None
        while isinstance(f, A.As):
            name = name or f.var
            f = f.formula
        leaves = _or_leaves(f) if isinstance(f, A.Or) else [f]
        guards: list[GuardTree] = []
        for leaf in leaves:
            while isinstance(leaf, A.As):
                leaf = leaf.formula
            if not isinstance(leaf, A.EventType):
                raise CeqlValidationError(
                    "NOT applies to one event: an event type, S>T, or an OR of those, "
                    "e.g. NOT (B OR C) AS n")
            g: GuardTree = GAtom(self.atoms.add(TypeIs(leaf.name)))
            if leaf.stream is not None:
                g = GAnd((g, GAtom(self.atoms.add(StreamIs(leaf.stream)))))
            guards.append(g)
        return _Neg(node, guards[0] if len(guards) == 1 else GOr(tuple(guards)), name)

    def _negated(self, leaf: ScopeLeaf, negs: dict[str, _Neg], formula: A.Formula,
                 reading: dict[str, list[A.FilterAtom]]) -> bool:
        """If ``leaf`` is an atom about a negated variable of the fragment, add it to that
        negation (True); else False. An atom of a NOT between two elements that reads other
        events stays a condition of the FILTER's scope (its registers keep what it reads) and
        is noted in ``reading`` (the gap checks it, at once or — for a late one, see
        :meth:`_late`, or one written in another variable's brackets — when the valuation
        completes)."""
        if not isinstance(leaf, A.FilterAtom):
            return False
        name = leaf.var
        if name not in negs:  # c[… n.x …] with PREV (the others are written n[…] already)
            name = next((v for v in sorted(condition_refs(leaf.var, leaf.pred)) if v in negs),
                        "")
            if not name:
                return False
        neg = negs[name]
        if is_correlated(leaf) and neg.edge:
            neg.conds.append(leaf)
            return True
        if is_correlated(leaf):
            if name != leaf.var or self._late(leaf, neg, formula):
                neg.deferred = True
            neg.conds.append(leaf)
            reading.setdefault(name, []).append(leaf)
            return False
        negs[leaf.var].guards.append(guard_from_pred(leaf.pred, self.atoms))
        return True

    def _late(self, leaf: A.FilterAtom, neg: _Neg, formula: A.Formula) -> bool:
        """Whether a condition on the event a NOT between two elements forbids reads a
        variable whose events do not all come before the NOT in the FILTER's valuation (one
        bound after it, or elsewhere in the FILTER's formula), or the NOT stands under an
        iteration there: a run waiting in the gap does not hold all it reads yet."""
        if neg.shared:
            return True
        occurrences = _occurrences(formula, self.views)
        return any(occurrences.get(v, 0) != neg.before.get(v, 0)
                   for v in condition_refs(leaf.var, leaf.pred) if v != neg.name)

    def finish(self, root: _Frag) -> None:
        """Set the gap guards of every negation (their FILTER atoms are all known now), then
        the guards of the records built from others (conjunctions)."""
        for neg in root.negs:
            if neg.loops and neg.kill_scopes:
                # the loop lets every event by; a β event ends the run if its conditions hold
                # (or is recorded, to be judged when the valuation is complete)
                assert neg.name is not None
                kill: Kill = (neg.kill(), neg.name, tuple(neg.kill_scopes), neg.deferred)
                for r in neg.loops:
                    r.guard = _TRUE
                    r.kills = (kill,)
            elif neg.loops:
                g = GUnless(neg.kill())
                for r in neg.loops:
                    r.guard = g
        done: dict[int, GuardTree] = {}
        kills: dict[int, tuple[Kill, ...]] = {}
        for r in _records(root.rope):
            if r.deps:
                r.guard = _resolved(r, done)
                r.kills = _resolved_kills(r, kills)

    # ------------------------------------------------------------------ conjunction
    def _conj(self, a: _Frag, b: _Frag) -> _Frag:
        """``a AND b``: the product of the two, each event marked by at most one side, the
        other skipping it (where it can: before it starts, in a gap, or after it is done)."""
        sides = [_side(a), _side(b)]
        init = self.new()
        final = self.new()
        num: dict[tuple[int, int], int] = {(_PRE, _PRE): init, (_POST, _POST): final}
        todo = [(_PRE, _PRE)]
        rope: list[_Tr] = []
        starts: list[_Tr] = []
        ins: list[_Tr] = []
        while todo:
            pair = todo.pop()
            src = num[pair]
            for k in (0, 1):
                mine, other = sides[k], sides[1 - k]
                opened = other.open_at(pair[1 - k])
                for r, dst in mine.marked.get(pair[k], ()):
                    # the other side's open scopes go on (binding nothing): a move outside
                    # a scope would close it
                    mine_k = {j for j, _ in r.scoped}
                    scoped = r.scoped + tuple((j, frozenset()) for j in opened
                                              if j not in mine_k)
                    for skip in other.skips(pair[1 - k]):
                        nxt = (dst, pair[1]) if k == 0 else (pair[0], dst)
                        d = num.get(nxt)
                        if d is None:
                            if len(num) >= _MAX_PRODUCT:
                                raise CeqlResourceError(
                                    f"this conjunction (AND) needs more than {_MAX_PRODUCT} "
                                    "automaton states: split it, or bound its operands")
                            d = num[nxt] = self.new()
                            todo.append(nxt)
                        t = _Tr(src, _TRUE, True, r.vars, d)
                        t.scoped = scoped
                        t.opens = r.opens
                        t.deps = (r,) if skip is None else (r, skip)
                        rope.append(t)
                        if src == init:
                            starts.append(t)
                        if d == final:
                            ins.append(t)
            if pair != (_PRE, _PRE) and pair != (_POST, _POST):
                for ga in sides[0].skips(pair[0]):
                    for gb in sides[1].skips(pair[1]):
                        loop = _Tr(src, _TRUE, False, frozenset(), src)
                        loop.deps = tuple(x for x in (ga, gb) if x is not None)
                        rope.append(loop)
        return _Frag(init, {final}, rope, starts, ins, {final}, a.negs + b.negs)


_PRE, _POST = -1, -2  # a conjunct not started yet, and done
_MAX_PRODUCT = 100_000


class _Side:
    """One operand of a conjunction as the product reads it: per state its marked moves
    (with a copy into ``_POST`` for each that completes it) and its skip guards."""

    __slots__ = ("loops", "marked")

    def __init__(self) -> None:
        self.marked: dict[int, list[tuple[_Tr, int]]] = {}
        self.loops: dict[int, list[_Tr]] = {}

    def open_at(self, q: int) -> list[int]:
        """The scopes (conditions between events) a run of this side at ``q`` is inside:
        those its next events may continue without opening them again."""
        out: dict[int, None] = {}
        for r, _ in self.marked.get(q, ()):
            for j, _vs in r.scoped:
                if j not in r.opens:
                    out[j] = None
        return list(out)

    def skips(self, q: int) -> list[_Tr | None]:
        """The records that let this side skip an event in state ``q`` (None: always)."""
        if q in (_PRE, _POST):
            return [None]
        return list(self.loops.get(q, []))


def _side(fr: _Frag) -> _Side:
    side = _Side()
    seen = {fr.init}
    todo = [fr.init]
    out: dict[int, list[_Tr]] = {}
    for r in _records(fr.rope):
        out.setdefault(r.src, []).append(r)
    while todo:
        q = todo.pop()
        for r in out.get(q, ()):
            if not r.mark:
                side.loops.setdefault(q, []).append(r)
                continue
            src = _PRE if q == fr.init else q
            moves = side.marked.setdefault(src, [])
            moves.append((r, r.dst))
            if r.dst in fr.finals:
                moves.append((r, _POST))
            if r.dst not in seen:
                seen.add(r.dst)
                todo.append(r.dst)
    return side


T = TypeVar("T")


def _folded(r: _Tr, done: dict[int, T], own: Callable[[_Tr], T],
            join: Callable[[T, T], T]) -> T:
    """``own(r)`` joined with the folded values of the records ``r`` depends on, children
    first and without recursion; ``done`` caches them by record."""
    todo: list[tuple[_Tr, bool]] = [(r, False)]
    while todo:
        x, ready = todo.pop()
        if id(x) in done:
            continue
        if ready or not x.deps:
            v = own(x)
            for d in x.deps:
                v = join(v, done[id(d)])
            done[id(x)] = v
        else:
            todo.append((x, True))
            todo += [(d, False) for d in x.deps if id(d) not in done]
    return done[id(r)]


def _resolved(r: _Tr, done: dict[int, GuardTree]) -> GuardTree:
    """``r``'s own guard ANDed with the final guards of the records it depends on."""
    return _folded(r, done, lambda x: x.guard, _and)


def _resolved_kills(r: _Tr, done: dict[int, tuple[Kill, ...]]) -> tuple[Kill, ...]:
    """``r``'s own kills and those of the records it depends on (the gaps an event taking a
    product's transition lies in, on either side)."""
    return _folded(r, done, lambda x: x.kills,
                   lambda a, b: tuple({id(k): k for k in (*a, *b)}.values()))


def _occurrences(root: A.Formula,
                 views: dict[str, frozenset[str]] | None = None) -> dict[str, int]:
    """How many event-type leaves (not under NOT) bind each variable of ``root``: type names,
    ``S>T`` names (of the leaves ``S>T``, and of every ``T`` leaf for the ``S`` of ``views``
    — the ``S>T`` WHERE writes no leaf of — whose events of ``S`` bind it) and AS names."""
    out = {v: len(ids) for v, ids in variable_leaves(root).items()}
    todo: list[A.Formula] = [root]
    while todo:
        f = todo.pop()
        if isinstance(f, A.EventType):
            streams = {f.stream} if f.stream is not None else set()
            if views:
                streams |= views.get(f.name, frozenset())
            for stream in streams:
                v = f"{stream}>{f.name}"
                out[v] = out.get(v, 0) + 1
        elif isinstance(f, A.Seq | A.Or | A.And):
            todo += [f.left, f.right]
        elif isinstance(f, A.As | A.Plus | A.Filter):
            todo.append(f.formula)
    return out


def _edge_error(node: A.Not) -> CeqlValidationError:
    """A NOT first or last in a sequence below the top level (validation refuses it; this
    guards the automaton's own callers)."""
    span = node.span
    return CeqlValidationError(
        "NOT may begin or end only the top-level sequence of WHERE (with WITHIN); inside "
        "a formula it must stand between two of its elements",
        line=span.line, column=span.column)


# What an enclosing iteration lets a formula drop, for the alternatives directly under it
# (through OR and AS): under φ+ every iteration, under φ:+ the contiguous ones.
_KEEP, _UNDER_PLUS, _UNDER_CPLUS = 0, 1, 2


def _dropped(f: A.Plus, under: int) -> bool:
    """True when the iteration ``f`` adds nothing to the one it is an alternative under.

    ``(ψ+ OR χ)+`` equals ``(ψ OR χ)+``: a block of the outer iteration that is itself a run
    of ψ blocks is a run of outer blocks. The same holds for ``ψ:+`` under ``+`` and under
    ``:+``, but not for ``ψ+`` under ``:+`` (its gaps would join contiguous blocks).
    """
    return under == _UNDER_PLUS or (under == _UNDER_CPLUS and f.contiguous)


def _or_leaves(f: A.Or) -> list[A.Formula]:
    """The operands of a chain of ORs, left to right (one n-ary union instead of n - 1)."""
    return chain_operands(f, A.Or)


def _and(a: GuardTree, b: GuardTree) -> GuardTree:
    items: list[GuardTree] = []
    for g in (a, b):
        if isinstance(g, GAnd):
            items.extend(g.items)
        elif not isinstance(g, GTrue):
            items.append(g)
    return GAnd(tuple(dict.fromkeys(items))) if len(items) != 1 else items[0]


def _all(items: Iterable[GuardTree]) -> GuardTree:
    """The AND of ``items`` (TRUE for none)."""
    g: GuardTree = _TRUE
    for x in items:
        g = _and(g, x)
    return g


def _dnf(c: A.FilterExpr) -> list[list[ScopeLeaf]]:
    if isinstance(c, A.FilterAtom | A.FilterMatch):
        return [[c]]
    if isinstance(c, A.FilterOr):
        return _dnf(c.left) + _dnf(c.right)
    return [x + y for x in _dnf(c.left) for y in _dnf(c.right)]


def _frozen(r: _Tr, select: frozenset[str] | None, shown: frozenset[str]) -> Transition:
    """``r`` as a transition, with the SELECT projection recorded in ``pmark``/``vars``.

    Under ``SELECT *`` every marked event is output; its labels are the variables ``shown``
    (a type name that only repeats an alias is not), never none of them."""
    if not r.mark or select is None:
        vs = r.vars & shown if r.mark else r.vars
        return Transition(r.src, r.guard, r.mark, r.mark, vs or r.vars, r.dst, r.scoped,
                          r.opens, r.kills)
    keep = r.vars & select
    return Transition(r.src, r.guard, True, bool(keep), keep, r.dst, r.scoped, r.opens,
                      r.kills)


def _trim(init: int, finals: set[int], trans: Iterable[Transition],
          scopes: tuple[tuple[ScopeLeaf, ...], ...] = ()) -> CEA:
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
        Transition(num[t.src], t.guard, t.mark, t.pmark, t.vars, num[t.dst], t.scopes, t.opens,
                   t.kills)
        for t in trans
        if t.src in live and t.dst in live
    )
    return CEA(len(order), frozenset(num[q] for q in finals if q in live), kept, scopes)


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
    builder = _Builder(atoms, top_sequence(query.where), stream_views(query))
    fr = builder.build(query.where)
    builder.finish(fr)
    edges = builder.edges
    reads = _next_reads(edges, query, bool(builder.scopes))
    edge_next = reads is not None
    edge_rank = not edge_next and _rank_after(edges, query, bool(builder.scopes))
    if edge_rank:  # runs are kept apart by start and the events these labels bind
        reads = _edge_reads(edges, query)[0]
    edge_last = bool(edges) and query.strategy == "LAST" and not edge_rank
    # the edge stage projects where it needs the events a SELECT list leaves out: those its
    # conditions read, or (LAST, keyed NEXT) every event, as they compare D before the
    # projection
    unshown = _unshown_reads(edges, query)
    dropped = bool(unshown) or (
        (edge_last or edge_next or edge_rank) and query.select is not None)
    select = frozenset(query.select) if query.select is not None and not dropped else None
    shown = frozenset(output_variables(query if not dropped else replace(query, select=None)))
    # the output: the SELECT list, or under SELECT * the variables a match reports
    output = frozenset(query.select) if query.select is not None else shown
    if dropped:  # the edge stage projects: the list's names and the names read are labels
        shown |= output | unshown
    trans: Iterable[Transition] = (_frozen(r, select, shown) for r in _records(fr.rope))
    if query.strategy == "STRICT":
        # STRICT keeps D = {i..j}: a run may never skip an event once started.
        trans = [t for t in trans if t.mark]
    cea = _trim(fr.init, fr.finals, trans, tuple(builder.scopes))
    cea = replace(cea, mandatory=mandatory_elements(query.where, atoms))
    if not edges:
        return cea
    lead, trail = edges.get("leading"), edges.get("trailing")
    return replace(cea, leading=None if lead is None else lead.kill(),
                   trailing=None if trail is None else trail.kill(),
                   leading_conds=tuple(lead.conds) if lead is not None else (),
                   trailing_conds=tuple(trail.conds) if trail is not None else (),
                   edge_select=output if dropped else None,
                   edge_last=edge_last, edge_next=edge_next, edge_rank=edge_rank,
                   edge_reads=reads or frozenset())


def _rank_after(edges: dict[str, _Neg], query: A.Query, scoped: bool) -> bool:
    """Whether NEXT, LAST or MAX must choose after a leading or trailing NOT's check, among
    complex events enumerated with every start (``runtime/edges.py``, ``_rank_admit``): when
    whether one passes depends on its events (the NOT's conditions read the match), or under
    LAST with conditions between events (LAST's choice need not be the one that passes, and
    runs kept apart by start serve only the automaton without registers). Elsewhere the
    choice is checked after it (NEXT, MAX) or made on runs kept apart by start (LAST)."""
    if not edges or query.strategy not in ("NEXT", "LAST", "MAX"):
        return False
    return any(neg.conds for neg in edges.values()) or (query.strategy == "LAST" and scoped)


def _next_reads(edges: dict[str, _Neg], query: A.Query, scoped: bool) -> frozenset[str] | None:
    """SELECT NEXT with a leading NOT whose conditions read the match, no trailing NOT and no
    conditions between events: the labels the runtime keeps runs apart by (the variables the
    conditions read and their aliases); None where that does not apply. A read variable
    bound under ``+`` is left to :func:`_rank_after`: its events are unbounded in number, and
    so would the runs kept apart be."""
    lead = edges.get("leading")
    if (query.strategy != "NEXT" or lead is None or not lead.conds or "trailing" in edges
            or scoped):
        return None
    labels, looped = _edge_reads(edges, query)
    return None if looped else labels


def _edge_reads(edges: dict[str, _Neg], query: A.Query) -> tuple[frozenset[str], bool]:
    """The labels of the variables the leading and trailing NOTs' conditions read (with their
    aliases), and whether one is bound under ``+``."""
    read: set[str] = set()
    for neg in edges.values():
        for c in neg.conds:
            read |= condition_refs(c.var, c.pred)
        read.discard(neg.name or "")
    leaves = variable_leaves(query.where)
    looped = _looped_leaves(query.where)
    labels: set[str] = set()
    under = False
    for v in read:
        ids = leaves.get(v, frozenset())
        under = under or bool(ids & looped)
        labels |= {a for a, other in leaves.items() if other == ids}
    return frozenset(labels), under


def _looped_leaves(root: A.Formula) -> frozenset[int]:
    """The event-type occurrences under a ``+``, numbered as :func:`variable_leaves` does."""
    out: set[int] = set()
    count = 0
    todo: list[tuple[A.Formula, int]] = [(root, 0)]
    while todo:
        node, loops = todo.pop()
        if isinstance(node, A.EventType):
            if loops:
                out.add(count)
            count += 1
        elif isinstance(node, A.Seq | A.Or | A.And):
            todo += [(node.right, loops), (node.left, loops)]
        elif isinstance(node, A.Plus):
            todo.append((node.formula, loops + 1))
        elif isinstance(node, A.As | A.Filter | A.Not):
            todo.append((node.formula, loops))
    return frozenset(out)


def _unshown_reads(edges: dict[str, _Neg], query: A.Query) -> frozenset[str]:
    """The names a leading or trailing NOT's conditions read that a match would not carry as
    labels: left out by the SELECT list, or (``SELECT *``) not reported — ``S>T`` over plain
    ``T`` leaves (:func:`~ceql.ir.walks.stream_views`). The check needs their events, so
    the automaton keeps them and the edge stage projects after it."""
    read: set[str] = set()
    for neg in edges.values():
        for c in neg.conds:
            read |= condition_refs(c.var, c.pred)
        read.discard(neg.name or "")
    if query.select is not None:
        return frozenset(read - set(query.select))
    # (a type name that only repeats an alias is read through the alias's label)
    return frozenset(read - set(output_variables(query)) - set(variable_leaves(query.where)))
