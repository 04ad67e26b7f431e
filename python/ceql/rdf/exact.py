"""Exact RDF terms through pyoxigraph's store.

pyoxigraph's store keeps literals of XSD's numeric, boolean and date/time types by value
(oxigraph issue 526: there is no option to keep them as written): ``"05"^^xsd:integer`` and
``"+5"^^xsd:integer`` are stored as ``"5"^^xsd:integer``, ``"5"^^xsd:int`` as
``"5"^^xsd:integer``, ``"1.0"^^xsd:decimal`` as ``"1"``; a graph holding two of them holds
one triple, and its joins find them equal. RDF and SPARQL compare terms exactly (lexical
form and datatype; language tags in lower case, as RDF 1.1 allows), and so must ceql
(``docs/SPASEQ.md``, "Data model").

So every literal the store would change is stored as a **stand-in**: the same lexical form
with the datatype ``<urn:ceql:exact:DATATYPE>`` (a datatype the store keeps as written), a
term of its own, equal to no other. Triple patterns and joins then compare exact terms, and
the mappings give the original back (:meth:`ExactTerms.original`). A FILTER compares values:
in a query run on a store holding stand-ins, each variable inside a FILTER is read through
the custom function :data:`ORIGINAL_FN`, which gives the original literal
(:func:`filters_on_originals`). Literals the store keeps as they are (canonical forms, strings,
other datatypes) are stored as they are: data written in canonical form costs nothing more.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias

import pyoxigraph as ox

from ceql.rdf.sparql import Token, tokenize

__all__ = ["ORIGINAL_FN", "STAND_IN", "ExactTerms", "constants_as_stand_ins",
           "filters_on_originals"]

STAND_IN = "urn:ceql:exact:"
"""The prefix of a stand-in's datatype (followed by the original datatype IRI)."""

ORIGINAL_FN = "urn:ceql:exact"
"""The custom function a rewritten FILTER reads each variable through."""

Term: TypeAlias = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
_Function: TypeAlias = Callable[..., Term | None]
_XSD = "http://www.w3.org/2001/XMLSchema#"
_OBJECT = operator.attrgetter("object")
# lexical forms the store keeps as they are, decided without it (the tests check them): a
# canonical xsd:integer within 64 bits, a canonical xsd:decimal within 18 + 18 digits
_INTEGER = re.compile(r"(?:0|-?[1-9][0-9]{0,17})\Z")
_DECIMAL = re.compile(r"(?:0|-?[1-9][0-9]{0,16})(?:\.[0-9]{0,16}[1-9])?\Z"
                      r"|-0\.[0-9]{0,16}[1-9]\Z")
_PLAIN = {_XSD + "string": None, _XSD + "integer": _INTEGER, _XSD + "decimal": _DECIMAL}
# bare numbers in RDF text (after a space or a separator: not inside a name or an IRI; one
# inside a string only makes the text parsed)
_BARE = re.compile(r"[\s,;(\[>]([+-]?\.?[0-9][0-9.eE+-]*)")
_KEY = "urn:ceql:k"
# SPARQL's numeric literals (doubles first: their mantissa is a decimal's or an integer's)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*[eE][+-]?[0-9]+|\.?[0-9]+[eE][+-]?[0-9]+"
                     r"|[0-9]*\.[0-9]+|[0-9]+)")
_LIMIT = 200_000  # literals remembered before the memory is cleared


def _kept(literal: ox.Literal) -> bool:
    """Whether the store surely keeps ``literal`` as it is, without asking it: a string, a
    literal of a datatype outside XSD, a canonical integer or decimal, ``true``, ``false``."""
    return _kept_parts(literal.value, literal.datatype.value)


def _kept_parts(lexical: str, datatype: str) -> bool:
    if not datatype.startswith(_XSD):
        return True
    if datatype in _PLAIN:
        form = _PLAIN[datatype]
        return form is None or form.match(lexical) is not None
    return datatype == _XSD + "boolean" and lexical in ("true", "false")


