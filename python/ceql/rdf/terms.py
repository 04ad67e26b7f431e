"""RDF terms ↔ plain Python values.

**Out** (a GPM's mapping, :func:`to_value`): the values ceql's conditions compare
(:mod:`ceql.predicates`' value model).

=====================================================  ========================================
RDF term                                               Python value
=====================================================  ========================================
IRI ``<http://ex/a>``                                  ``"http://ex/a"`` (no angle brackets)
blank node ``_:b1``                                    ``"_:"`` and an id of the node, fresh
                                                       for each event read (not ``b1``)
``xsd:integer`` and its derived types (``int``,        ``int``
``long``, ``nonNegativeInteger``, …)
``xsd:decimal``                                        ``int`` without fractional digits
                                                       (``"2"``), else ``float`` (``"2.50"``) —
                                                       ceql's rule for ``Decimal``
``xsd:double``, ``xsd:float``                          ``float`` (``INF``, ``NaN`` included)
``xsd:boolean``                                        ``bool``
``xsd:dateTime``, ``xsd:dateTimeStamp``                ``datetime`` (aware with a timezone,
                                                       naive without)
``xsd:date``                                           ``date`` (a timezone is dropped)
``xsd:time``                                           ``time``
``xsd:dayTimeDuration``, ``xsd:duration`` without      ``timedelta``
years or months
``xsd:string``, language-tagged strings, any other     ``str``: the lexical form (the language
datatype, and ill-typed literals (``"x"^^xsd:int``)    tag is dropped)
RDF-star triple terms                                  ``str``: ``s p o`` in N-Triples
=====================================================  ========================================

So values are what FILTERs compare (SPARQL compares literals by value), not RDF terms: an IRI
and a string literal with the same text, or ``"5"^^xsd:integer`` and ``"05"^^xsd:int``, give
equal values. Where terms must be told apart — joins of shared variables are ``sameTerm`` in
SPAseq (``docs/SPASEQ.md``) — use :func:`term_text`, the term's N-Triples text, one string per
term (``GpmEvaluator(..., terms=True)`` gives mappings of those), and :func:`term_value` to get
the value back from it. Terms are kept exactly as written: pyoxigraph's store would keep
literals of XSD's numeric, boolean and date/time types in canonical form (``"05"^^xsd:int``
as ``"5"^^xsd:integer``), and :mod:`ceql.rdf.exact` works around it, so ``"05"^^xsd:int``
and ``"5"^^xsd:integer`` are two terms, as for SPARQL's ``sameTerm``; language tags come
back in lower case.

Blank nodes are scoped to their event: each reading of an event gives its blank nodes fresh
ids (:func:`ceql.rdf.read_event`), so two events' ``_:b1`` never compare equal, and the GPMs
of one event see the same ids.

**In** (the triples of an event given as Python values, :func:`subject_term`,
:func:`predicate_term`, :func:`object_term`):

* subject and predicate: ``"<http://ex/a>"``, a plain IRI ``"http://ex/a"``, a blank node
  ``"_:b1"`` (subjects only), or a pyoxigraph term;
* object: ``"<http://ex/a>"``, ``"_:b1"``, a literal in N-Triples syntax (``'"3"'``,
  ``'"3"^^<http://www.w3.org/2001/XMLSchema#integer>'``, ``'"chat"@fr'``), a pyoxigraph term,
  or a Python value: any other ``str`` is a string literal (not an IRI: write ``"<…>"``),
  ``bool`` → ``xsd:boolean``, ``int`` → ``xsd:integer``, ``float`` → ``xsd:double``,
  ``Decimal`` → ``xsd:decimal``, ``datetime`` → ``xsd:dateTime``, ``date`` → ``xsd:date``,
  ``time`` → ``xsd:time``, ``timedelta`` → ``xsd:dayTimeDuration``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable
from typing import TypeAlias

import pyoxigraph as ox

__all__ = [
    "XSD",
    "Object",
    "Subject",
    "Term",
    "Value",
    "literal_value",
    "object_term",
    "predicate_term",
    "subject_term",
    "term_text",
    "term_value",
    "to_value",
]

XSD = "http://www.w3.org/2001/XMLSchema#"

Value: TypeAlias = str | int | float | bool | dt.datetime | dt.date | dt.time | dt.timedelta
Subject: TypeAlias = ox.NamedNode | ox.BlankNode | ox.Triple
Object: TypeAlias = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
Term: TypeAlias = Object

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")
_DOUBLE = re.compile(r"(?:[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|INF)|NaN)\Z")
_DATE = re.compile(r"(-?[0-9]{4,}-[0-9]{2}-[0-9]{2})(?:Z|[+-][0-9]{2}:[0-9]{2})?\Z")
_DURATION = re.compile(
    r"(-?)P(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?\Z")


def _integer(lex: str) -> Value:
    return int(lex) if _INTEGER.match(lex) else lex


def _decimal(lex: str) -> Value:
    # ceql's rule for Decimal (int without fractional digits, else float), on the text
    if not _DECIMAL.match(lex):
        return lex
    whole, _, fraction = lex.partition(".")
    return float(lex) if fraction else int(whole)


def _double(lex: str) -> Value:
    return float(lex) if _DOUBLE.match(lex) else lex


def _boolean(lex: str) -> Value:
    if lex in ("true", "1"):
        return True
    if lex in ("false", "0"):
        return False
    return lex


def _datetime(lex: str) -> Value:
    try:
        return dt.datetime.fromisoformat(lex)
    except ValueError:
        return lex


def _date(lex: str) -> Value:
    m = _DATE.match(lex)
    if m is None:
        return lex
    try:
        return dt.date.fromisoformat(m.group(1))
    except ValueError:
        return lex


def _time(lex: str) -> Value:
    try:
        return dt.time.fromisoformat(lex)
    except ValueError:
        return lex


def _duration(lex: str) -> Value:
    m = _DURATION.match(lex)
    if m is None or lex.endswith(("P", "T")):
        return lex
    sign, days, hours, minutes, seconds = m.groups()
    delta = dt.timedelta(days=int(days or 0), hours=int(hours or 0),
                         minutes=int(minutes or 0), seconds=float(seconds or 0))
    return -delta if sign else delta


_INTEGER_TYPES = ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                  "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedLong",
                  "unsignedInt", "unsignedShort", "unsignedByte")

_CONVERTERS: dict[str, Callable[[str], Value]] = {
    **{XSD + name: _integer for name in _INTEGER_TYPES},
    XSD + "decimal": _decimal,
    XSD + "double": _double,
    XSD + "float": _double,
    XSD + "boolean": _boolean,
    XSD + "dateTime": _datetime,
    XSD + "dateTimeStamp": _datetime,
    XSD + "date": _date,
    XSD + "time": _time,
    XSD + "dayTimeDuration": _duration,
    XSD + "duration": _duration,
}


def literal_value(lexical: str, datatype: str) -> Value:
    """The plain Python value of the literal ``"lexical"^^<datatype>`` (see the module's
    table)."""
    convert = _CONVERTERS.get(datatype)
    return lexical if convert is None else convert(lexical)


def to_value(term: Term) -> Value:
    """The plain Python value of an RDF term (see the module's table)."""
    if isinstance(term, ox.Literal):
        return literal_value(term.value, term.datatype.value)
    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.BlankNode):
        return "_:" + term.value
    return str(term)


