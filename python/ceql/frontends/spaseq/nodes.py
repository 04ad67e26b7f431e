"""The SPAseq syntax tree: frozen dataclasses for RDF terms, SPARQL group patterns, FILTER
expressions, the sequence expression and the whole query (docs/SPASEQ.md).

Spans (:class:`ceql.ir.nodes.Span`) take no part in equality nor in ``repr``, as in the IR, so
a pattern parsed back from :func:`~ceql.frontends.spaseq.to_sparql` equals the original.
Prefixed names are resolved: every :class:`Iri` holds a full IRI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ...ir.nodes import NO_SPAN, Span

__all__ = [
    "SKIP_TILL_ANY",
    "SKIP_TILL_NEXT",
    "STRICT",
    "XSD",
    "XSD_BOOLEAN",
    "XSD_DECIMAL",
    "XSD_DOUBLE",
    "XSD_INTEGER",
    "BinaryExpr",
    "BlankNode",
    "Builtin",
    "Conj",
    "CrossFilter",
    "Disj",
    "Expr",
    "FilterPattern",
    "Gpm",
    "GpmRef",
    "GraphPattern",
    "GroupElement",
    "GroupPattern",
    "InExpr",
    "Iri",
    "IriCall",
    "Literal",
    "OptionalPattern",
    "SeqElement",
    "SeqGroup",
    "Sequence",
    "SpaseqQuery",
    "Stream",
    "Term",
    "TriplePattern",
    "UnaryExpr",
    "UnionPattern",
    "Var",
    "Window",
    "gpm_names",
]

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_DOUBLE = XSD + "double"
XSD_BOOLEAN = XSD + "boolean"

#: The selection operators of SEQ: strict contiguity, skip-till-next, skip-till-any.
STRICT = ","
SKIP_TILL_NEXT = ";"
SKIP_TILL_ANY = ":"


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)  # type: ignore[no-any-return, unused-ignore]


# ---------------------------------------------------------------- RDF terms and variables

@dataclass(frozen=True)
class Iri:
    """An IRI, always absolute (prefixed names and relative IRIs are resolved)."""

    value: str
    span: Span = _span()


@dataclass(frozen=True)
class Literal:
    """A literal: ``lang`` for ``"x"@en``, ``datatype`` (a full IRI) for typed ones, neither
    for a simple literal (``xsd:string``). Numbers and booleans keep their lexical form."""

    lexical: str
    datatype: str | None = None
    lang: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class BlankNode:
    """A blank node of a pattern (``_:b``; ``[]`` gets a generated ``genid.N`` label): a
    variable that is neither projected nor shared with other GPMs."""

    label: str
    span: Span = _span()


@dataclass(frozen=True)
class Var:
    """A variable, without its ``?``/``$``."""

    name: str
    span: Span = _span()


Term = Iri | Literal | BlankNode


# ---------------------------------------------------------------- FILTER expressions

@dataclass(frozen=True)
class BinaryExpr:
    """``left op right``; ``op`` is one of ``|| && = != < <= > >= + - * /``."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True)
class UnaryExpr:
    """``!x``, ``+x`` or ``-x``."""

    op: str
    operand: Expr
    span: Span = _span()


@dataclass(frozen=True)
class InExpr:
    """``x IN (…)`` or, with ``negated``, ``x NOT IN (…)``."""

    operand: Expr
    values: tuple[Expr, ...]
    negated: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class Builtin:
    """A SPARQL built-in call; ``name`` in upper case (``REGEX``, ``STRLEN``, ``SAMETERM``)."""

    name: str
    args: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True)
class IriCall:
    """A function named by an IRI, e.g. the cast ``xsd:integer(?x)``."""

    iri: Iri
    args: tuple[Expr, ...]
    span: Span = _span()


Expr = Var | Iri | Literal | BinaryExpr | UnaryExpr | InExpr | Builtin | IriCall


# ---------------------------------------------------------------- SPARQL group patterns

@dataclass(frozen=True)
class TriplePattern:
    subject: Var | Term
    predicate: Var | Iri
    object: Var | Term
    span: Span = _span()


@dataclass(frozen=True)
class FilterPattern:
    expr: Expr
    span: Span = _span()


@dataclass(frozen=True)
class OptionalPattern:
    group: GroupPattern
    span: Span = _span()


@dataclass(frozen=True)
class UnionPattern:
    """``{…} UNION {…} …`` (two groups or more)."""

    groups: tuple[GroupPattern, ...]
    span: Span = _span()


@dataclass(frozen=True)
class GraphPattern:
    """``GRAPH <iri> {…}`` or ``GRAPH ?g {…}``: a pattern over the static dataset."""

    name: Iri | Var
    group: GroupPattern
    span: Span = _span()


@dataclass(frozen=True)
class GroupPattern:
    """``{ … }``: its elements in written order (``[ :p :o ]`` already expanded to triples)."""

    elements: tuple[GroupElement, ...]
    span: Span = _span()


GroupElement = (TriplePattern | FilterPattern | OptionalPattern | UnionPattern | GraphPattern
                | GroupPattern)


# ---------------------------------------------------------------- the sequence expression

