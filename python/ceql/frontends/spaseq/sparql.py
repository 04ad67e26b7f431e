"""Syntax-tree → SPARQL text: a GPM as the ``SELECT`` query the per-event evaluator runs
(:func:`to_sparql`), and patterns, terms and expressions on their own.

IRIs are written in full (``<…>``), so the text needs no prefixes; every binary expression is
parenthesised, so the text means exactly the tree whatever the precedence. With
``strict=False``, parsed back (as a GPM), the text gives a pattern equal to the original.

``strict=True`` (the default: the text ceql runs) writes ``=``, ``!=``, ``IN`` and ``NOT IN``
as SPARQL 1.1 defines them (§17.3 operator mapping, §17.4.1.7 ``RDFterm-equal``,
§17.4.1.9 ``IN``), without pyoxigraph's extensions: two literals compare only when both are
numbers, both ``xsd:string``, both ``xsd:boolean`` or both ``xsd:dateTime`` (by value), or
when they are the same term; two other different literals are a type error (neither equal nor
unequal), and an IRI or blank node is never equal to another term. pyoxigraph would answer
``"abc" != 2`` true; SPARQL 1.1 says error, so a FILTER on it is false. The text is
``IF(comparable, (a op b), (1 / 0))``, the division by zero being SPARQL's type error;
``x IN (a, b)`` is ``((x = a) || (x = b))`` and ``x NOT IN (a, b)`` is
``((x != a) && (x != b))`` (§17.4.1.9's definitions).
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
_XSD = "http://www.w3.org/2001/XMLSchema#"
_NUMERIC = {_XSD + t for t in (
    "integer", "decimal", "double", "float", "int", "long", "short", "byte",
    "nonNegativeInteger", "positiveInteger", "negativeInteger", "nonPositiveInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")}
# the datatypes SPARQL 1.1's operator table compares by value, besides numbers
_BY_VALUE = {_XSD + "string", _XSD + "boolean", _XSD + "dateTime"}
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


def _same_datatype(a: str, b: str, datatype: str) -> str:
    return f"(sameTerm(DATATYPE({a}), <{datatype}>) && sameTerm(DATATYPE({b}), <{datatype}>))"


def _comparable(left: N.Expr, a: str, right: N.Expr, b: str) -> str | None:
    """A SPARQL condition true when ``a = b`` raises none of ``RDFterm-equal``'s type errors
    (an error itself when ``a`` or ``b`` is one), or ``None`` when it never can."""
    if isinstance(left, (N.Iri, N.BlankNode)) or isinstance(right, (N.Iri, N.BlankNode)):
        return None  # RDFterm-equal of a non-literal: sameTerm, no error
    for const, other in ((right, a), (left, b)):
        if isinstance(const, N.Literal):
            if const.lang is not None:
                kind = f"sameTerm({other}, {term_to_sparql(const)})"
            else:
                datatype = const.datatype or _XSD + "string"
                if datatype in _NUMERIC:
                    kind = f"isNumeric({other})"
                elif datatype in _BY_VALUE:
                    kind = f"sameTerm(DATATYPE({other}), <{datatype}>)"
                else:
                    kind = f"sameTerm({other}, {term_to_sparql(const)})"
            return f"(!isLiteral({other}) || {kind})"
    kinds = " || ".join(_same_datatype(a, b, d) for d in sorted(_BY_VALUE))
    return (f"(!isLiteral({a}) || !isLiteral({b}) || sameTerm({a}, {b}) || "
            f"(isNumeric({a}) && isNumeric({b})) || {kinds})")


def _equality(op: str, left: N.Expr, right: N.Expr, strict: bool) -> str:
    a, b = expr_to_sparql(left, strict=strict), expr_to_sparql(right, strict=strict)
    plain = f"({a} {op} {b})"
    guard = _comparable(left, a, right, b) if strict else None
    return plain if guard is None else f"IF({guard}, {plain}, (1 / 0))"


def expr_to_sparql(expr: N.Expr, *, strict: bool = True) -> str:
    """A FILTER expression (without ``FILTER``), fully parenthesised; ``strict``: ``=``,
    ``!=``, ``IN``, ``NOT IN`` as SPARQL 1.1 defines them (see the module's docstring)."""
    if isinstance(expr, N.BinaryExpr):
        if expr.op in ("=", "!="):
            return _equality(expr.op, expr.left, expr.right, strict)
        return (f"({expr_to_sparql(expr.left, strict=strict)} {expr.op} "
                f"{expr_to_sparql(expr.right, strict=strict)})")
    if isinstance(expr, N.UnaryExpr):
        return f"{expr.op}({expr_to_sparql(expr.operand, strict=strict)})"
    if isinstance(expr, N.InExpr):
        if strict:
            op, join = ("!=", " && ") if expr.negated else ("=", " || ")
            if not expr.values:
                return "true" if expr.negated else "false"
            return "(" + join.join(_equality(op, expr.operand, v, strict)
                                   for v in expr.values) + ")"
        values = ", ".join(expr_to_sparql(v, strict=strict) for v in expr.values)
        word = "NOT IN" if expr.negated else "IN"
        return f"({expr_to_sparql(expr.operand, strict=strict)} {word} ({values}))"
    if isinstance(expr, N.Builtin):
        args = ", ".join(expr_to_sparql(a, strict=strict) for a in expr.args)
        return f"{expr.name}({args})"
    if isinstance(expr, N.IriCall):
        args = ", ".join(expr_to_sparql(a, strict=strict) for a in expr.args)
        return f"<{expr.iri.value}>({args})"
    return term_to_sparql(expr)


def _lines(group: N.GroupPattern, indent: str, strict: bool) -> list[str]:
    out: list[str] = []
    for el in group.elements:
        if isinstance(el, N.TriplePattern):
            out.append(f"{indent}{term_to_sparql(el.subject)} {term_to_sparql(el.predicate)} "
                       f"{term_to_sparql(el.object)} .")
        elif isinstance(el, N.FilterPattern):
            out.append(f"{indent}FILTER ({expr_to_sparql(el.expr, strict=strict)})")
        elif isinstance(el, N.OptionalPattern):
            out.append(f"{indent}OPTIONAL {pattern_to_sparql(el.group, indent, strict=strict)}")
        elif isinstance(el, N.UnionPattern):
            out.append(indent + " UNION ".join(pattern_to_sparql(g, indent, strict=strict)
                                               for g in el.groups))
        elif isinstance(el, N.GraphPattern):
            out.append(f"{indent}GRAPH {term_to_sparql(el.name)} "
                       f"{pattern_to_sparql(el.group, indent, strict=strict)}")
        else:
            out.append(indent + pattern_to_sparql(el, indent, strict=strict))
    return out


def pattern_to_sparql(group: N.GroupPattern, indent: str = "", *, strict: bool = True) -> str:
    """A group pattern ``{ … }``, one element per line (nested ones indented); ``strict``:
    as for :func:`expr_to_sparql`."""
    inner = _lines(group, indent + "  ", strict)
    if not inner:
        return "{ }"
    return "{\n" + "\n".join(inner) + f"\n{indent}}}"


def to_sparql(gpm: N.Gpm, *, strict: bool = True) -> str:
    """The SPARQL query that gives ⟦gpm⟧ over one event (docs/SPASEQ.md): ``SELECT DISTINCT``
    of the variables the GPM binds, over its pattern with the local FILTERs only (the
    cross-GPM ones are :attr:`~.nodes.Gpm.cross_filters`). Run it over the dataset whose
    default graph is the event's graph and whose named graphs are the static dataset's.
    ``strict``: as for :func:`expr_to_sparql` (``False``: the GPM's own text, which parses
    back to it)."""
    head = " ".join(f"?{v}" for v in gpm.variables) or "*"
    return f"SELECT DISTINCT {head}\nWHERE {pattern_to_sparql(gpm.pattern, strict=strict)}"
