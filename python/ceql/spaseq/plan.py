"""A SPAseq query lowered to what the run evaluator steps through (docs/SPASEQ.md, "How
SPAseq maps onto ceql's engine").

The sequence expression becomes a list of :class:`Element` s — each a ``&``/``|`` group of
GPMs, iterated or not — with the selection operator that leads into it (``ops[j]``, between
element ``j - 1`` and ``j``) and, for a ``+`` element, the operator between its iterations
(the one written before it; ``;`` when it starts ``SEQ``). A group is lowered to its
*alternatives*: each is a tuple of GPMs that all take an event of one instant (the
disjunctive normal form of ``&`` over ``|``), so ``(A | B) & C`` is ``(A, C)`` or ``(B, C)``.
Variables are split into shared ones (one value per match: equalities between events) and
iteration-local ones (one value per iteration of their ``+`` GPM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product

from ..frontends.spaseq import (
    SKIP_TILL_NEXT,
    Conj,
    CrossFilter,
    GpmRef,
    GraphPattern,
    GroupPattern,
    SeqGroup,
    SpaseqQuery,
    TriplePattern,
    UnionPattern,
    Var,
    gpm_names,
    to_sparql,
)
from ..rdf.bgp import Bgp
from .bgps import bgp_of
from .events import MICROS

__all__ = ["Element", "Plan", "alternatives", "certain_variables", "lower"]


@dataclass(frozen=True)
class Element:
    """One element of ``SEQ``: ``alternatives`` (tuples of GPM names, one event of one
    instant each), ``gpms`` (every GPM of the group), ``kleene``, ``op`` (the operator that
    leads into it, ``None`` for the first) and ``loop_op`` (between its iterations)."""

    alternatives: tuple[tuple[str, ...], ...]
    gpms: tuple[str, ...]
    kleene: bool
    op: str | None
    loop_op: str


@dataclass(frozen=True)
class Plan:
    """What evaluating a query needs, computed once.

    ``sparql``: GPM → the SELECT text of one event (``to_sparql``); ``streams``: GPM → the
    IRI of its stream; ``local``: GPM → its iteration-local variables; ``filters``: GPM →
    its cross-GPM FILTERs; ``select``: the projected variables; ``variables``: GPM → the
    variables it binds.
    """

    elements: tuple[Element, ...]
    sparql: dict[str, str]
    streams: dict[str, str]
    local: dict[str, frozenset[str]]
    filters: dict[str, tuple[CrossFilter, ...]]
    select: tuple[str, ...]
    window: Fraction
    variables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    certain: dict[str, frozenset[str]] = field(default_factory=dict)
    """GPM → the variables every mapping of it binds (:func:`certain_variables`)."""
    patterns: dict[str, Bgp | None] = field(default_factory=dict)
    """GPM → its basic graph pattern, built from its syntax tree (:func:`.bgps.bgp_of`),
    ``None`` when it is more: what the storeless path matches, where ``sparql`` is the
    store's."""

    @property
    def span(self) -> int | Fraction:
        """The window in microseconds, the unit of time keys (:func:`.events.time_key`)."""
        span = self.window * MICROS
        return span.numerator if span.denominator == 1 else span

    @property
    def owner(self) -> dict[str, str]:
        """Iteration-local variable → the GPM that binds it."""
        return {v: g for g, vs in self.local.items() for v in vs}


def alternatives(group: SeqGroup) -> tuple[tuple[str, ...], ...]:
    """The group as a disjunction of conjunctions of GPM names (``&`` distributes over
    ``|``); each conjunction lists its GPMs left to right."""
    if isinstance(group, GpmRef):
        return ((group.name,),)
    parts = [alternatives(g) for g in group.operands]
    if isinstance(group, Conj):
        return tuple(tuple(n for alt in combo for n in alt) for combo in product(*parts))
    return tuple(alt for p in parts for alt in p)


def certain_variables(group: GroupPattern) -> frozenset[str]:
    """The variables every solution of ``group`` binds: those of its triple patterns and
    ``GRAPH ?g`` outside ``OPTIONAL``, and those every branch of a ``UNION`` binds."""
    out: set[str] = set()
    for el in group.elements:
        if isinstance(el, TriplePattern):
            out.update(t.name for t in (el.subject, el.predicate, el.object)
                       if isinstance(t, Var))
        elif isinstance(el, GroupPattern):
            out |= certain_variables(el)
        elif isinstance(el, GraphPattern):
            out |= certain_variables(el.group)
            if isinstance(el.name, Var):
                out.add(el.name.name)
        elif isinstance(el, UnionPattern):
            out |= frozenset.intersection(*(certain_variables(g) for g in el.groups))
    return frozenset(out)


def lower(query: SpaseqQuery) -> Plan:
    """The plan of a parsed, checked query."""
    seq = query.sequence
    elements = []
    for j, el in enumerate(seq.elements):
        op = seq.operators[j - 1] if j else None
        elements.append(Element(alternatives(el.group), gpm_names(el.group), el.kleene, op,
                                op if op is not None else SKIP_TILL_NEXT))
    iris = {s.name: s.iri for s in query.streams}
    return Plan(
        elements=tuple(elements),
        sparql={g.name: to_sparql(g) for g in query.gpms},
        streams={g.name: iris[g.stream] for g in query.gpms},
        local={g.name: frozenset(query.iteration_local(g.name)) for g in query.gpms},
        filters={g.name: g.cross_filters for g in query.gpms},
        select=query.select if query.select is not None else query.variables,
        window=query.window.seconds,
        variables={g.name: g.variables for g in query.gpms},
        certain={g.name: certain_variables(g.pattern) for g in query.gpms},
        patterns={g.name: bgp_of(g) for g in query.gpms},
    )