def term_text(term: Term) -> str:
    """The term's N-Triples text (``<http://ex/a>``, ``"5"^^<…#integer>``, ``"x"@en``,
    ``_:id``): equal texts are the same term (SPARQL's ``sameTerm``)."""
    return str(term)


def term_value(text: str) -> Value:
    """The value (:func:`to_value`) of a term given by its N-Triples text."""
    return to_value(object_term(text if text.startswith(("<", "_:", '"')) else f"<{text}>"))


# ---------------------------------------------------------------- Python values → terms

_LITERAL = re.compile(
    r'"((?:[^"\\\n\r]|\\.)*)"(?:@([a-zA-Z]+(?:-[a-zA-Z0-9]+)*)|\^\^<([^<>"{}|^`\\\s]*)>)?\Z')
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.DOTALL)
_ECHARS = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'",
           "\\": "\\"}


def _unescape(m: re.Match[str]) -> str:
    code = m.group(1) or m.group(2)
    if code:
        return chr(int(code, 16))
    char = m.group(3)
    if char not in _ECHARS:
        raise ValueError(f"unknown escape \\{char}")
    return _ECHARS[char]


def _iri(text: str) -> ox.NamedNode:
    inner = text[1:-1] if text.startswith("<") and text.endswith(">") else text
    try:
        return ox.NamedNode(inner)
    except ValueError as e:
        raise ValueError(f"{text!r} is not an IRI ({e})") from None