class ExactTerms:
    """Stand-ins for the literals the store would change (see the module's docstring);
    remembers each literal's verdict. Not thread-safe."""

    def __init__(self) -> None:
        self._stand_in: dict[ox.Literal, ox.Literal | None] = {}
        self._scratch = ox.Store()
        self._functions: dict[ox.NamedNode, _Function] = {
            ox.NamedNode(ORIGINAL_FN): self.original}

    @property
    def functions(self) -> dict[ox.NamedNode, _Function]:
        """The custom functions a rewritten query needs (``custom_functions=``)."""
        return self._functions

    def _learn(self, literals: Iterable[ox.Literal]) -> None:
        known = self._stand_in
        if len(known) > _LIMIT:
            known.clear()
        new = []
        for lit in literals:
            if _kept(lit):
                known[lit] = None
            else:
                new.append(lit)
        if not new:
            return
        store = self._scratch
        p = ox.NamedNode(_KEY)
        store.extend([ox.Quad(ox.NamedNode(f"{_KEY}{i}"), p, lit) for i, lit in enumerate(new)])
        kept: dict[str, Term] = {q.subject.value: q.object  # type: ignore[union-attr]
                                 for q in store.quads_for_pattern(None, None, None)}
        store.clear()
        for i, lit in enumerate(new):
            known[lit] = None if kept.get(f"{_KEY}{i}") == lit else ox.Literal(
                lit.value, datatype=ox.NamedNode(STAND_IN + lit.datatype.value))

    def stand_in(self, literal: ox.Literal) -> ox.Literal | None:
        """The stand-in of ``literal``, or ``None`` when the store keeps it as it is."""
        if literal not in self._stand_in:
            self._learn([literal])
        return self._stand_in.get(literal)

    def keeps_text(self, text: str | bytes) -> bool:
        """Whether the store surely keeps every literal of this RDF text as written, seen on
        the text alone: each typed literal written in full (``"lex"^^<datatype>``) is one
        :func:`_kept` takes, and each bare number a canonical integer. ``False`` means: parse
        it and see (:meth:`changes`)."""
        if isinstance(text, bytes):
            return False
        if "^^" in text:
            parts = text.split('"^^<')  # string operations: cheaper than a regex here
            if len(parts) - 1 != text.count("^^"):
                return False  # a datatype by a prefixed name
            for k in range(1, len(parts)):  # parts: '…"lexical', 'datatype> …', …
                before = parts[k - 1]
                start = before.rfind('"')
                lexical = before[start + 1:]
                if (start < 1 or before[start - 1] == "\\" or "\\" in lexical
                        or not _kept_parts(lexical, parts[k][:parts[k].find(">")])):
                    return False
        return all(_INTEGER.match(n) for n in _BARE.findall(text))

    def changes(self, quads: Sequence[ox.Quad]) -> bool:
        """Whether the store would change a literal of ``quads`` (each new literal is
        checked once: a regular expression for canonical integers and decimals, else a
        scratch store)."""
        known = self._stand_in
        literals = [o for o in map(_OBJECT, quads) if type(o) is ox.Literal]
        new = [o for o in literals if o not in known]
        if new:
            self._learn(new)
        get = known.get
        return any(get(o) is not None for o in literals)

    def with_stand_ins(self, quads: Iterable[ox.Quad],
                       graph: ox.BlankNode | ox.NamedNode | None = None) -> list[ox.Quad]:
        """``quads`` as the store must hold them (after :meth:`changes` learnt their
        literals), in ``graph`` when given."""
        get = self._stand_in.get
        out = []
        for q in quads:
            o = q.object
            if type(o) is ox.Literal:
                o = get(o) or o
            out.append(ox.Quad(q.subject, q.predicate, o, q.graph_name if graph is None
                               else graph))
        return out

    def quads(self, quads: Iterable[ox.Quad]) -> tuple[list[ox.Quad], bool]:
        """``quads`` as the store must hold them, and whether any stand-in was needed."""
        quads = list(quads)
        if not self.changes(quads):
            return quads, False
        return self.with_stand_ins(quads), True

    @staticmethod
    def original(term: Term) -> Term:
        """The term a stand-in stands for (any other term as it is)."""
        if type(term) is ox.Literal and term.datatype.value.startswith(STAND_IN):
            return ox.Literal(term.value,
                              datatype=ox.NamedNode(term.datatype.value[len(STAND_IN):]))
        return term


