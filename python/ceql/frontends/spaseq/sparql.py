"""Syntax-tree → SPARQL text: a GPM as the ``SELECT`` query the per-event evaluator runs
(:func:`to_sparql`), and patterns, terms and expressions on their own.

IRIs are written in full (``<…>``), so the text needs no prefixes; every binary expression is
parenthesised, so the text means exactly the tree whatever the precedence. Parsed back (as a
GPM), the text gives a pattern equal to the original.
"""

from __future__ import annotations

import re

from . import nodes as N

__all__ = ["expr_to_sparql", "pattern_to_sparql", "term_to_sparql", "to_sparql"]

_BARE = {
    N.XSD_INTEGER: re.compile(r"[+-]?[0-9]+"),
    N.XSD_DECIMAL: re.compile(r"[+-]?[0-9]*\.[0-9]+"),
    N.XSD_DOUBLE: re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+"),
    N.XSD_BOOLEAN: re.compile(r"true|false"),
}
_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t",
                   "\b": "\\b", "\f": "\\f"}


def _string(text: str) -> str:
    return '"' + "".join(_STRING_ESCAPES.get(c, c) for c in text) + '"'


def term_to_sparql(term: N.Var | N.Term) -> str:
    """One term: ``?x``, ``<iri>``, ``_:b``, ``"x"@en``, ``"x"^^<dt>``, ``5``, ``true``."""
    if isinstance(term, N.Var):
        return f"?{term.name}"
    if isinstance(term, N.Iri):
        return f"<{term.value}>"
    if isinstance(term, N.BlankNode):
        return f"_:{term.label}"
    if term.lang is not None:
        return f"{_string(term.lexical)}@{term.lang}"
    if term.datatype is None:
        return _string(term.lexical)
    bare = _BARE.get(term.datatype)
    if bare is not None and bare.fullmatch(term.lexical):
        return term.lexical
    return f"{_string(term.lexical)}^^<{term.datatype}>"


def expr_to_sparql(expr: N.Expr) -> str:
    """A FILTER expression (without ``FILTER``), fully parenthesised."""
    if isinstance(expr, N.BinaryExpr):
        return f"({expr_to_sparql(expr.left)} {expr.op} {expr_to_sparql(expr.right)})"
    if isinstance(expr, N.UnaryExpr):
        return f"{expr.op}({expr_to_sparql(expr.operand)})"
    if isinstance(expr, N.InExpr):
        values = ", ".join(expr_to_sparql(v) for v in expr.values)
        word = "NOT IN" if expr.negated else "IN"
        return f"({expr_to_sparql(expr.operand)} {word} ({values}))"
    if isinstance(expr, N.Builtin):
        return f"{expr.name}({', '.join(expr_to_sparql(a) for a in expr.args)})"
    if isinstance(expr, N.IriCall):
        return f"<{expr.iri.value}>({', '.join(expr_to_sparql(a) for a in expr.args)})"
    return term_to_sparql(expr)


def _lines(group: N.GroupPattern, indent: str) -> list[str]:
    out: list[str] = []
    for el in group.elements:
        if isinstance(el, N.TriplePattern):
            out.append(f"{indent}{term_to_sparql(el.subject)} {term_to_sparql(el.predicate)} "
                       f"{term_to_sparql(el.object)} .")
        elif isinstance(el, N.FilterPattern):
            out.append(f"{indent}FILTER ({expr_to_sparql(el.expr)})")
        elif isinstance(el, N.OptionalPattern):
            out.append(f"{indent}OPTIONAL {pattern_to_sparql(el.group, indent)}")
        elif isinstance(el, N.UnionPattern):
            out.append(indent + " UNION ".join(pattern_to_sparql(g, indent) for g in el.groups))
        elif isinstance(el, N.GraphPattern):
            out.append(f"{indent}GRAPH {term_to_sparql(el.name)} "
                       f"{pattern_to_sparql(el.group, indent)}")
        else:
            out.append(indent + pattern_to_sparql(el, indent))
    return out


def pattern_to_sparql(group: N.GroupPattern, indent: str = "") -> str:
    """A group pattern ``{ … }``, one element per line (nested ones indented)."""
    inner = _lines(group, indent + "  ")
    if not inner:
        return "{ }"
    return "{\n" + "\n".join(inner) + f"\n{indent}}}"


def to_sparql(gpm: N.Gpm) -> str:
    """The SPARQL query that gives ⟦gpm⟧ over one event (docs/SPASEQ.md): ``SELECT DISTINCT``
    of the variables the GPM binds, over its pattern with the local FILTERs only (the
    cross-GPM ones are :attr:`~.nodes.Gpm.cross_filters`). Run it over the dataset whose
    default graph is the event's graph and whose named graphs are the static dataset's."""
    head = " ".join(f"?{v}" for v in gpm.variables) or "*"
    return f"SELECT DISTINCT {head}\nWHERE {pattern_to_sparql(gpm.pattern)}"
