"""A GPM's syntax tree as the basic graph pattern :mod:`ceql.rdf.fast` matches without a store
(:class:`ceql.rdf.bgp.Bgp`), built from the tree rather than found again in the SPARQL text
:func:`~ceql.frontends.spaseq.to_sparql` prints (that text stays for the store path).

It is the pattern :func:`ceql.rdf.bgp.parse_bgp` reads in that text: triple patterns of
variables and IRIs, the local FILTERs each one constraint as printed (``(expr)``, decided by
the store's expression evaluator) with the variables it reads, ``DISTINCT``, no prologue; a
GPM with anything more (OPTIONAL, UNION, GRAPH, a nested group, a literal or blank node in a
pattern, a FILTER calling a function whose value is not the same for the batch's one query as
for each event's: :data:`ceql.rdf.bgp.UNSAFE_WORDS`) has none.
"""

from __future__ import annotations

import re

from ..frontends.spaseq import (
    BinaryExpr,
    Builtin,
    Expr,
    FilterPattern,
    Gpm,
    InExpr,
    Iri,
    IriCall,
    Literal,
    TriplePattern,
    UnaryExpr,
    Var,
    expr_to_sparql,
)
from ..rdf.bgp import UNSAFE_WORDS, Bgp, Slot

__all__ = ["bgp_of"]

# an IRI the SPARQL tokenizer reads as one (IRIREF's characters)
_IRI = re.compile(r'[^<>"{}|^`\\\x00-\x20]*\Z')
_WORD = re.compile(r"[A-Za-z_]\w*")  # a word of a language tag, as the tokenizer splits it
_RESERVED = "__ceql"  # the batch rewrite's variables (ceql.rdf.sparql.EVENT_VAR)


class _NotBasic(Exception):
    """The GPM is more than a basic graph pattern the storeless path decides."""


def bgp_of(gpm: Gpm) -> Bgp | None:
    """The basic graph pattern ``gpm`` is (constants as written, to be resolved by the
    store's parser: :meth:`ceql.rdf.bgp.Bgp.resolved`), or ``None``."""
    patterns: list[tuple[Slot, Slot, Slot]] = []
    filters: list[tuple[str, tuple[str, ...]]] = []
    filter_vars: dict[str, None] = {}
    try:
        for el in gpm.pattern.elements:
            if isinstance(el, TriplePattern):
                patterns.append((_slot(el.subject), _slot(el.predicate), _slot(el.object)))
            elif isinstance(el, FilterPattern):
                names: dict[str, None] = {}
                _read(el.expr, names)
                filters.append((f"({expr_to_sparql(el.expr)})", tuple(names)))
                filter_vars.update(names)
            else:
                return None
    except _NotBasic:
        return None
    return Bgp(tuple(patterns), True, "", tuple(filters), tuple(filter_vars))


def _slot(term: object) -> Slot:
    if isinstance(term, Var):
        return Slot(term.name, f"?{term.name}")
    if isinstance(term, Iri) and _IRI.match(term.value):
        return Slot(None, f"<{term.value}>")
    raise _NotBasic


def _read(e: Expr, names: dict[str, None]) -> None:
    """The variables of ``e`` into ``names``, in the order its printed text shows them first;
    :class:`_NotBasic` for what the storeless path would not decide exactly."""
    if isinstance(e, Var):
        if e.name.startswith(_RESERVED):
            raise _NotBasic
        names[e.name] = None
    elif isinstance(e, Iri):
        if not _IRI.match(e.value):
            raise _NotBasic
    elif isinstance(e, Literal):
        if e.lang is not None and any(w.upper() in UNSAFE_WORDS for w in _WORD.findall(e.lang)):
            raise _NotBasic
        if e.datatype is not None and not _IRI.match(e.datatype):
            raise _NotBasic
    elif isinstance(e, BinaryExpr):
        _read(e.left, names)
        _read(e.right, names)
    elif isinstance(e, UnaryExpr):
        _read(e.operand, names)
    elif isinstance(e, InExpr):
        if e.values:  # ``x IN ()`` is printed ``false``: it reads nothing
            _read(e.operand, names)
            for v in e.values:
                _read(v, names)
    elif isinstance(e, Builtin):
        if e.name.upper() in UNSAFE_WORDS:
            raise _NotBasic
        for a in e.args:
            _read(a, names)
    elif isinstance(e, IriCall):
        _read(e.iri, names)
        for a in e.args:
            _read(a, names)
    else:  # a blank node, or a kind of expression this module does not know
        raise _NotBasic