@dataclass(frozen=True)
class GpmRef:
    """A GPM named in SEQ."""

    name: str
    span: Span = _span()


@dataclass(frozen=True)
class Conj:
    """``Ψ1 & Ψ2 & …``: one choice per operand, all at the same instant."""

    operands: tuple[SeqGroup, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Disj:
    """``Ψ1 | Ψ2 | …``: a choice for one operand."""

    operands: tuple[SeqGroup, ...]
    span: Span = _span()


SeqGroup = GpmRef | Conj | Disj


@dataclass(frozen=True)
class SeqElement:
    """One element of SEQ: a GPM or a ``&``/``|`` group, iterated when ``kleene`` (``+``)."""

    group: SeqGroup
    kleene: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class Sequence:
    """``SEQ(e0 op0 e1 op1 e2 …)``: ``operators[i]`` (``STRICT``, ``SKIP_TILL_NEXT`` or
    ``SKIP_TILL_ANY``) stands between ``elements[i]`` and ``elements[i + 1]``."""

    elements: tuple[SeqElement, ...]
    operators: tuple[str, ...]
    span: Span = _span()


# ---------------------------------------------------------------- the query

@dataclass(frozen=True)
class CrossFilter:
    """A FILTER of GPM ``gpm`` (or one conjunct of its ``&&``) that reads variables bound only
    by other GPMs (``foreign``): a condition of ``gpm``'s events, evaluated on the match's
    mapping. ``variables`` are all the variables it reads, in order of appearance."""

    gpm: str
    expr: Expr
    variables: tuple[str, ...]
    foreign: tuple[str, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Gpm:
    """``DEFINE GPM name ON stream { … }``.

    ``pattern`` is the group without its cross-GPM FILTERs (the local ones stay: what
    :func:`~ceql.frontends.spaseq.to_sparql` writes); ``variables`` are the variables its
    triple patterns bind, in order of first appearance; ``cross_filters`` the conditions
    that read other GPMs' variables.
    """

    name: str
    stream: str
    pattern: GroupPattern
    variables: tuple[str, ...]
    cross_filters: tuple[CrossFilter, ...] = ()
    span: Span = _span()
    name_span: Span = _span()


@dataclass(frozen=True)
class Stream:
    """``FROM STREAM name <iri>``."""

    name: str
    iri: str
    span: Span = _span()


@dataclass(frozen=True)
class Window:
    """``WITHIN …``: the window's length in seconds (sliding: a match spans at most this)."""

    seconds: Fraction
    span: Span = _span()


@dataclass(frozen=True)
class SpaseqQuery:
    """A whole SPAseq query.

    ``select`` is ``None`` for ``SELECT *``; ``prefixes`` maps each declared prefix (without
    its colon) to its IRI, in declaration order (a redeclared prefix keeps its last IRI).
    """

    select: tuple[str, ...] | None
    window: Window
    streams: tuple[Stream, ...]
    sequence: Sequence
    gpms: tuple[Gpm, ...]
    prefixes: tuple[tuple[str, str], ...] = ()
    base: str | None = None
    span: Span = _span()
    select_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)

    def gpm(self, name: str) -> Gpm:
        """The GPM called ``name`` (``KeyError`` if there is none)."""
        for g in self.gpms:
            if g.name == name:
                return g
        raise KeyError(name)

    def stream(self, name: str) -> Stream:
        """The stream this query calls ``name`` (``KeyError`` if there is none)."""
        for s in self.streams:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def cross_filters(self) -> tuple[CrossFilter, ...]:
        """Every cross-GPM FILTER, GPM by GPM in definition order."""
        return tuple(f for g in self.gpms for f in g.cross_filters)

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable some GPM binds, in order of first appearance (``SELECT *``)."""
        seen: dict[str, None] = {}
        for g in self.gpms:
            seen.update(dict.fromkeys(g.variables))
        return tuple(seen)

    @property
    def kleene_gpms(self) -> tuple[str, ...]:
        """The GPMs that stand under ``+`` in SEQ."""
        out: list[str] = []
        for element in self.sequence.elements:
            if element.kleene:
                out.extend(gpm_names(element.group))
        return tuple(out)

    def iteration_local(self, name: str) -> tuple[str, ...]:
        """The variables of GPM ``name`` that take a value per iteration: bound by no other
        GPM, with ``name`` under ``+`` (empty for a GPM not under ``+``)."""
        if name not in self.kleene_gpms:
            return ()
        others = {v for g in self.gpms if g.name != name for v in g.variables}
        return tuple(v for v in self.gpm(name).variables if v not in others)

    @property
    def shared_variables(self) -> tuple[str, ...]:
        """The variables with one value in a whole match (all but the iteration-local)."""
        local = {v for g in self.kleene_gpms for v in self.iteration_local(g)}
        return tuple(v for v in self.variables if v not in local)


def gpm_names(group: SeqGroup) -> tuple[str, ...]:
    """The GPM names of a SEQ group, left to right."""
    out: list[str] = []
    todo: list[SeqGroup] = [group]
    while todo:
        g = todo.pop()
        if isinstance(g, GpmRef):
            out.append(g.name)
        else:
            todo.extend(reversed(g.operands))
    return tuple(out)

