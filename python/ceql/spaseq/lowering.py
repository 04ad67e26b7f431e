"""A SPAseq sequence lowered to a CEQL query over *records* (docs/SPASEQ.md, "How SPAseq maps
onto ceql's engine"), so that it runs on ceql's automaton and register runs.

The records (built by :mod:`.engine`) are, per instant of the streamset, one record per (leaf,
mapping) — a *leaf* being the GPMs of one ``&`` alternative, their mappings at that instant
joined whatever their streams; leaves whose GPMs are equal up to variable names may share one
record (:attr:`Lowered.alias`) — then a *negative copy* of each record a ``;`` reads; when a
``,`` needs it, each record carries ``kt``, the instant's index on its last record and -1 on
the others, and an instant without records has a *tick* ``T`` (only ``k``, ``kt``, ``t``).
Every record carries ``k``, the instant's index in the
streamset (so "a later instant" is ``k > p.k``, without placeholders for events no GPM
matches), ``t`` (its time, for the window), and per SPAseq variable ``v<i>`` (the term's
N-Triples text, for ``sameTerm`` joins), ``b<i>`` (1 when bound, else 0) and, for variables
a cross-GPM FILTER reads, ``q<i>`` (an ``xsd:integer``/``xsd:decimal`` value times 10^18, an
exact integer; ``u`` = 1 when the record has another term there).

Element ``j`` of ``SEQ`` is CEQL variable ``e<j>``; a ``;`` before it is
``NOT ((N… OR …) AS n<j>)`` over the negative copies, which sit after the instant's records so
that the gap holds exactly the instants strictly between (with ``n[k > p.k]``); a ``,``
before it is ``NOT ((L… OR N… OR T) AS t<j>)`` with ``t[kt > p.k]`` (no instant strictly
between: the last record of a later instant ends the wait). Shared
variables become ``c[v = s.v]`` (a hash join in the engine), or ``c[b = 0 OR s.b = 0 OR
v = s.v]`` where ``c`` or ``s`` may leave ``v`` unbound (an alternative without it,
OPTIONAL, UNION); iterations of ``+`` are joined by ``PREV`` (``k > PREV(k)``,
``k = PREV(k) + 1``, and for ``;`` ``pk = PREV(k)``: ``pk`` is the last earlier instant with
a fit record, one of equal shared values — and, when the ``+``'s FILTERs compare its values
with one variable fixed before it, whose values satisfy them: the record is then copied per
interval of that variable, each copy with its own ``pk``). Cross-GPM FILTERs after ``;``
(which decide what is next) are translated atom by atom (SQL's three-valued logic is
SPARQL's error logic: an unbound variable is a NULL), a variable bound by several earlier
GPMs read through guards on their ``b`` flags; elsewhere a FILTER only accepts or refuses
whole matches, so the translation lets ``u`` records by, or is left out for a SPARQL
expression beyond comparisons, and SPARQL decides on each complete match
(``Lowered.relaxed``, ``Lowered.post``).

What does not lower (``Lowered.reason``): after ``;`` (between elements or iterations), a
FILTER beyond comparisons of variables and integer/decimal literals under ``&& || !``; a
``;``-iterated ``+`` whose FILTERs read more than one variable bound before it; a few
placements where a CEQL variable could be empty where SPAseq's is unbound (see
:func:`lower_plan`). Values that the translation after ``;`` cannot decide (a term that is not
an integer or decimal), and a mapping of a ``+`` GPM without one of its shared variables, are
found per record at run time, and the evaluation is handed to the run loop (:mod:`.engine`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import reduce
from typing import Any

from ..frontends.ceql import format_query
from ..frontends.spaseq import (
    SKIP_TILL_ANY,
    SKIP_TILL_NEXT,
    STRICT,
    BinaryExpr,
    CrossFilter,
    Expr,
    Literal,
    UnaryExpr,
    Var,
)
from ..ir import nodes as N
from ..rdf.sparql import canonical_form
from .conditions import compile_numeric, numeric_value
from .plan import Element, Plan

__all__ = ["SCALE", "Leaf", "Lowered", "lower_plan", "scaled"]

SCALE = 10 ** 18
"""Integer and decimal values are compared as exact integers: the value times ``SCALE`` (the
fast path's decimals have at most 18 fraction digits)."""

_XSD = "http://www.w3.org/2001/XMLSchema#"
_CMP = {"=", "!=", "<", "<=", ">", ">="}


def scaled(term: str) -> int | None:
    """An ``xsd:integer``/``xsd:decimal`` literal's value times :data:`SCALE`, or ``None``
    for any other term (doubles included: SPARQL's promotion is the store's)."""
    found = numeric_value(term)
    if found is None or found[0]:
        return None
    value = found[1]
    return value * SCALE if isinstance(value, int) else int(Decimal(value) * SCALE)


@dataclass(frozen=True)
class Leaf:
    """GPMs of one ``&`` alternative (their mappings at one instant joined, whatever their
    streams), its record type ``L<index>``, whether ``;`` reads its negative copies
    ``N<index>``, and the element."""

    index: int
    gpms: tuple[str, ...]
    element: int
    negated: bool


@dataclass(frozen=True)
class Lowered:
    """The CEQL query, as IR (``None`` when the query does not lower: ``reason`` says why), the
    leaves, each SPAseq variable's attribute number, the variables FILTERs read, per element
    the GPMs whose membership flags ``m<i>`` its records carry, per ``+`` element the
    shared variables its records must bind, and per element iterated by ``;`` the shared
    variables whose values key its records' ``pk`` (the last earlier instant with a record
    of the element with the same values)."""

    query: N.Query | None
    reason: str | None
    leaves: tuple[Leaf, ...]
    var_index: dict[str, int]
    gpm_index: dict[str, int]
    filter_vars: frozenset[str]
    element_gpms: tuple[tuple[str, ...], ...]
    plus_shared: dict[int, frozenset[str]]
    next_keys: dict[int, tuple[str, ...]]
    exact_vars: frozenset[str] = frozenset()
    post: dict[int, tuple[tuple[str, CrossFilter], ...]] = field(default_factory=dict)
    relaxed: dict[int, tuple[tuple[str, CrossFilter], ...]] = field(default_factory=dict)
    bounds: dict[int, tuple[str, dict[str, tuple[tuple[Any, ...], ...]]]] = \
        field(default_factory=dict)
    """Per ``;``-iterated ``+`` element with FILTERs: the fixed variable they compare with
    and, per GPM, its FILTERs as conditions on that variable (``_region``)."""
    ticks: bool = False
    """Whether records carry ``kt`` (the instant's ``k`` on its last record, else -1) and an
    instant without records has a tick record ``T``, for ``,``."""
    alias: dict[int, tuple[int, dict[str, str]]] = field(default_factory=dict)
    """Leaves whose records are another's (:func:`sharing`): leaf index → (the index of the
    leaf whose records and types ``L``/``N`` it reads, the representative, itself included;
    the representative's variable → this leaf's)."""

    @property
    def text(self) -> str | None:
        """The query as CEQL text (the formatter's), to show it; ``None`` when it does not
        lower."""
        return None if self.query is None else format_query(self.query)


class _NoLowering(Exception):
    """The query (or this part of it) has no exact lowering."""


# --- FILTER expressions as three-valued trees ------------------------------------------------
# ("const", True|False|None) | ("cmp", op, left, right) | ("and"|"or", a, b) | ("not", a)
# operands: ("lit", int) | ("attr", cvar | None, var)
_Tree = tuple[Any, ...]


def _operand(e: Expr) -> tuple[str, object]:
    if isinstance(e, Var):
        return ("var", e.name)
    if isinstance(e, Literal) and e.lang is None and e.datatype is not None \
            and e.datatype.startswith(_XSD):
        text = f'"{e.lexical}"^^<{e.datatype}>'
        value = scaled(text)
        if value is not None:
            return ("lit", value)
    if not isinstance(e, Literal):
        raise _NoLowering("a FILTER uses more than comparisons under && || !")
    raise _NoLowering("a FILTER compares a literal that is not an xsd:integer or "
                      "xsd:decimal")


def _tree(e: Expr) -> _Tree:
    if isinstance(e, BinaryExpr) and e.op in ("&&", "||"):
        return ("and" if e.op == "&&" else "or", _tree(e.left), _tree(e.right))
    if isinstance(e, UnaryExpr) and e.op == "!":
        return ("not", _tree(e.operand))
    if isinstance(e, BinaryExpr) and e.op in _CMP:
        return ("cmp", e.op, _operand(e.left), _operand(e.right))
    raise _NoLowering("a FILTER uses more than comparisons under && || !")


def _bind(t: _Tree, chosen: dict[str, str | bool | None]) -> _Tree:
    """``t`` with each variable read from its chosen source (``False``: unbound), simplified
    by three-valued logic."""
    kind = t[0]
    if kind == "cmp":
        _, op, a, b = t
        ops = []
        for x in (a, b):
            if x[0] == "lit":
                ops.append(x)
            else:
                src = chosen[x[1]]
                if src is False:
                    return ("const", None)
                ops.append(("attr", src, x[1]))
        if ops[0][0] == "lit" and ops[1][0] == "lit":
            x, y = ops[0][1], ops[1][1]
            return ("const", {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y,
                              ">": x > y, ">=": x >= y}[op])
        return ("cmp", op, ops[0], ops[1])
    if kind == "not":
        inner = _bind(t[1], chosen)
        if inner[0] == "const":
            return ("const", None if inner[1] is None else not inner[1])
        return ("not", inner)
    if kind in ("and", "or"):
        a, b = _bind(t[1], chosen), _bind(t[2], chosen)
        absorbing = kind == "or"  # TRUE absorbs OR, FALSE absorbs AND
        for x, y in ((a, b), (b, a)):
            if x == ("const", absorbing):
                return x
            if x == ("const", not absorbing):
                return y
        if a[0] == "const" and b[0] == "const":  # both unknown
            return ("const", None)
        return (kind, a, b)
    return t


def _attr(name: str, var: str | None = None) -> N.Attr:
    return N.Attr(name, var=var)


def _num(value: int) -> N.Literal:
    return N.Literal(value)


def _is(name: str, value: int, var: str | None = None) -> N.Compare:
    """``var.name = value``: a flag's test."""
    return N.Compare("=", _attr(name, var), _num(value))


def _any(preds: list[N.Pred]) -> N.Pred:
    """``a OR b OR …``, nested to the left as the parser nests it."""
    return reduce(N.POr, preds)


def _all(preds: list[N.Pred]) -> N.Pred:
    """``a AND b AND …``, nested to the left."""
    return reduce(N.PAnd, preds)


def _either(formulas: list[N.Formula]) -> N.Formula:
    """``A OR B OR …`` of event types, nested to the left."""
    return reduce(N.Or, formulas)


_ALWAYS: N.Pred = N.Compare("=", _attr("k"), _attr("k"))
"""A condition every record satisfies (``k = k``)."""
_NEVER: N.Pred = N.PNot(_ALWAYS)
_UNKNOWN: N.Pred = _is("z", 0)
"""SPARQL's error (an unbound operand): a condition no record satisfies (records have no
``z``, which is NULL)."""


class _Writer:
    """Writes trees as IR predicates, attributes by number."""

    def __init__(self, var_index: dict[str, int]) -> None:
        self.vi = var_index
        self.cols: dict[str | None, dict[str, int]] = {}
        """CEQL variable (``None``: the subject) → its SPAseq variables' attribute numbers."""

    def col(self, cvar: str | None, var: str) -> int:
        return self.cols.get(cvar, self.vi)[var]

    def tree(self, t: _Tree) -> N.Pred:
        kind = t[0]
        if kind == "const":
            return {True: _ALWAYS, False: _NEVER, None: _UNKNOWN}[t[1]]
        if kind == "not":
            return N.PNot(self.tree(t[1]))
        if kind == "and":
            return N.PAnd(self.tree(t[1]), self.tree(t[2]))
        if kind == "or":
            return N.POr(self.tree(t[1]), self.tree(t[2]))
        _, op, a, b = t
        return N.Compare(op, self.operand(a), self.operand(b))

    def operand(self, x: tuple[object, ...]) -> N.Expr:
        if x[0] == "lit":
            assert isinstance(x[1], int)
            return _num(x[1])
        cvar, var = x[1], x[2]
        assert isinstance(var, str)
        src = cvar if isinstance(cvar, str) else None
        return _attr(f"q{self.col(src, var)}", src)


def _qualifiers(p: N.Pred) -> set[str]:
    """The variables whose attributes ``p`` reads (``e1.q0`` → ``e1``)."""
    if isinstance(p, N.PAnd | N.POr):
        return _qualifiers(p.left) | _qualifiers(p.right)
    if isinstance(p, N.PNot):
        return _qualifiers(p.operand)
    assert isinstance(p, N.Compare)
    return {e.var for e in (p.left, p.right) if isinstance(e, N.Attr) and e.var is not None}


@dataclass
class _Slot:
    """A CEQL variable: its element, whether it is never empty in a match, the leaves whose
    records it may hold, whether its element is a ``+``."""

    name: str
    element: int
    always: bool
    leaves: list[Leaf]
    kleene: bool = False
    cols: dict[str, int] = field(default_factory=dict)
    """Its SPAseq variables' attribute numbers (another's when its records are shared)."""

    def may_bind(self, v: str, plan: Plan) -> bool:
        return any(v in plan.variables[g] for leaf in self.leaves for g in leaf.gpms)

    def always_binds(self, v: str, plan: Plan) -> bool:
        """Whether each of its records binds ``v``: a GPM of every leaf binds it in every
        mapping, or — under ``+``, whose records must bind their shared variables (the
        engine hands over one that does not) — in some."""
        if self.kleene:
            return all(any(v in plan.variables[g] for g in leaf.gpms) for leaf in self.leaves)
        return all(any(v in plan.certain.get(g, ()) for g in leaf.gpms)
                   for leaf in self.leaves)

    def holds(self, g: str) -> bool:
        return any(g in leaf.gpms for leaf in self.leaves)

    def only(self, g: str) -> bool:
        return all(g in leaf.gpms for leaf in self.leaves)


def lower_plan(plan: Plan) -> Lowered:
    """The CEQL lowering of ``plan``, or the reason it has none."""
    var_index = {v: i for i, v in enumerate(sorted({v for vs in plan.variables.values()
                                                     for v in vs}))}
    gpm_index = {g: i for i, g in enumerate(sorted(plan.variables))}
    try:
        same = sharing(plan)
        low = _lower(plan, var_index, gpm_index, same)
        if same and not _consistent(low, same):
            low = _lower(plan, var_index, gpm_index, {})
        return low
    except _NoLowering as e:
        return Lowered(None, str(e), (), var_index, gpm_index, frozenset(), (), {}, {})


def sharing(plan: Plan) -> dict[str, tuple[str, dict[str, str]]]:
    """GPMs whose records one record type carries: GPM → (the representative GPM, its
    variable → this GPM's). Such GPMs are equal up to the names of their variables (the
    evaluator runs them once) on one stream, each alone in a ``SEQ`` element without ``+``
    or ``&``/``|``, and in no other element: their records differ only by the names of
    their variables, so each element reads the representative's, renamed."""
    count = Counter(g for el in plan.elements for g in el.gpms)
    groups: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = {}
    for el in plan.elements:
        if el.kleene or len(el.gpms) != 1 or el.alternatives != (el.gpms,):
            continue
        g = el.gpms[0]
        if count[g] != 1 or plan.local.get(g):
            continue
        text, names = canonical_form(plan.sparql[g])
        groups.setdefault((plan.streams[g], text), []).append((g, names))
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for members in groups.values():
        rep, names = members[0]
        renames = [(g, dict(zip(names, theirs, strict=True))) for g, theirs in members]
        # every variable a member binds (certainly) is the renamed representative's
        renames = [(g, r) for g, r in renames
                   if set(plan.variables[g]) == {r[v] for v in plan.variables[rep]}
                   and plan.certain.get(g, frozenset()) ==
                   {r[v] for v in plan.certain.get(rep, frozenset())}]
        if len(renames) > 1 and renames[0][0] == rep:
            out.update((g, (rep, r)) for g, r in renames)
    return out


def _consistent(low: Lowered, same: dict[str, tuple[str, dict[str, str]]]) -> bool:
    """Whether the members of each shared record type read each of its attributes alike
    (with a scaled value or not, handing over or not): then a shared record's ``q``
    attributes and ``u`` are each member's."""
    seen: dict[tuple[str, str], tuple[bool, bool]] = {}
    for rep, r in same.values():
        for v, mine in r.items():
            status = (mine in low.exact_vars, mine in low.filter_vars)
            if seen.setdefault((rep, v), status) != status:
                return False
    return True


def _lower(plan: Plan, vi: dict[str, int], gi: dict[str, int],
           same: dict[str, tuple[str, dict[str, str]]]) -> Lowered:
    w = _Writer(vi)
    alias: dict[int, tuple[int, dict[str, str]]] = {}
    leaves: dict[tuple[str, ...], Leaf] = {}
    slots: list[list[_Slot]] = []  # per element: its one CEQL variable
    # the SEQ's elements; an int stands for a ``,``'s NOT (of the variable ``t<int>``) until
    # all the record types are known
    forms: list[N.Formula | int] = []
    conds: list[N.FilterExpr] = []
    plus_shared: dict[int, frozenset[str]] = {}
    after: dict[int, tuple[str, ...]] = {}
    post: dict[int, list[tuple[str, CrossFilter]]] = {}
    relaxed: dict[int, list[tuple[str, CrossFilter]]] = {}
    exact: set[str] = set()
    loose: set[str] = set()
    bounds: dict[int, tuple[str, dict[str, tuple[_Region, ...]]]] = {}
    ticks = False
    owner = plan.owner
    shared = {v for v in vi if v not in owner}

    def leaf_of(gpms: tuple[str, ...], j: int, negated: bool) -> Leaf:
        if gpms not in leaves:
            leaves[gpms] = Leaf(len(leaves), gpms, j, negated)
            if gpms[0] in same:
                rep, r = same[gpms[0]]
                alias[leaves[gpms].index] = (leaves[(rep,)].index, r)
        return leaves[gpms]

    types: set[tuple[str, int]] = set()  # the record types the query reads

    def kind(leaf: Leaf, letter: str = "L") -> N.EventType:
        """The record type ``L<i>`` (or its negative copies' ``N<i>``) of ``leaf``'s
        records."""
        i = alias[leaf.index][0] if leaf.index in alias else leaf.index
        types.add((letter, i))
        return N.EventType(f"{letter}{i}")

    for j, el in enumerate(plan.elements):
        negated = el.op == SKIP_TILL_NEXT
        fixed: tuple[str, str] | None = None
        if el.kleene and el.loop_op == SKIP_TILL_NEXT and any(plan.filters[g] for g in el.gpms):
            fixed = _fixed_fitness(el, j, [x for ss in slots for x in ss], plan, shared)
            bounds[j] = (fixed[0], {g: tuple(_region(f.expr, fixed[0])
                                             for f in plan.filters[g])
                                    for g in el.gpms})
        # one leaf per alternative, whatever the streams of its GPMs: its records are the
        # instant's joined choices, one event per stream (a fit choice of an & across
        # streams is one record, which a NOT can forbid)
        primary = _Slot(f"e{j}", j, True, [leaf_of(tuple(alt), j, negated)
                                           for alt in el.alternatives], el.kleene, vi)
        if primary.leaves[0].index in alias:
            back = {mine: v for v, mine in alias[primary.leaves[0].index][1].items()}
            primary.cols = {v: vi[back[v]] for v in plan.variables[el.gpms[0]]}
        w.cols[primary.name] = primary.cols
        slots.append([primary])
        form: N.Formula = N.As(_either([kind(leaf) for leaf in primary.leaves]), f"e{j}")
        if el.kleene:
            form = N.Plus(form)
        if j and el.op == STRICT:
            # σ , Ψ: no instant strictly between, which the last record of each instant
            # witnesses (its ``kt`` is the instant's ``k``, the others' -1; an instant
            # without records has a tick record ``T``); the NOT kills a run as soon as it
            # waits too long. Its record types are filled in below (all of them).
            forms.append(j)
            ticks = True
        if j and negated:
            negs = _either([kind(leaf, "N") for leaf in primary.leaves])
            forms.append(N.Not(N.As(negs, f"n{j}")))
        forms.append(form)
        if el.kleene:
            mine = {v for g in el.gpms for v in plan.variables[g] if v in shared}
            for v in mine:
                if not primary.always_binds(v, plan):
                    raise _NoLowering("a + whose alternatives do not all bind a shared "
                                      "variable")
            plus_shared[j] = frozenset(mine)
            if el.loop_op == SKIP_TILL_NEXT:
                # a fit next iteration (of any alternative) shares the shared values of the
                # one before: no such instant strictly between is "the previous instant with
                # a record of the element with equal shared values is the previous
                # iteration's" (``pk``, see the engine)
                after[j] = tuple(sorted(mine))
                loop = N.Compare("=", _attr("pk"), N.Prev("k"))
                if fixed is not None:
                    # the record's copy whose interval holds the run's value of the fixed
                    # variable (its pk is the previous fit instant for such values)
                    x = _attr(f"q{w.col(fixed[1], fixed[0])}", fixed[1])
                    conds.append(N.FilterAtom(f"e{j}", N.PAnd(
                        N.POr(N.Compare(">", x, _attr("plo")),
                              N.PAnd(_is("plc", 1), N.Compare("=", x, _attr("plo")))),
                        N.POr(N.Compare("<", x, _attr("phi")),
                              N.PAnd(_is("phc", 1), N.Compare("=", x, _attr("phi")))))))
            elif el.loop_op == SKIP_TILL_ANY:
                loop = N.Compare(">", _attr("k"), N.Prev("k"))
            else:
                loop = N.Compare("=", _attr("k"), N.Arith("+", N.Prev("k"), _num(1)))
            conds.append(N.FilterAtom(f"e{j}", loop))
            for v in sorted(mine):
                i = primary.cols[v]
                conds.append(N.FilterAtom(f"e{j}", N.Compare("=", _attr(f"v{i}"),
                                                             N.Prev(f"v{i}"))))

    window_ms = math.floor(plan.window * 1000) + 1
    for j, el in enumerate(plan.elements):
        here = slots[j]
        before = [s for ss in slots[:j] for s in ss]
        if j:
            p = _attr("k", f"e{j - 1}")
            conds.append(N.FilterAtom(f"e{j}", N.Compare(">", _attr("k"), p)))
            if el.op == STRICT:  # after every iteration of a + before
                conds.append(N.FilterAtom(f"t{j}", N.Compare(">", _attr("kt"), p)))
            if el.op == SKIP_TILL_NEXT:
                conds.append(N.FilterAtom(f"n{j}", N.Compare(">", _attr("k"), p)))
        # shared variables: compatible with every earlier CEQL variable binding them
        for n, c in enumerate(here):
            others = before + here[:n]
            for v in sorted(shared):
                if not c.may_bind(v, plan):
                    continue
                i = c.cols[v]
                # slots whose records always bind v are chained (each joins the last such
                # one before it): equal by transitivity, with fewer conditions to check
                always = [s for s in others if s.always_binds(v, plan)]
                skip = {id(s) for s in always[:-1]} if c.always_binds(v, plan) else set()
                for s in others:
                    if s.may_bind(v, plan) and id(s) not in skip:
                        # two slots whose records always bind v just join on it (a hash
                        # lookup in the engine); else an unbound side is compatible
                        h = s.cols[v]
                        eq: N.Pred = N.Compare("=", _attr(f"v{i}"), _attr(f"v{h}", s.name))
                        if not (c.always_binds(v, plan) and s.always_binds(v, plan)):
                            eq = _any([_is(f"b{i}", 0), _is(f"b{h}", 0, s.name), eq])
                        conds.append(N.FilterAtom(c.name, eq))
                        if n == 0 and el.op == SKIP_TILL_NEXT and s.element < j:
                            conds.append(N.FilterAtom(f"n{j}", eq))
        # cross-GPM FILTERs
        # after ';' (or between ';'-iterations) a FILTER decides which choice is next
        entered_next = (j > 0 and el.op == SKIP_TILL_NEXT) or (
            el.kleene and el.loop_op == SKIP_TILL_NEXT)
        for g in el.gpms:
            for f in plan.filters[g]:
                try:
                    atoms = _filter_conditions(w, f, g, j, el.op, here, before, plan, vi, gi)
                except _NoLowering:
                    # the FILTER decides which choices are fit for the NOT of ';': it must be
                    # a condition of the engine; elsewhere it only accepts or refuses whole
                    # matches, which the engine can leave to SPARQL on each complete match
                    if entered_next:
                        raise
                    post.setdefault(j, []).append((g, f))
                    continue
                if entered_next:
                    exact.update(f.variables)
                    conds.extend(atoms)
                    continue
                # values the translation cannot compare (not an xsd:integer/decimal) set
                # the record's ``u``: the condition lets them by and SPARQL decides on the
                # complete match
                relaxed.setdefault(j, []).append((g, f))
                loose.update(f.variables)
                for atom in atoms:
                    reads = sorted(_qualifiers(atom.pred) - {atom.var})
                    flags = _any([_is("u", 1), *(_is("u", 1, r) for r in reads)])
                    conds.append(N.FilterAtom(atom.var, N.POr(flags, atom.pred)))
    every = _either([*(N.EventType(f"{c}{i}") for c, i in sorted(types)), N.EventType("T")])
    where: N.Formula = reduce(N.Seq, [N.Not(N.As(every, f"t{x}")) if isinstance(x, int) else x
                                      for x in forms])
    if conds:
        where = N.Filter(where, reduce(N.FilterAnd, conds))
    query = N.Query("ANY", None, ("S",), where,
                    within=N.Within("time", Fraction(window_ms, 1000)))
    return Lowered(query, None, tuple(sorted(leaves.values(), key=lambda x: x.index)), vi, gi,
                   frozenset(exact | loose), tuple(el.gpms for el in plan.elements),
                   plus_shared, after, frozenset(exact),
                   {j: tuple(fs) for j, fs in post.items()},
                   {j: tuple(fs) for j, fs in relaxed.items()}, bounds, ticks, alias)


_Region = tuple[Any, ...]
"""A FILTER as a condition on the fixed variable ``x``: ``("cmp", op, operand)`` (``x op
operand``, the operand a variable of the record, ``("var", name)``, or a number,
``("lit", value)``), ``("and" | "or", a, b)``, ``("not", a)``."""
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


def _region(e: Expr, var: str) -> _Region:
    """A FILTER as a :data:`_Region` of the fixed variable ``var``, or :class:`_NoLowering`
    (each comparison must compare ``var`` with something else)."""
    if isinstance(e, BinaryExpr) and e.op in ("&&", "||"):
        return ("and" if e.op == "&&" else "or", _region(e.left, var), _region(e.right, var))
    if isinstance(e, UnaryExpr) and e.op == "!":
        return ("not", _region(e.operand, var))
    if isinstance(e, BinaryExpr) and e.op in _FLIP:
        a, b = _operand(e.left), _operand(e.right)
        if a == ("var", var) and b != a:
            return ("cmp", e.op, b)
        if b == ("var", var) and a != b:
            return ("cmp", _FLIP[e.op], a)
    raise _NoLowering("skip-till-next between the iterations of a + whose FILTERs are not "
                      "comparisons of one variable fixed before the + with the iteration's "
                      "own variables or numbers, under && || !")


def _operands(r: _Region) -> list[tuple[str, object]]:
    if r[0] == "cmp":
        return [r[2]]
    return [x for sub in r[1:] for x in _operands(sub)]


def _fixed_fitness(el: Element, j: int, before: list[_Slot], plan: Plan,
                   shared: set[str]) -> tuple[str, str]:
    """For a ``;``-iterated ``+`` whose cross-GPM FILTERs compare its own values with one
    shared variable bound before it (worked example 8's ``A ; B+``), that variable and the
    CEQL variable that holds it; :class:`_NoLowering` otherwise.

    Whether a choice is fit for the next iteration then depends on the run only through
    that value, so each record can carry, per interval of it, the previous fit instant
    (see the engine): an exact ``pk``."""
    foreign = {v for g in el.gpms for f in plan.filters[g] for v in f.foreign}
    if len(foreign) == 1:
        var = next(iter(foreign))
        places = [s for s in before if s.may_bind(var, plan)]
        if var in shared and len(places) == 1 and not places[0].kleene \
                and not any(var in plan.variables[g] for g in el.gpms) \
                and all(operand[0] != "var" or operand[1] in plan.variables[g]
                        for g in el.gpms for f in plan.filters[g]
                        for operand in _operands(_region(f.expr, var))):
            return var, places[0].name
    raise _NoLowering("skip-till-next between the iterations of a + (';' before it, or a + "
                      "starting SEQ) whose cross-GPM FILTERs read more than one variable "
                      "bound before the + (or one bound under another +): the next fit "
                      "iteration depends on the run beyond one value, which would need a NOT "
                      "inside the iteration that reads the iteration before, which the "
                      "engine has not")


def _filter_conditions(w: _Writer, f: CrossFilter, g: str, j: int, op: str | None,
                       here: list[_Slot], before: list[_Slot], plan: Plan,
                       vi: dict[str, int], gi: dict[str, int]) -> list[N.FilterAtom]:
    """The conditions of GPM ``g``'s cross-GPM FILTER ``f`` (on its element's variable, and
    on the NOT's after a ``;``), or :class:`_NoLowering`."""
    tree = _tree(f.expr)
    if compile_numeric(f.expr) is None:
        raise _NoLowering("a FILTER uses more than comparisons under && || !")
    homes = [s for s in here if s.holds(g)]
    if len(homes) != 1:
        raise _NoLowering("a FILTER of a GPM that stands in several places of an & | group")
    home = homes[0]
    subjects = [home.name]
    if op == SKIP_TILL_NEXT and j:
        subjects.append(f"n{j}")
    out = []
    w.cols[None] = home.cols
    for subject in subjects:
        pred = _filter_pred(w, tree, f.variables, g, home, j, here, before, plan, vi)
        if not home.only(g):
            pred = N.POr(_is(f"m{gi[g]}", 0), pred)
        out.append(N.FilterAtom(subject, pred))
    return out


def _filter_pred(w: _Writer, tree: _Tree, variables: tuple[str, ...], g: str, home: _Slot,
                 j: int, here: list[_Slot], before: list[_Slot], plan: Plan,
                 vi: dict[str, int]) -> N.Pred:
    """A FILTER of GPM ``g`` (on CEQL variable ``home``) as a condition: each variable read
    from the first source that binds it — the record itself, the element's other CEQL
    variables, earlier ones — guarded by their ``b`` flags when there are several."""
    owner = plan.owner
    sources: dict[str, list[str | None]] = {}
    for v in variables:
        o = owner.get(v)
        if o is not None and o != g:  # another + GPM's iteration-local variable
            places = [s for s in [*before, *here] if s.holds(o)]
            if len(places) != 1 or not places[0].always or not places[0].only(o):
                raise _NoLowering("a FILTER reads the iterations of a + GPM that shares "
                                  "its place with other GPMs")
            if places[0].element == j:
                raise _NoLowering("a FILTER reads the iterations of another GPM of its own "
                                  "+ element")
            sources[v] = [places[0].name]
            continue
        found: list[str | None] = []
        if home.may_bind(v, plan):
            found.append(None)
        for s in [*[x for x in here if x is not home], *before]:
            if s.may_bind(v, plan):
                if not s.always:
                    raise _NoLowering("a FILTER reads a variable bound in an & alternative "
                                      "that may not be taken")
                found.append(s.name)
        sources[v] = found
    plural = [v for v in variables if len(sources[v]) > 1]
    branches: list[N.Pred] = []

    def flag(src: str | None, v: str, value: int) -> N.Pred:
        return _is(f"b{w.col(src, v)}", value, src)

    def walk(n: int, chosen: dict[str, str | bool | None], guards: list[N.Pred]) -> None:
        if n == len(plural):
            full = dict(chosen)
            for v in variables:
                if v not in full:
                    full[v] = sources[v][0] if sources[v] else False
            body = _bind(tree, full)
            if body == ("const", False) or body == ("const", None):
                return
            branches.append(_all([*guards, w.tree(body)]))
            return
        v = plural[n]
        done: list[N.Pred] = []
        for src in sources[v]:
            chosen[v] = src
            walk(n + 1, chosen, [*guards, *done, flag(src, v, 1)])
            done.append(flag(src, v, 0))
        chosen[v] = False
        walk(n + 1, chosen, [*guards, *done])
        del chosen[v]

    walk(0, {}, [])
    if not branches:
        return _NEVER
    return _any(branches)