def _extent(tokens: list[Token], k: int) -> int:
    """The index after the expression that starts at ``tokens[k]``: a bracketed expression,
    or a function call (a name, then its bracketed arguments)."""
    if tokens[k].text != "(":
        k += 1
        if k >= len(tokens) or tokens[k].text != "(":
            return k
    depth = 0
    for j in range(k, len(tokens)):
        depth += (tokens[j].text == "(") - (tokens[j].text == ")")
        if depth == 0:
            return j + 1
    return len(tokens)


def filters_on_originals(query: str) -> str:
    """``query`` with each variable inside a FILTER read through :data:`ORIGINAL_FN`
    (``?x`` → ``<urn:ceql:exact>(?x)``), except the argument of ``BOUND`` and variables in
    a graph pattern inside the FILTER (``EXISTS { … }``)."""
    tokens = tokenize(query)
    parts: list[str] = []
    at = 0
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if t.kind != "word" or t.text.upper() != "FILTER" or k + 1 == len(tokens):
            k += 1
            continue
        end = _extent(tokens, k + 1)
        braces = 0
        for j in range(k + 1, end):
            u = tokens[j]
            braces += (u.text == "{") - (u.text == "}")
            if (u.kind != "var" or braces
                    or (j >= 2 and tokens[j - 1].text == "("
                        and tokens[j - 2].text.upper() == "BOUND")):
                continue
            parts += [query[at:u.start], f"<{ORIGINAL_FN}>({u.text})"]
            at = u.end
        k = end
    parts.append(query[at:])
    return "".join(parts)


def constants_as_stand_ins(query: str, exact: ExactTerms, prefixes: Mapping[str, str] | None,
                           base_iri: str | None) -> str:
    """``query`` with each literal constant of its graph patterns that the store would change
    (``"05"^^xsd:integer``, ``05``, ``"5"^^xsd:int``) written as its stand-in, so that it
    matches that term exactly, as in the data (the query parser would read it in canonical
    form, and match the canonical term instead). A constant inside brackets (FILTER, BIND,
    function calls, VALUES rows) is an expression's value, not a pattern's term: left as it
    is. Datatypes given by prefixed names are read with the query's prologue and
    ``prefixes``."""
    tokens = tokenize(query)
    select = next((i for i, t in enumerate(tokens)
                   if t.kind == "word" and t.text.upper() == "SELECT"), None)
    if select is None:
        return query
    prologue = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in (prefixes or {}).items())
    prologue += query[:tokens[select].start]
    parts: list[str] = []
    at = 0
    braces = parens = 0
    k = select
    while k < len(tokens):
        t = tokens[k]
        braces += (t.text == "{") - (t.text == "}")
        parens += (t.text == "(") - (t.text == ")")
        end = k + 1
        text = ""
        if braces and not parens:
            if t.kind == "string" and k + 3 < len(tokens) and tokens[k + 1].text == "^" \
                    and tokens[k + 2].text == "^" and tokens[k + 3].kind in ("iri", "pname"):
                end = k + 4
                text = query[t.start:tokens[k + 3].end]
            elif t.kind == "other" and (t.text.isdigit() or t.text in "+-."):
                m = _NUMBER.match(query, t.start)
                if m is not None:
                    while end < len(tokens) and tokens[end].start < m.end():
                        end += 1
                    text = m.group()
        if text:
            stand_in = _stand_in_of(text, prologue, base_iri, exact)
            if stand_in is not None:
                parts += [query[at:t.start], str(stand_in)]
                at = tokens[end - 1].end
        k = end
    parts.append(query[at:])
    return "".join(parts)


def _stand_in_of(text: str, prologue: str, base_iri: str | None, exact: ExactTerms
                 ) -> ox.Literal | None:
    try:
        (quad,) = ox.parse(f"{prologue}\n<{_KEY}> <{_KEY}> {text} .", ox.RdfFormat.TURTLE,
                           base_iri=base_iri)
    except (SyntaxError, ValueError):
        return None  # the query's parser reports it
    literal = quad.object
    return exact.stand_in(literal) if isinstance(literal, ox.Literal) else None