def _blank(text: str) -> ox.BlankNode:
    try:
        return ox.BlankNode(text[2:])
    except ValueError:
        raise ValueError(f"{text!r} is not a blank node label") from None


def subject_term(value: object) -> Subject:
    """A triple's subject from ``"<iri>"``, a plain IRI, ``"_:label"`` or a pyoxigraph term."""
    if isinstance(value, (ox.NamedNode, ox.BlankNode, ox.Triple)):
        return value
    if isinstance(value, str):
        return _blank(value) if value.startswith("_:") else _iri(value)
    raise ValueError(f"a subject must be an IRI or a blank node, not {value!r}")


def predicate_term(value: object) -> ox.NamedNode:
    """A triple's predicate from ``"<iri>"``, a plain IRI or a pyoxigraph ``NamedNode``."""
    if isinstance(value, ox.NamedNode):
        return value
    if isinstance(value, str) and not value.startswith("_:"):
        return _iri(value)
    raise ValueError(f"a predicate must be an IRI, not {value!r}")


def _literal(text: str) -> ox.Literal:
    m = _LITERAL.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not an N-Triples literal")
    lex = _ESCAPE.sub(_unescape, m.group(1))
    if m.group(2):
        return ox.Literal(lex, language=m.group(2))
    if m.group(3) is not None:
        return ox.Literal(lex, datatype=_iri(m.group(3)))
    return ox.Literal(lex)


def _typed(lex: str, name: str) -> ox.Literal:
    return ox.Literal(lex, datatype=ox.NamedNode(XSD + name))


def _duration_text(delta: dt.timedelta) -> str:
    sign = "-" if delta < dt.timedelta(0) else ""
    delta = abs(delta)
    seconds = delta.seconds + delta.microseconds / 1_000_000
    secs = f"{seconds:.6f}".rstrip("0").rstrip(".")
    days = f"{delta.days}D" if delta.days else ""
    time = f"T{secs}S" if seconds or not days else ""
    return f"{sign}P{days}{time}"


def object_term(value: object) -> Object:
    """A triple's object from a term's text, a pyoxigraph term or a Python value (see the
    module's docstring)."""
    if isinstance(value, (ox.NamedNode, ox.BlankNode, ox.Literal, ox.Triple)):
        return value
    if isinstance(value, str):
        if value.startswith("<") and value.endswith(">"):
            return _iri(value)
        if value.startswith("_:"):
            return _blank(value)
        if value.startswith('"'):
            return _literal(value)
        return ox.Literal(value)
    if isinstance(value, (bool, int, float)):
        return ox.Literal(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"{value!r} has no xsd:decimal form")
        return _typed(format(value, "f"), "decimal")
    if isinstance(value, dt.datetime):
        return _typed(value.isoformat(), "dateTime")
    if isinstance(value, dt.date):
        return _typed(value.isoformat(), "date")
    if isinstance(value, dt.time):
        return _typed(value.isoformat(), "time")
    if isinstance(value, dt.timedelta):
        return _typed(_duration_text(value), "dayTimeDuration")
    raise ValueError(f"{value!r} ({type(value).__name__}) cannot be an RDF object")
